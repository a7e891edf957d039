/* Unit tests for base/histogram and base/prom_text. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base/histogram.h"
#include "base/prom_text.h"

static const char *text_of(struct bytebuf *b)
{
	cr_assert_eq(bytebuf_append(b, "", 1), 0);
	b->len--; /* the NUL stays behind the text */
	return (const char *)bytebuf_head(b);
}

Test(histogram, bounds_are_ascending_and_match_their_labels)
{
	for (size_t k = 0; k < HISTOGRAM_BOUNDS; k++) {
		if (k > 0)
			cr_assert_gt(histogram_bounds_ns[k], histogram_bounds_ns[k - 1]);
		double le;
		cr_assert_eq(sscanf(histogram_bounds_le[k], "%lf", &le), 1);
		double ns = le * 1e9;
		cr_assert(ns > (double)histogram_bounds_ns[k] - 0.5 && ns < (double)histogram_bounds_ns[k] + 0.5,
			  "%s is %llu ns", histogram_bounds_le[k], (unsigned long long)histogram_bounds_ns[k]);
	}
	cr_assert_eq(histogram_bounds_ns[0], 1000, "from a microsecond");
	cr_assert_eq(histogram_bounds_ns[HISTOGRAM_BOUNDS - 1], 10000000000ull, "to ten seconds");
}

Test(histogram, an_observation_lands_in_the_first_bucket_that_holds_it)
{
	struct histogram h = {0};
	histogram_observe(&h, 0);
	histogram_observe(&h, 1000);  /* le=1e-06 holds it: bounds are inclusive */
	histogram_observe(&h, 1001);
	histogram_observe(&h, 10000000000ull);
	histogram_observe(&h, 10000000001ull);
	histogram_observe(&h, UINT64_MAX / 2);
	cr_assert_eq(h.counts[0], 2);
	cr_assert_eq(h.counts[1], 1);
	cr_assert_eq(h.counts[HISTOGRAM_BOUNDS - 1], 1);
	cr_assert_eq(h.counts[HISTOGRAM_BOUNDS], 2, "+Inf");
	cr_assert_eq(histogram_count(&h), 6);
	struct histogram sum = {0};
	histogram_add(&sum, &h);
	histogram_add(&sum, &h);
	cr_assert_eq(histogram_count(&sum), 12);
	cr_assert_eq(sum.sum_ns, 2 * h.sum_ns);
}

Test(prom_text, families_samples_and_seconds)
{
	struct bytebuf b = {0};
	struct prom_text p = {.out = &b};
	prom_family(&p, "shardnode_x_total", "counter", "Things counted.");
	prom_u64(&p, "shardnode_x_total", "type=\"counter\"", 0);
	prom_u64(&p, "shardnode_x_total", NULL, UINT64_MAX);
	prom_u64(&p, "shardnode_x_total", "", 10);
	prom_seconds(&p, "s", NULL, 0);
	prom_seconds(&p, "s", NULL, 1500000000);
	prom_seconds(&p, "s", NULL, 1);
	prom_seconds(&p, "s", NULL, 12000000000ull);
	prom_seconds(&p, "s", NULL, 100000);
	cr_assert_eq(p.err, 0);
	cr_assert_str_eq(text_of(&b), "# HELP shardnode_x_total Things counted.\n"
				      "# TYPE shardnode_x_total counter\n"
				      "shardnode_x_total{type=\"counter\"} 0\n"
				      "shardnode_x_total 18446744073709551615\n"
				      "shardnode_x_total 10\n"
				      "s 0\n"
				      "s 1.5\n"
				      "s 0.000000001\n"
				      "s 12\n"
				      "s 0.0001\n");
	bytebuf_free(&b);
}

Test(prom_text, a_histogram_is_cumulative_with_sum_and_count)
{
	struct histogram h = {0};
	histogram_observe(&h, 800);       /* le=1e-06 */
	histogram_observe(&h, 3000);      /* le=5e-06 */
	histogram_observe(&h, 3000);
	histogram_observe(&h, 20000000000ull); /* +Inf */
	struct bytebuf b = {0};
	struct prom_text p = {.out = &b};
	prom_histogram(&p, "lat_seconds", "type=\"kv\"", &h);
	const char *t = text_of(&b);
	cr_assert_not_null(strstr(t, "lat_seconds_bucket{type=\"kv\",le=\"1e-06\"} 1\n"), "%s", t);
	cr_assert_not_null(strstr(t, "lat_seconds_bucket{type=\"kv\",le=\"2.5e-06\"} 1\n"), "%s", t);
	cr_assert_not_null(strstr(t, "lat_seconds_bucket{type=\"kv\",le=\"5e-06\"} 3\n"), "%s", t);
	cr_assert_not_null(strstr(t, "lat_seconds_bucket{type=\"kv\",le=\"10\"} 3\n"), "%s", t);
	cr_assert_not_null(strstr(t, "lat_seconds_bucket{type=\"kv\",le=\"+Inf\"} 4\n"), "%s", t);
	cr_assert_not_null(strstr(t, "lat_seconds_sum{type=\"kv\"} 20.0000068\n"), "%s", t);
	cr_assert_not_null(strstr(t, "lat_seconds_count{type=\"kv\"} 4\n"), "%s", t);
	size_t lines = 0;
	for (const char *c = t; *c; c++)
		lines += *c == '\n';
	cr_assert_eq(lines, HISTOGRAM_BOUNDS + 1 + 2);
	bytebuf_free(&b);

	/* without labels, le is the only one */
	struct bytebuf b2 = {0};
	struct prom_text p2 = {.out = &b2};
	prom_histogram(&p2, "d", NULL, &h);
	cr_assert_not_null(strstr(text_of(&b2), "d_bucket{le=\"+Inf\"} 4\nd_sum 20.0000068\nd_count 4\n"));
	bytebuf_free(&b2);
}

Test(prom_text, labels_are_escaped_and_bounded)
{
	char buf[64];
	size_t len = 0;
	buf[0] = '\0';
	cr_assert_eq(prom_label(buf, sizeof buf, &len, "type", "counter"), 0);
	cr_assert_eq(prom_label(buf, sizeof buf, &len, "node", "a\"b\\c\nd"), 0);
	cr_assert_str_eq(buf, "type=\"counter\",node=\"a\\\"b\\\\c\\nd\"");
	cr_assert_eq(len, strlen(buf));
	/* exactly full, then one byte too many */
	char small[16];
	size_t sl = 0;
	cr_assert_eq(prom_label(small, sizeof small, &sl, "k", "0123456789a"), 0); /* k="…" NUL: 16 */
	cr_assert_eq(sl, 15);
	char tiny[15];
	size_t tl = 0;
	tiny[0] = '\0';
	cr_assert_eq(prom_label(tiny, sizeof tiny, &tl, "k", "0123456789a"), -ENOSPC);
	cr_assert_eq(tl, 0);
	cr_assert_str_eq(tiny, "", "unchanged");
}
