/*
 * state_lmdb_records.h — the records of the LMDB state store
 * (state_lmdb.h) and the transactions that read and write them: private
 * to state_lmdb.c, which queues these operations for its threads.
 *
 * A record's key is the shard (4 bytes, big-endian) and the canonical id;
 * its value the state term with its version byte. An id too long for an
 * LMDB key (STATE_LMDB_KEY_MAX) is keyed by the shard, a zero byte and
 * the id's SHA-256, and its value is {Id, State}, so a scan can give the
 * id back and a load can tell a collision from its own record.
 */
#ifndef SN_STATE_LMDB_RECORDS_H
#define SN_STATE_LMDB_RECORDS_H

#include <lmdb.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/state_store.h"

/* WRITE_CANCELLED: taken by the writer and skipped (state_lmdb_cancel_queued). */
enum write_kind { WRITE_PUT, WRITE_DELETE, WRITE_DELETE_SHARD, WRITE_CANCELLED };

/* A queued write: malloc'ed, owned by the queue it is on (or by a
 * write_ops to be used again). */
struct write_op {
	struct write_op *next;
	MDB_dbi dbi;
	enum write_kind kind;
	uint32_t key_len, val_len;
	uint32_t room; /* bytes data has room for */
	char data[]; /* key, then the value */
};

/* Write ops the writer thread has committed, kept by the thread that
 * builds them to be filled again: an op malloc'ed on one thread and freed
 * on another ends in the freeing thread's cache, so every malloc of the
 * builder went to the shared arena. `free` is the builder's alone;
 * state_lmdb.c moves what the writer hands back into it. */
struct write_ops {
	struct write_op *free; /* linked by next */
	uint32_t n;            /* how many: kept by state_lmdb_write_ops_keep only */
};

/* Frees every op of `ops` (which is empty after). */
void state_lmdb_write_ops_clear(struct write_ops *ops);

/* A committed batch (first..last, n ops) kept in `ops` if they stay at
 * most `max`; returns the ops not kept (NULL: all were), for the caller
 * to free outside its lock. */
struct write_op *state_lmdb_write_ops_keep(struct write_ops *ops, struct write_op *first, struct write_op *last,
					   uint64_t n, uint32_t max);

/* Moves every op of `from` into `to` if `to` has none (`from` is then
 * empty; `to` is not counted). */
void state_lmdb_write_ops_take(struct write_ops *to, struct write_ops *from);

enum read_kind { READ_LOAD, READ_SCAN };

/* A queued load or scan, and then (the same or a new allocation) its
 * answer: malloc'ed, owned by the queue it is on. */
struct load_op {
	struct load_op *next;
	uint64_t token;
	MDB_dbi dbi;
	enum read_kind kind;
	uint32_t type_index, type_gen;
	uint32_t shard;            /* a scan's */
	size_t max_bytes;          /* a scan's */
	int found;                 /* a load's answer: 1, 0 or -errno; a scan's: 0 or -errno */
	bool more;                 /* a scan's answer: records remain after it */
	uint32_t skipped;          /* a scan's answer: damaged records left out of it */
	/* Queued: data holds the key (a hashed load's id after it, its length
	 * in val_len). Answered: a load's state (version byte included), or
	 * a scan's chunk (val_len bytes) and then its last key (key_len). */
	uint32_t key_len, val_len;
	char data[];
};

/* -errno for an LMDB return code: errno values as they are, MDB_MAP_FULL
 * as -ENOSPC, LMDB's other codes as -EIO. */
int state_lmdb_errno(int mdb_rc);

/* New operations, next NULL, taken from `ops` where one there has the
 * room (ops may be NULL: malloc'ed). Each returns NULL when out of memory.
 * record_put: `state` is state_len (>= 1) bytes, version byte included. */
struct write_op *state_lmdb_record_put(struct write_ops *ops, MDB_dbi dbi, uint32_t shard, const char *id,
				       size_t id_len, const char *state, size_t state_len);
struct write_op *state_lmdb_record_delete(struct write_ops *ops, MDB_dbi dbi, uint32_t shard, const char *id,
					  size_t id_len);
struct write_op *state_lmdb_record_delete_shard(struct write_ops *ops, MDB_dbi dbi, uint32_t shard);
/* A shard's own record in a database of them (state_lmdb_shard_meta_write):
 * the key is the shard (4 bytes, big-endian), the value `meta`. */
struct write_op *state_lmdb_record_shard_meta(struct write_ops *ops, MDB_dbi dbi, uint32_t shard, const void *meta,
					      size_t len);
struct load_op *state_lmdb_record_load(MDB_dbi dbi, uint32_t shard, const char *id, size_t id_len);
/* after_len at most STATE_LMDB_KEY_MAX. */
struct load_op *state_lmdb_record_scan(MDB_dbi dbi, uint32_t shard, const char *after_key, size_t after_len,
				       size_t max_bytes);

/* Opens the named database `name` of the environment, creating it if it
 * is missing (a write transaction then). Returns 0 or LMDB's code. At a
 * type's open. */
int state_lmdb_open_dbi(MDB_env *env, const char *name, MDB_dbi *dbi);

/* Reads every shard record of `dbi` (state_lmdb_record_shard_meta's),
 * calling fn for each in shard order, in one read transaction on the
 * caller's thread. Returns 0, fn's error, or -errno. */
int state_lmdb_read_shard_meta(MDB_env *env, MDB_dbi dbi, state_store_meta_fn fn, void *arg);

/* Writes the batch (a list) in one transaction and commits it, the fsync
 * with it. Returns 0 or LMDB's code (then none of it is written). The
 * writer thread's. */
int state_lmdb_commit_batch(MDB_env *env, const struct write_op *batch);

/* Answers a queued load or scan from the read transaction `txn`: returns
 * the answer, `l` itself or a new allocation that replaced it (l freed).
 * The reader thread's. */
struct load_op *state_lmdb_answer(MDB_txn *txn, struct load_op *l);

#endif
