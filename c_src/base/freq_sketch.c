/* freq_sketch.c — see freq_sketch.h. */
#include "base/freq_sketch.h"

#include <errno.h>
#include <stdlib.h>

#define MAX_COUNT 15u
#define ROWS 4

/* The key's counter in row i: a different mix of the hash per row. */
static uint32_t slot(const struct freq_sketch *f, uint32_t hash, unsigned i)
{
	static const uint32_t seeds[ROWS] = {0x9E3779B1u, 0x85EBCA77u, 0xC2B2AE3Du, 0x27D4EB2Fu};
	uint32_t h = (hash ^ (hash >> 15)) * seeds[i];
	h ^= h >> 13;
	return h & f->mask;
}

int freq_sketch_init(struct freq_sketch *f, size_t keys)
{
	size_t want = (keys ? keys : 1) * ROWS, size = 64;
	while (size < want && size < ((size_t)1 << 31))
		size *= 2;
	f->counts = calloc(size, 1);
	f->mask = f->counts != NULL ? (uint32_t)(size - 1) : 0;
	f->added = 0;
	f->halve_at = (uint64_t)(keys ? keys : 1) * 10;
	return f->counts != NULL ? 0 : -ENOMEM;
}

void freq_sketch_free(struct freq_sketch *f)
{
	free(f->counts);
	f->counts = NULL;
	f->mask = 0;
}

unsigned freq_sketch_estimate(const struct freq_sketch *f, uint32_t hash)
{
	if (f->counts == NULL)
		return 0;
	unsigned min = MAX_COUNT;
	for (unsigned i = 0; i < ROWS; i++) {
		unsigned c = f->counts[slot(f, hash, i)];
		min = c < min ? c : min;
	}
	return min;
}

void freq_sketch_add(struct freq_sketch *f, uint32_t hash)
{
	if (f->counts == NULL)
		return;
	unsigned min = freq_sketch_estimate(f, hash);
	if (min < MAX_COUNT)
		for (unsigned i = 0; i < ROWS; i++) {
			uint8_t *c = &f->counts[slot(f, hash, i)];
			if (*c == min)
				(*c)++;
		}
	if (++f->added >= f->halve_at) {
		for (uint32_t k = 0; k <= f->mask; k++)
			f->counts[k] >>= 1;
		f->added /= 2;
	}
}
