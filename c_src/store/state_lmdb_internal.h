/*
 * state_lmdb_internal.h — what state_lmdb.c (the loop's side) and
 * state_lmdb_threads.c (the writer and reader threads) share: the store's
 * structure, with which of its fields each side owns, and the threads'
 * entry points. Nothing outside these two files includes it.
 */
#ifndef SN_STATE_LMDB_INTERNAL_H
#define SN_STATE_LMDB_INTERNAL_H

#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/node_limits.h"
#include "store/state_lmdb.h"
#include "store/state_lmdb_records.h"

/* Commit outcomes waiting for the loop; consecutive ones with the same
 * status merge, so the ring fills only with alternating failures. */
#define RESULTS_MAX 64

struct commit_result {
	uint64_t upto;
	int status; /* 0 or -errno */
	int mdb_rc; /* LMDB's own code, for the log */
};

struct state_lmdb_type {
	struct state_store_type base; /* first: a state_store_type is one of these */
	struct state_lmdb *s;
	bool in_use;
	uint32_t index;
	uint32_t gen; /* bumped at each open: answers to a closed one are dropped */
	MDB_dbi dbi;
	MDB_dbi meta_dbi; /* the type's shards' own records (state_lmdb_shard_meta_write) */
	state_store_written_fn written;
	state_store_loaded_fn loaded;
	state_store_scanned_fn scanned;
	void *arg;
	char name[TYPE_NAME_BUF];
};

struct state_lmdb {
	struct state_store base; /* first: a state_store is one of these */
	MDB_env *env;
	struct evloop *loop;
	const struct logger *log;
	int lock_fd, event_fd;
	bool threads_started;
	pthread_t writer, reader;
	uint64_t last_queued; /* the loop's alone */
	struct state_lmdb_type types[NODE_TYPES_MAX];
	/* The loop's alone: this turn's writes and loads, handed to the
	 * threads in one go before the loop waits (hand_over). A thread woken
	 * at a turn's first write would commit it nearly alone while the rest
	 * of the turn queued behind, and each wake-up in the middle of a turn
	 * costs the loop a switch on a machine with few cores. */
	struct write_op *turn_writes, **turn_writes_tail;
	struct load_op *turn_loads, **turn_loads_tail;
	bool idle_added;

	/* Shared with the threads, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t writes_cv, loads_cv, results_cv;
	bool stopping;
	uint64_t taken; /* writes the writer has taken: the last one's number */
	struct write_op *writes, **writes_tail;
	struct load_op *loads, **loads_tail;
	struct load_op *answers, **answers_tail;
	struct commit_result results[RESULTS_MAX];
	unsigned results_head, results_count;
};

/* The writer thread: commits what is queued in `writes`, everything
 * taken at once in one transaction, and reports each outcome through
 * `results` and the eventfd, until `stopping` with nothing queued. `arg`
 * is the store. */
void *state_lmdb_writer_main(void *arg);

/* The reader thread: answers the loads and scans queued in `loads` from
 * one read transaction per batch, into `answers`, until `stopping` (loads
 * still queued are the store's to free). `arg` is the store. */
void *state_lmdb_reader_main(void *arg);

#endif
