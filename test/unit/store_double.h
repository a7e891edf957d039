/*
 * store_double.h — a state store (store/state_store.h) for the unit harness
 * of the stateful cores: it keeps its records in memory, records every
 * operation a region asks of it, answers on the loop as a real store does
 * (never during the call), and can hold its answers back or fail them, so a
 * test decides when a load returns, when a write commits, and whether it
 * fails; a shared double (one for every member, as PostgreSQL is) claims
 * shards and can fence them.
 *
 * Not a mock of any real store's internals: it keeps the contract of
 * state_store.h, which the real stores are tested against in their own
 * unit tests (test_state_lmdb.c, test_state_pg.c) and common_test.
 *
 * Everything runs on the loop's thread. Not thread-safe.
 */
#ifndef SN_STORE_DOUBLE_H
#define SN_STORE_DOUBLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/evloop.h"
#include "store/state_store.h"

struct store_double;

/* A new double on `loop` (not owned). shared: one store every member reads
 * (claims and fencing), else one node's own. Never NULL (asserts). */
struct store_double *store_double_new(struct evloop *loop, bool shared);

/* The state_store a region is configured with; owned by the double. */
struct state_store *store_double_store(struct store_double *d);

/* Frees the double and its records; its types must be closed. */
void store_double_free(struct store_double *d);

/* What a test can change at any time. Held answers wait in order until
 * released; a failure is given to the next answers until it is set back
 * to 0. */
struct store_double_knobs {
	bool hold_loads;   /* loads are answered only by store_double_release */
	bool hold_commits; /* writes are committed only by store_double_release */
	bool hold_claims;  /* claims commit only by store_double_release */
	int load_error;    /* nonzero (-errno): loads answer it */
	int commit_error;  /* nonzero (-errno): commits report it */
};
struct store_double_knobs *store_double_knobs(struct store_double *d);

/* Answers what is held (loads, commits, claims), now, on this stack: a test
 * calls it from outside the region's callbacks. */
void store_double_release(struct store_double *d);

/* Counts of what was asked, for assertions. */
struct store_double_counts {
	uint64_t writes, deletes, shard_deletes, loads, scans, claims;
	uint64_t committed_upto; /* the last seq reported written */
	uint32_t held_loads, held_commits, held_claims;
};
void store_double_counts(const struct store_double *d, struct store_double_counts *out);

/* The stored state of (shard, canonical id) as a term with its version
 * byte: its length, with *state pointing into the double (valid until the
 * next write), or 0 if none is stored (committed writes only). */
size_t store_double_get(const struct store_double *d, uint32_t shard, const char *id, size_t id_len,
			const char **state);

/* A shared double: another member claims `shard`. Every member's type that
 * holds a claim of it hears fenced(shard), on the loop. */
void store_double_fence(struct store_double *d, uint32_t shard);

#endif
