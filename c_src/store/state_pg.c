/* state_pg.c — see state_pg.h. */
#include "store/state_pg.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/byteorder.h"
#include "base/node_limits.h"
#include "store/pg_conn.h"
#include "store/state_pg_internal.h"

/* The schema's version: 1 had no fencing; 2 adds the shard owners. */
#define SCHEMA_VERSION "2"

/* Any number, the same on every member: the schema is created under it. */
#define SCHEMA_LOCK_KEY "7424130"

static const char *const schema_sql[] = {
	"BEGIN",
	"SELECT pg_advisory_xact_lock(" SCHEMA_LOCK_KEY ")",
	"CREATE TABLE IF NOT EXISTS shardnode_entity_state ("
	"type text NOT NULL, id bytea NOT NULL, shard integer NOT NULL, state bytea NOT NULL, "
	"revision bigint NOT NULL DEFAULT 1, epoch bigint NOT NULL DEFAULT 0, PRIMARY KEY (type, id))",
	"CREATE INDEX IF NOT EXISTS shardnode_entity_state_shard ON shardnode_entity_state (type, shard)",
	"CREATE TABLE IF NOT EXISTS shardnode_shard_owner ("
	"type text NOT NULL, shard integer NOT NULL, epoch bigint NOT NULL, PRIMARY KEY (type, shard))",
	"CREATE SEQUENCE IF NOT EXISTS shardnode_epoch",
	"CREATE TABLE IF NOT EXISTS shardnode_schema (version integer NOT NULL)",
	"INSERT INTO shardnode_schema SELECT " SCHEMA_VERSION " WHERE NOT EXISTS (SELECT 1 FROM shardnode_schema)",
	"UPDATE shardnode_schema SET version = " SCHEMA_VERSION " WHERE version < " SCHEMA_VERSION,
	"COMMIT",
};

/* Each write applies only if its epoch is the shard's newest (whatever the
 * fence statement found: its answer comes after the writes are sent), and
 * never over a row written with a newer one. */
static const struct pg_prepared upsert = {"sn_upsert",
	"INSERT INTO shardnode_entity_state (type, id, shard, state, epoch) "
	"SELECT $1::text, $2::bytea, $3::integer, $4::bytea, $5::bigint WHERE EXISTS (SELECT 1 FROM "
	"shardnode_shard_owner WHERE type = $1::text AND shard = $3::integer AND epoch = $5::bigint) "
	"ON CONFLICT (type, id) DO UPDATE SET shard = EXCLUDED.shard, state = EXCLUDED.state, "
	"revision = shardnode_entity_state.revision + 1, epoch = EXCLUDED.epoch "
	"WHERE shardnode_entity_state.epoch <= EXCLUDED.epoch", 5};
static const struct pg_prepared delete_one = {"sn_delete",
	"DELETE FROM shardnode_entity_state WHERE type = $1::text AND id = $2::bytea AND epoch <= $4::bigint "
	"AND EXISTS (SELECT 1 FROM shardnode_shard_owner WHERE type = $1::text AND shard = $3::integer "
	"AND epoch = $4::bigint)", 4};
static const char delete_shard_sql[] = "DELETE FROM shardnode_entity_state WHERE type = $1 AND shard = $2";
static const struct pg_prepared load = {"sn_load",
	"SELECT id, state FROM shardnode_entity_state WHERE type = $1 AND id = ANY($2)", 2};


/* ---- reporting ---- */

static void report_written(struct state_pg *s, uint64_t upto, int status)
{
	for (uint32_t i = 0; i < NODE_TYPES_MAX; i++) {
		struct pg_type *t = &s->types[i];
		if (t->in_use)
			t->cb.written(t->cb.arg, upto, status);
	}
}

/* ---- the schema ---- */

/* The schema's statements before its COMMIT: a failure shows there. */
static void on_schema_step(void *arg, const PGresult *res)
{
	(void)arg;
	(void)res;
}

