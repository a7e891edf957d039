/*
 * term_encode.h — integers and atoms written exactly as the BEAM's
 * term_to_binary writes them, where ei's encoders differ:
 *
 *   - ei writes an integer outside 28 bits as SMALL_BIG_EXT; the BEAM
 *     writes every integer of 32 bits as INTEGER_EXT (and 0..255 as
 *     SMALL_INTEGER_EXT), and a bigger one as SMALL_BIG_EXT of as few
 *     bytes as it needs;
 *   - ei_x_encode_atom reads its text as Latin-1, so each byte of a UTF-8
 *     name (a node's, `né@host`) would become a character of its own; the
 *     BEAM writes the atom's UTF-8 as SMALL_ATOM_UTF8_EXT (up to 255
 *     bytes) or ATOM_UTF8_EXT.
 *
 * Every integer and atom the node sends or stores goes through these, so
 * a BEAM peer that compares bytes (a stored state, a reply it hashes)
 * sees what term_to_binary would give. Checked against term_to_binary by
 * test/term_encode_SUITE.erl.
 */
#ifndef SN_TERM_ENCODE_H
#define SN_TERM_ENCODE_H

#include <stdint.h>

#include <ei.h>

/* Appends v to x. Returns 0 or -ENOMEM. */
int term_x_encode_int(ei_x_buff *x, int64_t v);
int term_x_encode_uint(ei_x_buff *x, uint64_t v);

/* Appends the atom whose text is `utf8` (NUL-terminated) to x. Returns 0,
 * -EINVAL if the text is not UTF-8 or longer than an atom may be (255
 * characters), or -ENOMEM. */
int term_x_encode_atom(ei_x_buff *x, const char *utf8);

#endif
