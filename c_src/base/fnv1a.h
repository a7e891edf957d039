/*
 * fnv1a.h — FNV-1a, 64 bits: a fast hash of short byte strings for tables
 * and digests that nobody picks the input of to collide (entity ids in a
 * set, a member list's entries). Not for anything an attacker chooses.
 */
#ifndef SN_FNV1A_H
#define SN_FNV1A_H

#include <stddef.h>
#include <stdint.h>

/* The hash of bytes[0..len). */
static inline uint64_t fnv1a64(const void *bytes, size_t len)
{
	const unsigned char *b = bytes;
	uint64_t h = 1469598103934665603ull;
	for (size_t k = 0; k < len; k++)
		h = (h ^ b[k]) * 1099511628211ull;
	return h;
}

#endif
