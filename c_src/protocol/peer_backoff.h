/*
 * peer_backoff.h — peers this node could not reach, and when to try each
 * again. Pure bookkeeping, no I/O: dist_node.c asks it before opening a
 * connection and tells it how attempts end, so that a member that is gone
 * costs one log line when it goes and one when it answers again, not two
 * a second, and so that connection attempts (host name, epmd look-up,
 * connect) to it back off: 100 ms after the first failure, doubling up to
 * PEER_BACKOFF_MAX_MS.
 */
#ifndef SN_PEER_BACKOFF_H
#define SN_PEER_BACKOFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PEER_BACKOFF_FIRST_MS 100
#define PEER_BACKOFF_MAX_MS 2000

struct peer_failing {
	char peer[256];
	uint32_t failures;   /* attempts that failed in a row */
	uint64_t retry_at;   /* no attempt before this (loop clock, ms) */
	uint64_t dropped;    /* messages to it dropped meanwhile */
	uint64_t since;      /* the first failure in a row (loop clock, ms) */
	bool warned;         /* peer_backoff_warn_due said true */
};

/* Zero-initialised is empty and valid. */
struct peer_backoff {
	struct peer_failing *peers; /* owned */
	size_t n, cap;
};

void peer_backoff_free(struct peer_backoff *b);

/* The delay before the next attempt after `failures` failures in a row. */
uint32_t peer_backoff_delay_ms(uint32_t failures);

/* An attempt to reach `peer` failed at `now`. Returns the peer's number of
 * failures in a row, now (1: the first, the one worth a log line), or 0
 * when out of memory (the failure is not recorded: nothing backs off). */
uint32_t peer_backoff_failed(struct peer_backoff *b, const char *peer, uint64_t now);

/* True unless `peer` failed and its back-off has not run out at `now`. */
bool peer_backoff_may_try(const struct peer_backoff *b, const char *peer, uint64_t now);

/* Counts n messages to `peer` dropped while it is failing (nothing if it
 * is not). */
void peer_backoff_dropped(struct peer_backoff *b, const char *peer, uint64_t n);

/* True once, the first time it is asked at or after `after_ms` since
 * `peer` started failing (false while it is not failing): a peer never
 * reached yet is warned of only when it keeps failing. */
bool peer_backoff_warn_due(struct peer_backoff *b, const char *peer, uint64_t now, uint64_t after_ms);

/* `peer` answered: forgets it. Returns what was recorded of its failures
 * (all zero if none) into *out, when out is not NULL. */
void peer_backoff_reached(struct peer_backoff *b, const char *peer, struct peer_failing *out);

#endif
