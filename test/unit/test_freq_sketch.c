/*
 * test_freq_sketch.c — the frequency sketch of the active-entity limit:
 * counts grow with each add up to 15, keys do not disturb each other
 * (beyond the rare collision, which only overestimates), and all counts
 * halve once ten times as many adds as keys were made.
 */
#include <stdint.h>

#include <criterion/criterion.h>

#include "base/freq_sketch.h"

static uint32_t key(uint32_t k) { return k * 2654435761u + 12345u; }

Test(freq_sketch, counts_grow_and_saturate_at_15)
{
	struct freq_sketch f;
	cr_assert_eq(freq_sketch_init(&f, 1000), 0);
	cr_assert_eq(freq_sketch_estimate(&f, key(1)), 0);
	for (unsigned n = 1; n <= 20; n++) {
		freq_sketch_add(&f, key(1));
		cr_assert_eq(freq_sketch_estimate(&f, key(1)), n < 15 ? n : 15);
	}
	freq_sketch_free(&f);
	freq_sketch_free(&f); /* harmless twice */
}

Test(freq_sketch, keys_mostly_keep_to_themselves)
{
	struct freq_sketch f;
	cr_assert_eq(freq_sketch_init(&f, 1000), 0);
	for (uint32_t k = 0; k < 500; k++)
		for (uint32_t n = 0; n <= k % 4; n++)
			freq_sketch_add(&f, key(k));
	unsigned over = 0;
	for (uint32_t k = 0; k < 500; k++) {
		unsigned est = freq_sketch_estimate(&f, key(k));
		cr_assert_geq(est, k % 4 + 1, "never under the true count");
		over += est != k % 4 + 1;
	}
	cr_assert_lt(over, 25, "%u of 500 overestimated", over);
	freq_sketch_free(&f);
}

Test(freq_sketch, counts_halve_after_ten_adds_per_key)
{
	struct freq_sketch f;
	cr_assert_eq(freq_sketch_init(&f, 10), 0);
	for (int n = 0; n < 8; n++)
		freq_sketch_add(&f, key(7));
	cr_assert_eq(freq_sketch_estimate(&f, key(7)), 8);
	/* 100 adds in all (10 keys x 10) halve every count once */
	for (uint32_t n = 8; n < 99; n++)
		freq_sketch_add(&f, key(1000 + n));
	cr_assert_eq(freq_sketch_estimate(&f, key(7)), 8);
	freq_sketch_add(&f, key(2000));
	cr_assert_eq(freq_sketch_estimate(&f, key(7)), 4);
	freq_sketch_free(&f);
}
