/*
 * fnv1a.h — FNV-1a, 64 bits: a fast hash of short byte strings for tables
 * and digests that nobody picks the input of to collide (entity ids in a
 * set, a member list's entries). Not for anything an attacker chooses.
 */
#ifndef SN_FNV1A_H
#define SN_FNV1A_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A64_START 1469598103934665603ull

/* h, a hash so far (FNV1A64_START for none), continued over bytes[0..len):
 * one hash of several fields without copying them together. */
static inline uint64_t fnv1a64_more(uint64_t h, const void *bytes, size_t len)
{
	const unsigned char *b = bytes;
	for (size_t k = 0; k < len; k++)
		h = (h ^ b[k]) * 1099511628211ull;
	return h;
}

/* h continued over the four bytes of v, least significant first: the same
 * on every machine, whatever its byte order. */
static inline uint64_t fnv1a64_more_u32(uint64_t h, uint32_t v)
{
	const unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
				    (unsigned char)(v >> 24)};
	return fnv1a64_more(h, b, sizeof b);
}

/* The hash of bytes[0..len). */
static inline uint64_t fnv1a64(const void *bytes, size_t len)
{
	return fnv1a64_more(FNV1A64_START, bytes, len);
}

#endif
