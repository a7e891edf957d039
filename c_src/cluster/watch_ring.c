/* watch_ring.c — see watch_ring.h. */
#include "cluster/watch_ring.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv1a.h"

struct standing {
	uint64_t hash;
	const char *node;
	size_t member;
};

static int by_hash_then_name(const void *a, const void *b)
{
	const struct standing *x = a, *y = b;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return strcmp(x->node, y->node);
}

int watch_ring_build(struct watch_ring *r, const char *const *nodes, size_t n)
{
	r->n = n;
	r->place = malloc((n ? n : 1) * sizeof *r->place);
	r->at = malloc((n ? n : 1) * sizeof *r->at);
	struct standing *s = malloc((n ? n : 1) * sizeof *s);
	if (r->place == NULL || r->at == NULL || s == NULL) {
		free(r->place);
		free(r->at);
		free(s);
		r->place = r->at = NULL;
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		s[i] = (struct standing){fnv1a64(nodes[i], strlen(nodes[i])), nodes[i], i};
	qsort(s, n, sizeof *s, by_hash_then_name);
	for (size_t p = 0; p < n; p++) {
		r->at[p] = s[p].member;
		r->place[s[p].member] = p;
	}
	free(s);
	return 0;
}

void watch_ring_free(struct watch_ring *r)
{
	free(r->place);
	free(r->at);
	r->place = r->at = NULL;
	r->n = 0;
}

size_t watch_ring_after(const struct watch_ring *r, size_t i, size_t d)
{
	return r->at[(r->place[i] + d % r->n) % r->n];
}

bool watch_ring_watches(const struct watch_ring *r, size_t observer, size_t subject, size_t k)
{
	if (observer == subject || observer >= r->n || subject >= r->n)
		return false;
	size_t distance = (r->place[subject] + r->n - r->place[observer]) % r->n;
	return distance >= 1 && distance <= k;
}
