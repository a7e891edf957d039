/* histogram.c — see histogram.h. */
#include "base/histogram.h"

const uint64_t histogram_bounds_ns[HISTOGRAM_BOUNDS] = {
	1000,      2500,      5000,       10000,      25000,      50000,       100000,     250000,
	500000,    1000000,   2500000,    5000000,    10000000,   25000000,    50000000,   100000000,
	250000000, 500000000, 1000000000, 2500000000, 5000000000, 10000000000,
};

const char *const histogram_bounds_le[HISTOGRAM_BOUNDS] = {
	"1e-06",  "2.5e-06", "5e-06", "1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
	"0.005",  "0.01",    "0.025", "0.05",  "0.1",     "0.25",  "0.5",    "1",       "2.5",    "5",     "10",
};

uint64_t histogram_count(const struct histogram *h)
{
	uint64_t n = 0;
	for (size_t k = 0; k <= HISTOGRAM_BOUNDS; k++)
		n += h->counts[k];
	return n;
}

void histogram_add(struct histogram *into, const struct histogram *from)
{
	for (size_t k = 0; k <= HISTOGRAM_BOUNDS; k++)
		into->counts[k] += from->counts[k];
	into->sum_ns += from->sum_ns;
}
