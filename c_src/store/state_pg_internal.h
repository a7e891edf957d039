/*
 * state_pg_internal.h — what state_pg.c (connection, schema, writes,
 * loads, the state_store operations) and state_pg_fence.c (claims and
 * fencing) share: the store's structures and the functions one calls in
 * the other. Nobody else includes it: state_pg.h is the store's interface.
 * Everything runs on the loop's thread.
 */
#ifndef SN_STATE_PG_INTERNAL_H
#define SN_STATE_PG_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "base/evloop.h"
#include "base/log.h"
#include "base/node_limits.h"
#include "store/pg_conn.h"
#include "store/state_store.h"

/* Writes in one transaction, at most: a bound on a batch's statements, so
 * a backlog after an outage goes out in transactions of sane size. */
#define BATCH_MAX 4096

/* Transactions out at once: while one commits, the next is on its way,
 * so the server never waits for the node between them. Their results
 * come back in the order sent. */
#define BATCHES_OUT 2

enum write_kind { W_PUT, W_DELETE, W_DELETE_SHARD, W_CANCELLED };

/* A write waiting for its batch. */
struct pg_write {
	struct pg_write *next;
	enum write_kind kind;
	uint32_t type_index;
	uint32_t shard;
	uint64_t epoch; /* the shard's claim when the write was queued */
	uint32_t id_len, state_len;
	char data[]; /* id, then state */
};

/* A claim waiting to be sent, then sent: the callback's argument. */
struct pg_claim {
	struct pg_claim *next;
	struct state_pg *s;
	uint32_t type_index, type_gen;
	uint32_t shard;
};

/* What a type knows of one of its shards. */
struct pg_shard {
	uint64_t epoch;      /* this node's claim, committed; 0: none */
	uint32_t claims_out; /* claims not yet committed: its loads wait */
	uint64_t asked_in;   /* the last batch whose fence statement asks for it */
	uint64_t asked_epoch;
	uint64_t owned_in;   /* the last batch whose fence statement found it */
};

/* A shard a batch's fence statement asks about. */
struct pg_fence_ask {
	uint32_t type_index, type_gen;
	uint32_t shard;
	uint64_t epoch;
};

struct pg_batch;

/* The argument of one fence statement: a batch's asks of one type. */
struct pg_fence_query {
	struct pg_batch *b;
	uint32_t type_index;
};

/* A load waiting to be sent, then sent: the callback's argument. */
struct pg_load {
	struct pg_load *next;
	struct state_pg *s;
	uint64_t token;
	uint32_t type_index, type_gen;
	uint32_t shard;
	uint32_t id_len;
	char id[];
};

/* A transaction out: the number of its last write, and whether a
 * statement before its COMMIT failed. */
struct pg_batch {
	struct state_pg *s;
	bool out, failed;
	uint64_t upto;
	uint64_t serial; /* the batch's number, for marks in pg_shard */
	struct pg_fence_ask *asks; /* owned; in type order */
	size_t nasks;
	struct pg_fence_query fence[NODE_TYPES_MAX];
};

struct pg_type {
	struct state_store_type base; /* first: a state_store_type is one of these */
	struct state_pg *s;
	bool in_use;
	uint32_t index, gen;
	struct state_store_callbacks cb;
	struct pg_shard *shards; /* owned; indexed by shard, nshards of them */
	uint32_t nshards;
	char name[TYPE_NAME_BUF];
};

struct state_pg {
	struct state_store base; /* first: a state_store is one of these */
	struct evloop *loop;
	const struct logger *log;
	struct pg_conn *conn;
	bool schema_ok, schema_sent;
	struct evloop_timer flush_timer;
	uint64_t last_queued; /* the number of the last write queued */
	uint64_t last_sent;   /* ... of the last write put into a batch */
	struct pg_write *writes, **writes_tail;
	struct pg_load *loads, **loads_tail;
	struct pg_claim *claims, **claims_tail; /* waiting to be sent */
	struct evloop_timer claim_retry; /* a claim the server refused goes again */
	uint64_t batch_serial;            /* batches built so far */
	struct pg_batch batches[BATCHES_OUT]; /* sent in turn, answered in turn */
	unsigned next_batch;                 /* the slot the next one takes */
	bool closing; /* in op_free: answers are not acted on */
	struct pg_type types[NODE_TYPES_MAX];
};

/* ---- shared by both files: the re-entry into state_pg.c ---- */

/* Sends what waits (claims, a write transaction, loads) at the end of this
 * loop turn, so that the writes of the turn share a transaction: arms the
 * flush timer, whose callback (state_pg.c) sends them. The one way the
 * fencing half hands control back. */
static inline void state_pg_kick(struct state_pg *s)
{
	if (!evloop_timer_armed(&s->flush_timer))
		evloop_timer_start(s->loop, &s->flush_timer, 0);
}

/* Notes the outcome of one statement of write batch b: a failure fails the
 * whole batch (logged once). */
static inline void state_pg_batch_note(struct pg_batch *b, const PGresult *res)
{
	if (b->s->closing)
		return;
	if (res == NULL || (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)) {
		if (res != NULL && PQresultStatus(res) == PGRES_FATAL_ERROR && !b->failed)
			log_error(b->s->log, "postgres: a write failed: %s", PQresultErrorMessage(res));
		b->failed = true;
	}
}

/* ---- state_pg_fence.c ---- */

/* Queues a claim of `shard` for type `t` (state_store_claim's contract):
 * its loads wait from now until it is committed. Returns 0, -EINVAL (a
 * shard number no configuration reaches) or -ENOMEM. */
int state_pg_claim(struct pg_type *t, uint32_t shard);

/* Sends the claims queued, each a transaction of its own. */
void state_pg_send_claims(struct state_pg *s);

/* The claim-retry timer's callback (arg: the store). */
void state_pg_on_claim_retry(struct evloop *loop, void *arg);

/* Finds which shards the next writes of the queue (up to BATCH_MAX) write
 * at which epochs, into b->asks (owned by b, freed when it is done), and
 * queues one fence statement per type for them: the first statements of
 * b's transaction after BEGIN. Returns 0 or -ENOMEM. */
int state_pg_send_fences(struct state_pg *s, struct pg_batch *b);

/* The epoch of this node's committed claim of `shard`, 0 if none. */
static inline uint64_t state_pg_epoch(const struct pg_type *t, uint32_t shard)
{
	return shard < t->nshards ? t->shards[shard].epoch : 0;
}

/* Whether a claim of `shard` is not yet committed (its loads wait). */
static inline bool state_pg_claim_pending(const struct pg_type *t, uint32_t shard)
{
	return shard < t->nshards && t->shards[shard].claims_out > 0;
}

#endif
