/*
 * dist_ctl.h — the control tuples of the packets the node sends for almost
 * every message, SEND {2, '', ToPid} and REG_SEND {6, FromPid, '', ToName},
 * and of a call's reply to an alias, ALIAS_SEND {33, FromPid, Alias},
 * written byte by byte into a caller's fixed-size buffer.
 *
 * ei_x_encode_* sizes every term in one pass and writes it in a second, and
 * may grow the buffer in between; these control tuples are short and have a
 * known bound, so one pass into a stack buffer does. The bytes are exactly
 * those the ei_x_encode_* calls wrote (the unit tests compare them):
 *
 *   131, SMALL_TUPLE_EXT, SMALL_INTEGER_EXT Op, ...
 *   ''      SMALL_ATOM_UTF8_EXT of length 0
 *   pids    NEW_PID_EXT: the node as ei_encode_pid writes it (UTF-8 text,
 *           SMALL_ATOM_UTF8_EXT, or ATOM_UTF8_EXT from 256 bytes on), then
 *           number, serial and creation as 32-bit big-endian words
 *   ToName  as ei_x_encode_atom writes it: its text is read as Latin-1 and
 *           converted to UTF-8; 256 bytes or more are refused
 *
 * A node name ei refuses (text that is not UTF-8, more than 255 characters)
 * is refused here too.
 */
#ifndef SN_DIST_CTL_H
#define SN_DIST_CTL_H

#include <ei.h>

/* The longest pid: tag, node atom (header and up to 1020 bytes), 3 words. */
#define DIST_CTL_PID_MAX (1 + 3 + (MAXATOMLEN_UTF8 - 1) + 12)
/* The longest control tuple written here (REG_SEND): version, tuple header,
 * op, pid, '', and a name of 255 Latin-1 bytes, 510 as UTF-8. */
#define DIST_CTL_MAX (1 + 2 + 2 + DIST_CTL_PID_MAX + 2 + 3 + 2 * (MAXATOMLEN - 1))

/* Writes 131 and {2, '', To} to out, which holds DIST_CTL_MAX bytes.
 * Returns the length, or -EINVAL if ei would not encode `to`. */
int dist_ctl_send(char *out, const erlang_pid *to);

/* Writes 131 and {6, From, '', ToName} to out (DIST_CTL_MAX bytes). ToName
 * is a NUL-terminated name, read as ei_x_encode_atom reads it (Latin-1, at
 * most 255 bytes). Returns the length, or -EINVAL if ei would not encode
 * `from` or the name. */
int dist_ctl_reg_send(char *out, const erlang_pid *from, const char *to_name);

/* The longest reference: NEWER_REFERENCE_EXT with its node atom (header and
 * up to 1020 bytes), creation and at most 5 id words. */
#define DIST_CTL_REF_MAX (1 + 2 + 3 + (MAXATOMLEN_UTF8 - 1) + 4 + 5 * 4)
/* The longest ALIAS_SEND control tuple. */
#define DIST_CTL_ALIAS_MAX (1 + 2 + 2 + DIST_CTL_PID_MAX + DIST_CTL_REF_MAX)

/* Writes 131 and {33, From, Alias} to out (DIST_CTL_ALIAS_MAX bytes).
 * `alias` is the encoded reference (alias_len bytes, no version byte, at
 * most DIST_CTL_REF_MAX), copied as it is. Returns the length, or -EINVAL
 * if ei would not encode `from` or the alias is too long. */
int dist_ctl_alias_send(char *out, const erlang_pid *from, const char *alias, size_t alias_len);

#endif
