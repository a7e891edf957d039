/*
 * ei_config.h — the config.h that ei's own sources want, for building them
 * with the sanitizers in the fuzz build (Makefile, fuzz targets): Debian's
 * erlang-dev ships ei's sources but not the config.h of its build. These
 * are the answers for Linux on x86_64 and aarch64.
 */
#define HAVE_SOCKLEN_T 1
#define HAVE_UNISTD_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STRING_H 1
#define SIZEOF_LONG 8
#define SIZEOF_LONG_LONG 8
#define SIZEOF_VOID_P 8
#define HAVE_ISFINITE 1
/* OTP's build defines this on 64-bit targets: ei_decode_long and friends
 * are then the 64-bit decoders, as in the installed libei. Without it the
 * sanitized ei would refuse integers the real one reads. */
#define EI_64BIT 1
