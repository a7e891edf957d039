/*
 * entity_id.h — the canonical byte encoding of an entity id.
 *
 * An entity id is any Erlang term that holds no pid, port, reference or fun,
 * at any depth. Equal terms name the same entity however a peer encoded them
 * (INTEGER_EXT or a padded bignum for 5, latin1 or UTF-8 atoms, STRING_EXT or
 * LIST_EXT for "abc", map pairs in any order, ...), so before an id is hashed
 * or compared it is rewritten into one canonical encoding:
 *
 *   - terms that are exactly equal (=:=) give identical bytes, and terms that
 *     are not give different bytes (see the one exception, signed zero, below);
 *   - the bytes are themselves external term format without the version byte:
 *     binary_to_term(<<131, Bytes/binary>>) on a BEAM gives back a term =:=
 *     the original.
 *
 * The rules, which mostly match what term_to_binary/1 itself writes:
 *
 *   integers  SMALL_INTEGER_EXT for 0..255, INTEGER_EXT for the rest of the
 *             int32 range, otherwise SMALL_BIG_EXT (LARGE_BIG_EXT above 255
 *             digit bytes) with no zero high-order digit bytes. A bignum that
 *             fits in int32 becomes SMALL_INTEGER_EXT/INTEGER_EXT; a bignum of
 *             magnitude zero (of either sign) is the integer 0.
 *   floats    NEW_FLOAT_EXT, the IEEE 754 bits as sent. FLOAT_EXT text is
 *             checked against the syntax the BEAM accepts ([+-]d+[.,]d+
 *             ([eE][+-]d+)?, NUL-terminated within its 31 bytes) and parsed
 *             with strtod. Infinities and NaNs are not Erlang terms: -EPROTO.
 *             Signed zero: the sign bit is kept, so 0.0 and -0.0 give
 *             different bytes. That matches OTP 27, where they are different
 *             terms; on OTP 25 and 26 0.0 =:= -0.0, so there the two are equal
 *             terms with different ids. Likewise a MAP_EXT with both 0.0
 *             and -0.0 as keys is accepted here, while an OTP 25/26 BEAM
 *             holds them as one key.
 *   atoms     SMALL_ATOM_UTF8_EXT, or ATOM_UTF8_EXT when the UTF-8 text is
 *             longer than 255 bytes. Latin-1 text (ATOM_EXT, SMALL_ATOM_EXT)
 *             is converted to UTF-8. UTF-8 text must be valid (no overlong
 *             forms, no surrogates, nothing above U+10FFFF) and an atom must
 *             have at most 255 characters, as on a BEAM; otherwise -EPROTO.
 *   lists     A list is first read whole, across any chain of tails: a tail
 *             that is itself a list (LIST_EXT, STRING_EXT, NIL_EXT) continues
 *             the list, and a LIST_EXT of no elements is just its tail. Then:
 *             the empty list is NIL_EXT; a proper list of 1..65535 elements,
 *             all integers 0..255, is STRING_EXT; any other list is LIST_EXT
 *             with canonical elements and tail (NIL_EXT for a proper list,
 *             the canonical tail term for an improper one).
 *   binaries  BINARY_EXT. A BIT_BINARY_EXT with all 8 bits of its last byte
 *             used, or of no bytes (<<>>), is a BINARY_EXT; otherwise
 *             BIT_BINARY_EXT with the unused low bits of the last byte set
 *             to zero.
 *   tuples    SMALL_TUPLE_EXT for arity up to 255, else LARGE_TUPLE_EXT.
 *   maps      MAP_EXT with the pairs ordered by the canonical bytes of their
 *             keys (memcmp; a proper prefix sorts first). The order is not
 *             Erlang term order, and need not be: only equality matters. Two
 *             keys with the same canonical bytes are a duplicate key: -EPROTO.
 *   refused   pids, ports, references, funs (NEW_FUN_EXT, EXPORT_EXT and the
 *             obsolete FUN_EXT): -EINVAL.
 *
 * Cost: about O(n log n) time in the input size however deep the nesting
 * (map pairs are reordered by reference, not by moving bytes, and laid out
 * once at the end), O(n) heap, constant C stack.
 */
#ifndef SN_ENTITY_ID_H
#define SN_ENTITY_ID_H

#include <stddef.h>

#include <ei.h>

/* Appends the canonical encoding of the validated term at term[0..len) (no
 * version byte) to out. The term must fill exactly len bytes. Returns 0;
 * -EINVAL if the term is or contains a pid, port, reference or fun (not an
 * entity id); -EPROTO if malformed (including the semantic checks above:
 * bad atom text, non-finite floats, duplicate map keys, bytes after the
 * term); -ENOMEM. On error out->index is restored. Iterative (explicit heap
 * stack): 100000-deep nesting does not touch the C stack. out's buffer
 * must be plain malloc memory (ei_x_new(), ei_x_new_with_version() or
 * scratch_get()): it is grown with realloc().
 *
 * Input should have passed term_validate() first, as everything a peer sends
 * does; every read is nevertheless bounds-checked, so a truncated or lying
 * term gives -EPROTO (or -EINVAL, if a refused term comes first), never a
 * read outside term[0..len). */
int entity_id_canonical(const char *term, size_t len, ei_x_buff *out);

#endif
