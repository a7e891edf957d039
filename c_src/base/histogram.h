/*
 * histogram.h — durations counted in fixed buckets, from a microsecond to
 * ten seconds, as the metrics endpoint shows them (a Prometheus histogram).
 *
 * Observing is a few compares and two additions on plain integers: no
 * allocation, no lock. A histogram belongs to one thread (the loop's);
 * whoever shows it reads it on that thread.
 */
#ifndef SN_HISTOGRAM_H
#define SN_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

/* The finite upper bounds; a count above the last goes to +Inf. */
#define HISTOGRAM_BOUNDS 22

/* The bounds in nanoseconds, ascending, and as Prometheus `le` label values
 * (seconds). */
extern const uint64_t histogram_bounds_ns[HISTOGRAM_BOUNDS];
extern const char *const histogram_bounds_le[HISTOGRAM_BOUNDS];

struct histogram {
	uint64_t counts[HISTOGRAM_BOUNDS + 1]; /* per bucket, not cumulative; the last is +Inf */
	uint64_t sum_ns;
};

/* Counts one duration. */
static inline void histogram_observe(struct histogram *h, uint64_t ns)
{
	size_t k = 0;
	while (k < HISTOGRAM_BOUNDS && ns > histogram_bounds_ns[k])
		k++;
	h->counts[k]++;
	h->sum_ns += ns;
}

/* Counts n durations of `ns` each. */
static inline void histogram_observe_n(struct histogram *h, uint64_t ns, uint64_t n)
{
	size_t k = 0;
	while (k < HISTOGRAM_BOUNDS && ns > histogram_bounds_ns[k])
		k++;
	h->counts[k] += n;
	h->sum_ns += ns * n;
}

/* Observations in all. */
uint64_t histogram_count(const struct histogram *h);

/* Adds every count of `from` to `into`. */
void histogram_add(struct histogram *into, const struct histogram *from);

#endif
