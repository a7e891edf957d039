/*
 * term_readable.h — whether a BEAM node could read a term that names it.
 *
 * binary_to_term/1 takes a pid, reference or port of another node with any
 * numbers, but one that names the reading node itself (its name and its
 * creation) must be one that node could have made: a BEAM refuses a pid
 * whose number is 2^15 or more or whose serial is 2^13 or more, a
 * reference of more than three words or whose first word is 2^18 or more,
 * a port whose number is 2^28 or more — and over the distribution it drops
 * the connection the term came on. The node cannot refuse such terms when
 * it takes them (it does not know who will read them), so it checks what
 * it hands back to a reader against that reader (docs/contract.md, "Bad
 * input").
 */
#ifndef SN_TERM_READABLE_H
#define SN_TERM_READABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True unless the validated term term[0..len) (no version byte) holds,
 * anywhere (inside funs too), a pid, reference or port naming the node
 * `node` (UTF-8, NUL-terminated; any atom encoding of it matches) with
 * creation `creation` whose numbers are outside what that node hands out
 * (above). Reads nothing outside term[0..len). A term too short to hold
 * any identifier (under 7 bytes: most replies) is readable without the
 * name being read; a node name that appears nowhere in the term's bytes
 * (the usual case otherwise) costs one memmem. */
bool term_readable_by(const char *term, size_t len, const char *node, uint32_t creation);

#endif
