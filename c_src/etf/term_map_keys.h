/*
 * term_map_keys.h — the one check of binary_to_term/1 that is about terms,
 * not bytes: a map's keys must be distinct terms. Distinct as exact terms,
 * not as bytes: 'a' in Latin-1 and in UTF-8, "a" and [97], 0.0 as text and
 * as IEEE bits are the same key, 1 and 1.0 are not.
 */
#ifndef SN_TERM_MAP_KEYS_H
#define SN_TERM_MAP_KEYS_H

#include <stddef.h>

/* Checks every map in term[0..len) (one term, already walked whole by
 * term_validate's structural pass; no version byte) for duplicate keys:
 * keys are compared in their canonical form (entity_id.h); keys that hold
 * a pid, port, reference or fun, which have none, byte by byte. A fun's
 * free variables are not looked into. Returns 0, -EPROTO (a map with a
 * duplicate key), or -ENOMEM. */
int term_map_keys_check(const char *term, size_t len);

#endif