static void on_schema_done(void *arg, const PGresult *res)
{
	struct state_pg *s = arg;
	if (s->closing)
		return;
	s->schema_sent = false;
	if (res != NULL && PQresultStatus(res) == PGRES_COMMAND_OK) {
		s->schema_ok = true;
		state_pg_kick(s);
	} else if (res != NULL) {
		log_error(s->log, "postgres: creating the schema failed: %s", PQresultErrorMessage(res));
	}
}

static void send_schema(struct state_pg *s)
{
	size_t n = sizeof schema_sql / sizeof schema_sql[0];
	for (size_t i = 0; i < n; i++)
		if (pg_conn_query(s->conn, schema_sql[i], 0, NULL, NULL, NULL, 0,
				  i + 1 == n ? on_schema_done : on_schema_step, s) != 0)
			return; /* out of memory: tried again on the next connect */
	if (pg_conn_sync(s->conn) == 0)
		s->schema_sent = true;
}

static void on_conn_state(void *arg, bool up)
{
	struct state_pg *s = arg;
	if (up && !s->schema_ok && !s->schema_sent)
		send_schema(s);
	else if (up)
		state_pg_kick(s);
}

/* ---- writes ---- */

/* A pg_result_fn for a statement of write batch `arg` (a struct pg_batch). */
static void on_statement(void *arg, const PGresult *res)
{
	state_pg_batch_note(arg, res);
}

/* The batch's outcome reported; another may go. */
static void batch_done(struct pg_batch *b, int status)
{
	b->out = false;
	free(b->asks);
	b->asks = NULL;
	b->nasks = 0;
	state_store_metrics_committed(&b->s->base, b->upto, status, evloop_clock_ns());
	report_written(b->s, b->upto, status);
	state_pg_kick(b->s);
}

static void on_commit(void *arg, const PGresult *res)
{
	struct pg_batch *b = arg;
	if (b->s->closing)
		return;
	int status = 0;
	if (res == NULL && pg_conn_answering_unsent(b->s->conn))
		status = -ENOTCONN; /* the COMMIT never left: nothing of it ran */
	else if (res == NULL)
		status = STATE_STORE_UNCONFIRMED; /* sent: whether it committed is not known */
	else if (b->failed || PQresultStatus(res) != PGRES_COMMAND_OK)
		status = -EIO;
	batch_done(b, status);
}

/* One write as a statement of batch `b`. Returns 0 or -ENOMEM. */
static int send_write(struct state_pg *s, struct pg_batch *b, const struct pg_write *w)
{
	const struct pg_type *t = &s->types[w->type_index];
	char shard[4], epoch[8];
	be32_write(shard, w->shard);
	be64_write(epoch, w->epoch);
	/* The shard travels as a binary int4 and the epoch as a binary int8
	 * (big-endian), id and state as bytea, the type's name as text. */
	if (w->kind == W_DELETE_SHARD) {
		const char *values[2] = {t->name, shard};
		const int lengths[2] = {0, 4}, formats[2] = {0, 1};
		return pg_conn_query(s->conn, delete_shard_sql, 2, values, lengths, formats, 0, on_statement, b);
	}
	if (w->kind == W_DELETE) {
		const char *values[4] = {t->name, w->data, shard, epoch};
		const int lengths[4] = {0, (int)w->id_len, 4, 8}, formats[4] = {0, 1, 1, 1};
		return pg_conn_query_prepared(s->conn, &delete_one, values, lengths, formats, 0, on_statement, b);
	}
	const char *values[5] = {t->name, w->data, shard, w->data + w->id_len, epoch};
	const int lengths[5] = {0, (int)w->id_len, 4, (int)w->state_len, 8}, formats[5] = {0, 1, 1, 1, 1};
	return pg_conn_query_prepared(s->conn, &upsert, values, lengths, formats, 0, on_statement, b);
}

