/*
 * freq_sketch.h — how often a key was seen lately, estimated in a few bytes
 * per key: a count-min sketch of 4-bit counters (W-TinyLFU's, as in
 * Caffeine and Akka's passivation), four counters per key in one array,
 * each incremented only if it is among the key's smallest (conservative
 * update), all halved once as many keys were added as ten times the
 * number it was sized for, so that what was frequent long ago fades.
 *
 * Keys are 32-bit hashes (entity_table_hash); collisions only overestimate.
 * One owner; nothing is thread-safe.
 */
#ifndef SN_FREQ_SKETCH_H
#define SN_FREQ_SKETCH_H

#include <stddef.h>
#include <stdint.h>

struct freq_sketch {
	uint8_t *counts;  /* mask + 1 of them, each 0..15 */
	uint32_t mask;
	uint64_t added;   /* since the last halving */
	uint64_t halve_at;
};

/* Sizes the sketch for about `keys` keys at once (at least 1): 4 counters
 * per key, rounded up to a power of two. Returns 0 or -ENOMEM (f is then
 * empty, and freq_sketch_free harmless). */
int freq_sketch_init(struct freq_sketch *f, size_t keys);

void freq_sketch_free(struct freq_sketch *f);

/* The key was seen once more. */
void freq_sketch_add(struct freq_sketch *f, uint32_t hash);

/* How often the key was seen lately: 0..15. */
unsigned freq_sketch_estimate(const struct freq_sketch *f, uint32_t hash);

#endif
