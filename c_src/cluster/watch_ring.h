/*
 * watch_ring.h — who watches whom, so that the cost of failure detection
 * per member does not grow with the cluster (docs/contract.md "A cluster's
 * cost per member"). Pure: no I/O, no clock.
 *
 * The voting members stand on a ring in the order of the hashes of their
 * names (then the names), so that neighbours on the ring are not
 * neighbours by name or by age. Each member watches the `k` members that
 * follow it: it heartbeats them and reports them unreachable when they go
 * silent. Every member computes the same ring from the same member list,
 * so each knows who else is meant to hear a member (downing.h uses that).
 * With k at least n - 1 every member watches every other, as in a small
 * cluster.
 */
#ifndef SN_WATCH_RING_H
#define SN_WATCH_RING_H

#include <stdbool.h>
#include <stddef.h>

struct watch_ring {
	size_t n;
	size_t *place; /* place[i]: where member i stands (0..n-1) */
	size_t *at;    /* at[p]: the member standing at place p */
};

/* Orders nodes[0..n) (NUL-terminated names, distinct) on the ring. The ring
 * keeps no pointer to the names. Returns 0, or -ENOMEM with nothing to
 * free; on success watch_ring_free releases it. n may be 0. */
int watch_ring_build(struct watch_ring *r, const char *const *nodes, size_t n);

void watch_ring_free(struct watch_ring *r);

/* The member `d` places after member i (d taken modulo n). */
size_t watch_ring_after(const struct watch_ring *r, size_t i, size_t d);

/* Whether `observer` is one of the k members meant to watch `subject`:
 * subject stands 1..k places after it. False for observer == subject. */
bool watch_ring_watches(const struct watch_ring *r, size_t observer, size_t subject, size_t k);

/* Whether every member watches every other with k watchers each. */
static inline bool watch_ring_everyone(size_t n, size_t k) { return n == 0 || k >= n - 1; }

#endif
