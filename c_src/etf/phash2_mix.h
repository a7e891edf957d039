/*
 * phash2_mix.h — the arithmetic of the BEAM's make_hash2 that phash2.c
 * folds a term with (phash2.c's head comment says how): Bob Jenkins'
 * lookup2 mix and block hash, the per-type constants, and the hashpjw the
 * BEAM keeps with every atom. Inline: they run for every word of every
 * entity id a message carries.
 */
#ifndef SN_PHASH2_MIX_H
#define SN_PHASH2_MIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define GOLDEN_RATIO 0x9e3779b9u
/* The per-type constants: the golden ratio times n, mod 2^32. */
#define KMUL(n) ((uint32_t)(GOLDEN_RATIO * (uint32_t)(n)))

#define K_SMALL      KMUL(1)
#define K_NIL        KMUL(2)
#define K_ATOM       KMUL(3)
#define K_BYTES      KMUL(4)
#define K_TUPLE      KMUL(9)
#define K_BIG_NEG    KMUL(10)
#define K_BIG_POS    KMUL(11)
#define K_FLOAT      KMUL(12)
#define K_BINARY     KMUL(13)
#define K_BIT_TAIL   KMUL(15)
#define K_MAP_SIZE   KMUL(16)
#define K_MAP_PAIRS  KMUL(19)

/* The BEAM's internal type code for [], which is what gets mixed for it. */
#define NIL_TYPE_CODE 2u
/* What [] hashes to when nothing came before it (no mixing then). */
#define NIL_FIRST_HASH 3468870702u

/* phash2/1 answers in 0 .. 2^27-1. */
#define PHASH2_DEFAULT_MASK ((1u << 27) - 1u)

/* Integers in this range hash as single 32-bit words. */
#define SMALL28_LIMIT (1u << 27)

/* Bob Jenkins' lookup2 mix of three 32-bit words. */
static inline void jenkins_mix(uint32_t *pa, uint32_t *pb, uint32_t *pc)
{
	uint32_t a = *pa, b = *pb, c = *pc;
	a -= b; a -= c; a ^= c >> 13;
	b -= c; b -= a; b ^= a << 8;
	c -= a; c -= b; c ^= b >> 13;
	a -= b; a -= c; a ^= c >> 12;
	b -= c; b -= a; b ^= a << 16;
	c -= a; c -= b; c ^= b >> 5;
	a -= b; a -= c; a ^= c >> 3;
	b -= c; b -= a; b ^= a << 10;
	c -= a; c -= b; c ^= b >> 15;
	*pa = a; *pb = b; *pc = c;
}

/* One fold step: two words and a type constant into the accumulator. */
static inline void fold2(uint32_t *h, uint32_t x, uint32_t y, uint32_t k)
{
	uint32_t a = k + x, b = k + y;
	jenkins_mix(&a, &b, h);
}

static inline uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* lookup2's block hash over n bytes with the given initial value. The last
 * partial block is zero-padded: a zero byte adds nothing, which is exactly
 * what lookup2's fall-through tail does for the missing bytes. The low byte
 * of c is taken by the length, so c's tail bytes start one byte up. */
static inline uint32_t block_hash(const uint8_t *k, size_t n, uint32_t init)
{
	uint32_t a = GOLDEN_RATIO, b = GOLDEN_RATIO, c = init;
	size_t left = n;
	while (left >= 12) {
		a += le32(k);
		b += le32(k + 4);
		c += le32(k + 8);
		jenkins_mix(&a, &b, &c);
		k += 12;
		left -= 12;
	}
	uint8_t t[12] = {0};
	memcpy(t, k, left);
	c += (uint32_t)n; /* the BEAM keeps only the low 32 bits of the size */
	a += le32(t);
	b += le32(t + 4);
	c += (uint32_t)t[8] << 8 | (uint32_t)t[9] << 16 | (uint32_t)t[10] << 24;
	jenkins_mix(&a, &b, &c);
	return c;
}

/* The hash the BEAM stores with every atom: hashpjw (the Dragon Book's) over
 * the atom's text. The BEAM keeps atom text as UTF-8 but, so that Latin-1
 * atoms kept the hash they had before atoms could be Unicode, a two-byte
 * sequence for U+0080..U+00FF (lead byte 0xC2 or 0xC3) is hashed as the one
 * code point it encodes. For Latin-1 text (ATOM_EXT, SMALL_ATOM_EXT) that
 * amounts to hashing the raw bytes, so no conversion is needed; every other
 * UTF-8 byte is hashed as it is. The BEAM's hash word may be wider than 32
 * bits, but only left shifts carry bits upward and only bits 28..31 are ever
 * fed back, so the low 32 bits — all that phash2 uses — agree. */
static inline uint32_t atom_text_hash(const uint8_t *s, size_t n, bool utf8)
{
	uint32_t h = 0;
	size_t i = 0;
	while (i < n) {
		uint32_t v = s[i++];
		if (utf8 && (v & 0xFEu) == 0xC2u && i < n && (s[i] & 0xC0u) == 0x80u)
			v = (v << 6 | (s[i++] & 0x3Fu)) & 0xFFu;
		h = (h << 4) + v;
		uint32_t g = h & 0xF0000000u;
		if (g) {
			h ^= g >> 24;
			h ^= g;
		}
	}
	return h;
}

#endif
