/*
 * term_validate.h — whether bytes from a peer are a term binary_to_term/1
 * takes: term.c's structural check, then term_map_keys.c's check that no
 * map holds one key twice. Every term that arrives from a peer, a store or
 * a plugin passes here before anything else reads it.
 */
#ifndef SN_TERM_VALIDATE_H
#define SN_TERM_VALIDATE_H

#include <stddef.h>

/* Checks that buf[*idx ..] holds one complete term within len bytes that
 * binary_to_term/1 would take, and advances *idx past it: every length
 * against the bytes left, and what the BEAM checks inside leaves — atoms
 * of at most 255 characters, UTF-8 atoms well-formed; floats finite, the
 * old text form in the BEAM's grammar; pids, ports and references with
 * the creations and ids it allows; exports of two atoms and a small
 * non-negative arity; bit strings with 1 to 8 bits in their last byte (0
 * in a bit string of no bytes, which is <<>>); maps without duplicate keys
 * (term_map_keys.h).
 *
 * Refused beyond the BEAM, each an encoding no writer produces:
 *   - atom cache references (we never negotiate a cache) and internal atom
 *     references ('I', 'K': an index into one runtime's atom table);
 *   - a text float (FLOAT_EXT) with no NUL inside its 31 bytes, which the
 *     BEAM looks for in the bytes after the term;
 *   - a fun (NEW_FUN_EXT) whose Size is not its length or whose Pid is no
 *     pid, and an export's arity or a fun's OldIndex or OldUniq inside
 *     empty-list wrappers: the BEAM ignores or unwraps these, ei trusts
 *     them.
 * So the verdict depends on the term's own bytes only (the same with any
 * bytes after it), and ei_skip_term() and ei's decoders walk every term
 * accepted to exactly its end. A bit of tolerance: maps inside a fun's
 * free variables are not checked for duplicate keys.
 *
 * Iterative: nesting depth costs no stack. Returns 0, or -EPROTO, or
 * -ENOMEM (checking a map's keys, or funs nested more than 8 deep); *idx
 * is unchanged on error. test/term_validate_SUITE.erl compares it with
 * binary_to_term/1 on random and mutated terms. */
int term_validate(const char *buf, size_t len, size_t *idx);

#endif