/* Sends the writes queued (at most BATCH_MAX) as one transaction, in the
 * free batch slot `b`: BEGIN, the fence statements, the writes, COMMIT. */
static void send_batch(struct state_pg *s, struct pg_batch *b)
{
	*b = (struct pg_batch){.s = s, .out = true, .serial = ++s->batch_serial};
	int rc = pg_conn_query(s->conn, "BEGIN", 0, NULL, NULL, NULL, 0, on_statement, b);
	if (rc == 0)
		rc = state_pg_send_fences(s, b);
	size_t n = 0;
	while (rc == 0 && s->writes && n < BATCH_MAX) {
		struct pg_write *w = s->writes;
		if (w->kind != W_CANCELLED)
			rc = send_write(s, b, w);
		if (rc != 0)
			break;
		s->writes = w->next;
		if (s->writes == NULL)
			s->writes_tail = &s->writes;
		free(w);
		s->last_sent++;
		n++;
	}
	b->upto = s->last_sent;
	if (rc == 0)
		rc = pg_conn_query(s->conn, "COMMIT", 0, NULL, NULL, NULL, 0, on_commit, b);
	if (rc == 0)
		rc = pg_conn_sync(s->conn);
	if (rc != 0) {
		/* Out of memory half-way: no COMMIT will answer. The batch is
		 * reported failed now (the statements sent may still run in a
		 * transaction a later batch commits: malloc failing is the end
		 * of the line anyway). */
		log_error(s->log, "postgres: out of memory building a batch");
		batch_done(b, -ENOMEM);
	}
}

/* ---- loads ---- */

/* Loads of one type that go out as one query (a shard's remembered
 * entities start together): at most this many ids in it, so matching the
 * rows to the loads stays cheap. */
#define LOAD_BATCH 256

/* PostgreSQL's type oid of bytea, for the binary array of ids. */
#define BYTEA_OID 17

struct pg_load_group {
	struct state_pg *s;
	struct pg_load *loads; /* owned */
};

static void answer(struct state_pg *s, const struct pg_load *l, int found, const char *state, size_t len)
{
	const struct pg_type *t = &s->types[l->type_index];
	if (!s->closing && t->in_use && t->gen == l->type_gen)
		t->cb.loaded(t->cb.arg, l->token, found, state, len);
}

/* The rows of a group's query: each load gets its id's row, or not found. */
static void on_load_group(void *arg, const PGresult *res)
{
	struct pg_load_group *g = arg;
	struct state_pg *s = g->s;
	bool ok = res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK;
	int rows = ok ? PQntuples(res) : 0;
	while (g->loads) {
		struct pg_load *l = g->loads;
		g->loads = l->next;
		int row = -1;
		for (int i = 0; i < rows && row < 0; i++)
			if ((size_t)PQgetlength(res, i, 0) == l->id_len && !PQgetisnull(res, i, 1) &&
			    memcmp(PQgetvalue(res, i, 0), l->id, l->id_len) == 0)
				row = i;
		if (!ok)
			answer(s, l, res == NULL ? -ECONNRESET : -EIO, NULL, 0);
		else if (row < 0)
			answer(s, l, 0, NULL, 0);
		else
			answer(s, l, 1, PQgetvalue(res, row, 1), (size_t)PQgetlength(res, row, 1));
		free(l);
	}
	free(g);
}

/* The ids of the group as a binary bytea[] parameter: dimensions, flags,
 * element type, then each element's length and bytes, all big-endian.
 * Returns a malloc'ed array (*len bytes), or NULL. */
