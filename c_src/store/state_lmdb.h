/*
 * state_lmdb.h — entity states in an LMDB environment: the embedded
 * durable store, `state_store = lmdb` (docs/contract.md, "Entity state").
 *
 * One environment per node, the directory `<dir>/state.lmdb` (data.mdb,
 * lock.mdb), locked for this process alone; one named database per entity
 * type. A record's key is the shard (4 bytes, big-endian) followed by the
 * entity's canonical id bytes; its value the state as an Erlang term in
 * external format, version byte included, so binary_to_term/1 reads it.
 * LMDB keys are short (511 bytes): an id too long for one is keyed by the
 * shard, a zero byte (no canonical id starts with one) and the SHA-256 of
 * the id instead, and its value is the term {Id, State}, so that the id
 * can be read back (a shard's scan). A second database per type,
 * `shards:<type>`, holds a small record per shard for the region
 * (state_lmdb_shard_meta_write), keyed by the shard.
 *
 * It is a state_store (state_store.h): the callbacks' contracts are there.
 *
 * Threads. The loop never runs an LMDB write transaction or waits for an
 * fsync: writes queue for a writer thread, which commits everything queued
 * (from every type) in one transaction — group commit — and hands the
 * outcome back through an eventfd the loop watches. Loads queue for a
 * reader thread of their own, so a load never waits behind a commit's
 * fsync, and a page of the map not in memory faults on that thread, not on
 * the loop; it answers everything queued from one read transaction. Every
 * callback runs on the loop's thread, from the eventfd's handler.
 *
 * Sequence numbers: each write gets the next number of the store (1, 2,
 * ...). Commits happen in that order, so "written up to N" says all there
 * is to say about a write.
 */
#ifndef SN_STATE_LMDB_H
#define SN_STATE_LMDB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/evloop.h"
#include "base/log.h"
#include "store/state_store.h"

struct state_lmdb;
struct state_lmdb_type;

/* The most bytes a key has: state_lmdb_scan's cursor fits in this. */
#define STATE_LMDB_KEY_MAX STATE_STORE_KEY_MAX

/* Opens (creating directories and files as needed) the environment in
 * `<dir>/state.lmdb` and starts the two threads; the eventfd is watched on
 * `loop`. `log` must outlive the store. Returns it, or NULL with *err:
 * -EWOULDBLOCK (another process has it open), -ENOMEM, or -errno / -EIO of
 * an LMDB or file operation (logged). */
struct state_lmdb *state_lmdb_open(const char *dir, struct evloop *loop, const struct logger *log, int *err);

/* The store as a state_store (state_store.h), for the regions. */
struct state_store *state_lmdb_store(struct state_lmdb *s);

/* Commits every write queued so far (waiting for it), stops the threads,
 * closes the environment and frees the store; no callback runs any more.
 * Every type must have been closed. NULL is ignored. */
void state_lmdb_free(struct state_lmdb *s);

/* Opens (creating it if missing) the database of entity type `type` and
 * sends its callbacks to `written`/`loaded`/`scanned` with `arg`. At most 16 types
 * (base/node_limits.h). Returns the type's handle, or NULL with *err
 * (-EINVAL for a second open of the same type or too many, -ENOMEM, -EIO). */
struct state_lmdb_type *state_lmdb_type_open(struct state_lmdb *s, const char *type, state_store_written_fn written,
					     state_store_loaded_fn loaded, state_store_scanned_fn scanned, void *arg,
					     int *err);

/* No callback of the type runs after this (loads it queued are dropped
 * unanswered; its queued writes still commit). NULL is ignored. */
void state_lmdb_type_close(struct state_lmdb_type *t);

/* Queues the record of (shard, id) to be written: `state` (a term with its
 * version byte, state_len bytes, copied), or, state NULL, deleted (deleting
 * what is not stored is no error). *seq gets the write's sequence number.
 * Returns 0 or -ENOMEM (nothing queued). */
int state_lmdb_write(struct state_lmdb_type *t, uint32_t shard, const char *id, size_t id_len, const char *state,
		     size_t state_len, uint64_t *seq);

/* Queues a load of (shard, id); the type's `loaded` callback answers with
 * `token`. A load sees every write committed before it runs, and maybe
 * later ones: a caller that must not miss a write waits for its commit
 * first. Returns 0 or -ENOMEM (no answer will come). */
int state_lmdb_load(struct state_lmdb_type *t, uint32_t shard, const char *id, size_t id_len, uint64_t token);

/* Cancels the type's writes still queued, not yet taken by the writer
 * thread: they will not be written (their sequence numbers are still
 * reported, as if written). A write the writer has taken is committing and
 * cannot be recalled: returns the number of the last one taken. For giving
 * up on a store that does not answer. */
uint64_t state_lmdb_cancel_queued(struct state_lmdb_type *t);

/* Queues the deletion of every record of `shard`, as one write (*seq):
 * ordered with the others, so records written after it stay. Returns 0 or
 * -ENOMEM. */
int state_lmdb_delete_shard(struct state_lmdb_type *t, uint32_t shard, uint64_t *seq);

/* Queues a scan of the records of `shard`, in key order, from the one
 * after `after_key` (after_len 0: from the first), for the reader thread;
 * the chunk ends once it holds at least max_bytes (a record is never
 * split). The type's `scanned` callback answers with `token`. Like a load,
 * it sees every write committed before it runs. Returns 0, -EINVAL
 * (after_len above STATE_LMDB_KEY_MAX) or -ENOMEM (no answer will come). */
int state_lmdb_scan(struct state_lmdb_type *t, uint32_t shard, const char *after_key, size_t after_len,
		    size_t max_bytes, uint64_t token);

/* Queues `meta` (len bytes, copied) as shard `shard`'s own record of the
 * type, in a database of its own (`shards:<type>`), ordered with the
 * type's writes (*seq). For what a region keeps per shard across restarts
 * (replicated state). Returns 0 or -ENOMEM. */
int state_lmdb_shard_meta_write(struct state_lmdb_type *t, uint32_t shard, const void *meta, size_t len,
				uint64_t *seq);

/* Reads every shard record of the type committed so far, calling fn for
 * each, in shard order, on the caller's thread (one short read
 * transaction: for a type's start). Returns 0, fn's error, or -errno. */
int state_lmdb_shard_meta_read(struct state_lmdb_type *t, state_store_meta_fn fn, void *arg);

/* The sequence number of the last write queued (0: none yet). */
uint64_t state_lmdb_last_queued(const struct state_lmdb *s);

#endif
