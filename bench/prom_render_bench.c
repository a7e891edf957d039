/*
 * prom_render_bench.c — how long the metrics page writer (base/prom_text.h)
 * takes for a page of 10 000 series, shaped like the node's (per type: a
 * counter pair and a reply-latency histogram), into a buffer kept from one
 * rendering to the next as the endpoint keeps it. Prints one line,
 * "series=N bytes=B median_us=M max_us=X", over 50 renderings after a
 * first that grows the buffer. The node's own page adds its /proc reads
 * (process_ metrics) once per rendering.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/prom_text.h"

#define ROUNDS 50

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* One page: `types` groups of 2 counters and a histogram (25 series). */
static size_t render(struct bytebuf *b, int types, const struct histogram *h)
{
	struct prom_text p = {.out = b};
	size_t series = 0;
	for (int t = 0; t < types; t++) {
		char labels[64], lat[64];
		size_t ll = 0, tl = 0;
		char type[32];
		snprintf(type, sizeof type, "type_%d", t);
		labels[0] = lat[0] = '\0';
		prom_label(labels, sizeof labels, &ll, "type", type);
		prom_label(labels, sizeof labels, &ll, "kind", "ask");
		prom_label(lat, sizeof lat, &tl, "type", type);
		prom_u64(&p, "shardnode_messages_total", labels, 1234567u + (unsigned)t);
		prom_u64(&p, "shardnode_entities", lat, 98765u);
		prom_histogram(&p, "shardnode_reply_latency_seconds", lat, h);
		series += 2 + HISTOGRAM_BOUNDS + 1 + 2;
	}
	return p.err == 0 ? series : 0;
}

int main(void)
{
	struct histogram h = {0};
	for (uint64_t ns = 0; ns < 2000000; ns += 997)
		histogram_observe(&h, ns);
	int types = 10000 / (2 + HISTOGRAM_BOUNDS + 1 + 2);
	struct bytebuf b = {0};
	size_t series = render(&b, types, &h); /* grows the buffer */
	double took[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		b.off = b.len = 0;
		double t0 = now_us();
		series = render(&b, types, &h);
		took[r] = now_us() - t0;
	}
	qsort(took, ROUNDS, sizeof took[0], by_value);
	printf("series=%zu bytes=%zu median_us=%.0f max_us=%.0f\n", series, b.len, took[ROUNDS / 2], took[ROUNDS - 1]);
	bytebuf_free(&b);
	return series > 0 ? 0 : 1;
}