static char *id_array(const struct pg_load *loads, int *len)
{
	size_t n = 0, bytes = 20;
	for (const struct pg_load *l = loads; l != NULL; l = l->next, n++)
		bytes += 4 + l->id_len;
	if (bytes > INT32_MAX)
		return NULL;
	char *a = malloc(bytes);
	if (a == NULL)
		return NULL;
	be32_write(a, 1);                 /* dimensions */
	be32_write(a + 4, 0);             /* no NULL in it */
	be32_write(a + 8, BYTEA_OID);     /* element type */
	be32_write(a + 12, (uint32_t)n);  /* the dimension's length */
	be32_write(a + 16, 1);            /* and lower bound */
	char *p = a + 20;
	for (const struct pg_load *l = loads; l != NULL; l = l->next) {
		be32_write(p, l->id_len);
		memcpy(p + 4, l->id, l->id_len);
		p += 4 + l->id_len;
	}
	*len = (int)bytes;
	return a;
}

/* Whether a load may go: its shard's claims are committed (a load of a
 * closed type goes: its answer is dropped). */
static bool load_ready(const struct state_pg *s, const struct pg_load *l)
{
	const struct pg_type *t = &s->types[l->type_index];
	return !t->in_use || t->gen != l->type_gen || !state_pg_claim_pending(t, l->shard);
}

/* Takes the next loads that may go of the first such one's type (at most
 * LOAD_BATCH) off the queue, in order. Returns NULL if none may. */
static struct pg_load *take_group(struct state_pg *s)
{
	struct pg_load *head = NULL, **tail = &head, **at = &s->loads;
	size_t n = 0;
	bool typed = false;
	uint32_t type = 0;
	while (*at && n < LOAD_BATCH) {
		struct pg_load *l = *at;
		if (!load_ready(s, l) || (typed && l->type_index != type)) {
			at = &l->next;
			continue;
		}
		typed = true;
		type = l->type_index;
		*at = l->next;
		l->next = NULL;
		*tail = l;
		tail = &l->next;
		n++;
	}
	/* The queue's tail, wherever the taking left it. */
	s->loads_tail = &s->loads;
	while (*s->loads_tail)
		s->loads_tail = &(*s->loads_tail)->next;
	return head;
}

/* Puts a group's loads back at the queue's head (sending it failed). */
static void put_back(struct state_pg *s, struct pg_load *group)
{
	struct pg_load **tail = &group;
	while (*tail)
		tail = &(*tail)->next;
	*tail = s->loads;
	s->loads = group;
	s->loads_tail = &s->loads;
	while (*s->loads_tail)
		s->loads_tail = &(*s->loads_tail)->next;
}

/* Sends the queued loads, one query per group of a type's ids. */
static void send_loads(struct state_pg *s)
{
	bool sent = false;
	while (s->loads) {
		struct pg_load *loads = take_group(s);
		if (loads == NULL)
			break; /* the rest wait for claims */
		struct pg_load_group *g = malloc(sizeof *g);
		int len = 0;
		char *ids = g ? id_array(loads, &len) : NULL;
		const char *values[2] = {s->types[loads->type_index].name, ids};
		const int lengths[2] = {0, len};
		const int formats[2] = {0, 1};
		if (ids == NULL || pg_conn_query_prepared(s->conn, &load, values, lengths, formats, 1, on_load_group, g) != 0) {
			free(ids);
			free(g);
			put_back(s, loads); /* out of memory: they go on the next kick */
			break;
		}
		free(ids);
		*g = (struct pg_load_group){.s = s, .loads = loads};
		sent = true;
	}
	if (sent)
		pg_conn_sync(s->conn);
}

/* ---- sending ---- */

static void on_flush(struct evloop *loop, void *arg)
{
	(void)loop;
	struct state_pg *s = arg;
	if (!pg_conn_up(s->conn) || !s->schema_ok)
		return; /* on_conn_state / on_schema_done kick again */
	if (s->claims != NULL && !evloop_timer_armed(&s->claim_retry))
		state_pg_send_claims(s); /* before the loads that wait for them */
	struct pg_batch *b = &s->batches[s->next_batch];
	if (!b->out && s->writes != NULL) {
		send_batch(s, b);
		s->next_batch = (s->next_batch + 1) % BATCHES_OUT;
	}
	if (s->loads != NULL)
		send_loads(s);
}


/* ---- the state_store operations ---- */

static struct pg_type *pg_type(struct state_store_type *t)
{
	return (struct pg_type *)(void *)t;
}

static struct state_pg *pg_store(const struct state_store *s)
{
	return (struct state_pg *)(void *)(uintptr_t)s;
}

static void op_free(struct state_store *base)
{
	struct state_pg *s = pg_store(base);
	s->closing = true;
	pg_conn_free(s->conn); /* answers what is out; nothing acts on it now */
	evloop_timer_stop(s->loop, &s->flush_timer);
	evloop_timer_stop(s->loop, &s->claim_retry);
	while (s->claims) {
		struct pg_claim *c = s->claims;
		s->claims = c->next;
		free(c);
	}
	for (uint32_t i = 0; i < NODE_TYPES_MAX; i++)
		free(s->types[i].shards);
	while (s->writes) {
		struct pg_write *w = s->writes;
		s->writes = w->next;
		free(w);
	}
	while (s->loads) {
		struct pg_load *l = s->loads;
		s->loads = l->next;
		free(l);
	}
	free(s);
}

static struct state_store_type *op_type_open(struct state_store *base, const char *type,
					     const struct state_store_callbacks *cb, int *err)
{
	struct state_pg *s = pg_store(base);
	size_t len = strlen(type);
	struct pg_type *slot = NULL;
	for (uint32_t i = 0; i < NODE_TYPES_MAX; i++) {
		struct pg_type *t = &s->types[i];
		if (t->in_use && strcmp(t->name, type) == 0)
			slot = NULL, i = NODE_TYPES_MAX; /* open already */
		else if (!t->in_use && slot == NULL)
			slot = t;
	}
	if (slot == NULL || len >= TYPE_NAME_BUF) {
		*err = -EINVAL;
		return NULL;
	}
	memcpy(slot->name, type, len + 1);
	slot->in_use = true;
	slot->gen++;
	free(slot->shards); /* claims were the type's before: it claims again */
	slot->shards = NULL;
	slot->nshards = 0;
	slot->cb = *cb;
	*err = 0;
	return &slot->base;
}

static void op_type_close(struct state_store_type *base)
{
	struct pg_type *t = pg_type(base);
	t->in_use = false;
	/* The name stays: its queued writes still go out under it. */
}

static int op_write(struct state_store_type *base, uint32_t shard, const char *id, size_t id_len,
		    const char *state, size_t state_len, uint64_t *seq)
{
	struct pg_type *t = pg_type(base);
	struct state_pg *s = t->s;
	if (state == NULL)
		state_len = 0;
	else if (state_len < 1)
		return -EINVAL;
	if (id_len > INT32_MAX || state_len > INT32_MAX)
		return -ENOMEM;
	uint64_t epoch = state_pg_epoch(t, shard);
	if (epoch == 0)
		return -ESTALE; /* not claimed, or claimed by another member since */
	struct pg_write *w = malloc(sizeof *w + id_len + state_len);
	if (w == NULL)
		return -ENOMEM;
	*w = (struct pg_write){.kind = state ? W_PUT : W_DELETE, .type_index = t->index, .shard = shard,
			       .epoch = epoch, .id_len = (uint32_t)id_len, .state_len = (uint32_t)state_len};
	memcpy(w->data, id, id_len);
	if (state_len > 0)
		memcpy(w->data + id_len, state, state_len);
	*s->writes_tail = w;
	s->writes_tail = &w->next;
	*seq = ++s->last_queued;
	state_store_metrics_queued(&s->base, *seq, evloop_now_ns(s->loop));
	state_pg_kick(s);
	return 0;
}

static int op_delete_shard(struct state_store_type *base, uint32_t shard, uint64_t *seq)
{
	struct pg_type *t = pg_type(base);
	struct state_pg *s = t->s;
	struct pg_write *w = malloc(sizeof *w);
	if (w == NULL)
		return -ENOMEM;
	*w = (struct pg_write){.kind = W_DELETE_SHARD, .type_index = t->index, .shard = shard};
	*s->writes_tail = w;
	s->writes_tail = &w->next;
	*seq = ++s->last_queued;
	state_store_metrics_queued(&s->base, *seq, evloop_now_ns(s->loop));
	state_pg_kick(s);
	return 0;
}

static int op_load(struct state_store_type *base, uint32_t shard, const char *id, size_t id_len, uint64_t token)
{
	/* An entity's record is found by its id alone; the shard says which
	 * claim the load waits for. */
	struct pg_type *t = pg_type(base);
	struct state_pg *s = t->s;
	if (id_len > INT32_MAX)
		return -ENOMEM;
	struct pg_load *l = malloc(sizeof *l + id_len);
	if (l == NULL)
		return -ENOMEM;
	*l = (struct pg_load){.s = s, .token = token, .type_index = t->index, .type_gen = t->gen,
			      .shard = shard, .id_len = (uint32_t)id_len};
	memcpy(l->id, id, id_len);
	*s->loads_tail = l;
	s->loads_tail = &l->next;
	state_pg_kick(s);
	return 0;
}

static int op_scan(struct state_store_type *t, uint32_t shard, const char *after_key, size_t after_len,
		   size_t max_bytes, uint64_t token)
{
	(void)t, (void)shard, (void)after_key, (void)after_len, (void)max_bytes, (void)token;
	return -EOPNOTSUPP;
}

static uint64_t op_cancel_queued(struct state_store_type *base)
{
	struct pg_type *t = pg_type(base);
	uint64_t waiting = 0; /* writes in no batch yet: the last numbers */
	for (struct pg_write *w = t->s->writes; w != NULL; w = w->next, waiting++)
		if (w->type_index == t->index)
			w->kind = W_CANCELLED;
	return t->s->last_queued - waiting;
}

static uint64_t op_last_queued(const struct state_store *base)
{
	return pg_store(base)->last_queued;
}

static const char *op_unreachable(const struct state_store *base)
{
	return pg_conn_up(pg_store(base)->conn) ? NULL : "the PostgreSQL server is not connected";
}

static int op_claim(struct state_store_type *base, uint32_t shard)
{
	return state_pg_claim(pg_type(base), shard);
}

static const struct state_store_ops pg_ops = {
	.free = op_free,
	.type_open = op_type_open,
	.type_close = op_type_close,
	.write = op_write,
	.delete_shard = op_delete_shard,
	.load = op_load,
	.scan = op_scan,
	.cancel_queued = op_cancel_queued,
	.last_queued = op_last_queued,
	.unreachable = op_unreachable,
	.claim = op_claim,
};

struct state_pg *state_pg_open(const char *conninfo, struct evloop *loop, const struct logger *log, int *err)
{
	struct state_pg *s = calloc(1, sizeof *s);
	if (s == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	s->base.ops = &pg_ops;
	s->base.shared = true;
	s->loop = loop;
	s->log = log;
	s->writes_tail = &s->writes;
	s->loads_tail = &s->loads;
	s->claims_tail = &s->claims;
	evloop_timer_init(&s->flush_timer, on_flush, s);
	evloop_timer_init(&s->claim_retry, state_pg_on_claim_retry, s);
	for (uint32_t i = 0; i < NODE_TYPES_MAX; i++)
		s->types[i] = (struct pg_type){.base = {.store = &s->base}, .s = s, .index = i};
	s->conn = pg_conn_new(loop, log, conninfo, on_conn_state, s, err);
	if (s->conn == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

void state_pg_set_answer_timeout(struct state_pg *s, uint32_t ms) { pg_conn_set_answer_timeout(s->conn, ms); }

struct state_store *state_pg_store(struct state_pg *s)
{
	return &s->base;
}
