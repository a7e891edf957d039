/* state_pg.c — see state_pg.h. */
#include "store/state_pg.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/byteorder.h"
#include "base/node_limits.h"
#include "store/pg_conn.h"

/* The schema's version: 1 had no fencing; 2 adds the shard owners. */
#define SCHEMA_VERSION "2"

/* Writes in one transaction, at most: a bound on a batch's statements, so
 * a backlog after an outage goes out in transactions of sane size. */
#define BATCH_MAX 4096

/* Transactions out at once: while one commits, the next is on its way,
 * so the server never waits for the node between them. Their results
 * come back in the order sent. */
#define BATCHES_OUT 2

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

/* A claim takes the next number of one sequence, so every claim of a
 * shard, by any member, under any coordinator, has a greater epoch than
 * the claims before it. */
static const char claim_sql[] =
	"INSERT INTO shardnode_shard_owner (type, shard, epoch) VALUES ($1, $2, nextval('shardnode_epoch')) "
	"ON CONFLICT (type, shard) DO UPDATE SET epoch = EXCLUDED.epoch RETURNING epoch";

/* First in each write transaction, once per type: the shards it writes
 * that are still this node's at the epochs it writes them with. FOR SHARE
 * holds their owner rows until the commit, so a claim by another member
 * waits for it — the new owner's loads then see these writes — and a claim
 * committed before makes the row not match: those shards are fenced. */
static const char fence_sql[] =
	"SELECT o.shard FROM shardnode_shard_owner o "
	"JOIN unnest($2::integer[], $3::bigint[]) AS f(shard, epoch) ON o.shard = f.shard AND o.epoch = f.epoch "
	"WHERE o.type = $1 FOR SHARE OF o";

/* Each write applies only if its epoch is the shard's newest (whatever the
 * fence statement found: its answer comes after the writes are sent), and
 * never over a row written with a newer one. */
static const char upsert_sql[] =
	"INSERT INTO shardnode_entity_state (type, id, shard, state, epoch) "
	"SELECT $1::text, $2::bytea, $3::integer, $4::bytea, $5::bigint WHERE EXISTS (SELECT 1 FROM "
	"shardnode_shard_owner WHERE type = $1::text AND shard = $3::integer AND epoch = $5::bigint) "
	"ON CONFLICT (type, id) DO UPDATE SET shard = EXCLUDED.shard, state = EXCLUDED.state, "
	"revision = shardnode_entity_state.revision + 1, epoch = EXCLUDED.epoch "
	"WHERE shardnode_entity_state.epoch <= EXCLUDED.epoch";
static const char delete_sql[] =
	"DELETE FROM shardnode_entity_state WHERE type = $1::text AND id = $2::bytea AND epoch <= $4::bigint "
	"AND EXISTS (SELECT 1 FROM shardnode_shard_owner WHERE type = $1::text AND shard = $3::integer "
	"AND epoch = $4::bigint)";
static const char delete_shard_sql[] = "DELETE FROM shardnode_entity_state WHERE type = $1 AND shard = $2";
static const char load_sql[] = "SELECT id, state FROM shardnode_entity_state WHERE type = $1 AND id = ANY($2)";

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

static void kick(struct state_pg *s);

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
		kick(s);
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
		kick(s);
}

/* ---- writes ---- */

static void on_statement(void *arg, const PGresult *res)
{
	struct pg_batch *b = arg;
	if (b->s->closing)
		return;
	if (res == NULL || (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)) {
		if (res != NULL && PQresultStatus(res) == PGRES_FATAL_ERROR && !b->failed)
			log_error(b->s->log, "postgres: a write failed: %s", PQresultErrorMessage(res));
		b->failed = true;
	}
}

/* The batch's outcome reported; another may go. */
static void batch_done(struct pg_batch *b, int status)
{
	b->out = false;
	free(b->asks);
	b->asks = NULL;
	b->nasks = 0;
	report_written(b->s, b->upto, status);
	kick(b->s);
}

static void on_commit(void *arg, const PGresult *res)
{
	struct pg_batch *b = arg;
	if (b->s->closing)
		return;
	int status = 0;
	if (res == NULL)
		status = -ECONNRESET; /* whether it committed is not known */
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
		return pg_conn_query(s->conn, delete_sql, 4, values, lengths, formats, 0, on_statement, b);
	}
	const char *values[5] = {t->name, w->data, shard, w->data + w->id_len, epoch};
	const int lengths[5] = {0, (int)w->id_len, 4, (int)w->state_len, 8}, formats[5] = {0, 1, 1, 1, 1};
	return pg_conn_query(s->conn, upsert_sql, 5, values, lengths, formats, 0, on_statement, b);
}

/* ---- fencing a batch ---- */

/* The claim of an ask's shard is lost: the type hears it (once: the
 * shard has no epoch any more, so its next writes are refused at once). */
static void fence_lost(struct state_pg *s, const struct pg_fence_ask *a)
{
	struct pg_type *t = &s->types[a->type_index];
	if (!t->in_use || t->gen != a->type_gen || a->shard >= t->nshards)
		return;
	struct pg_shard *sh = &t->shards[a->shard];
	if (sh->epoch != a->epoch)
		return; /* claimed again since */
	sh->epoch = 0;
	log_warn(s->log, "postgres: %s shard %u was claimed by another member (epoch %llu is stale): "
		 "its writes from here are refused", t->name, a->shard, (unsigned long long)a->epoch);
	if (t->cb.fenced)
		t->cb.fenced(t->cb.arg, a->shard);
}

/* The fence statement's rows: the shards of its type still this node's. */
static void on_fence(void *arg, const PGresult *res)
{
	struct pg_fence_query *q = arg;
	struct pg_batch *b = q->b;
	struct state_pg *s = b->s;
	if (s->closing)
		return;
	if (res == NULL || PQresultStatus(res) != PGRES_TUPLES_OK) {
		on_statement(b, res); /* the batch fails as a whole */
		return;
	}
	struct pg_type *t = &s->types[q->type_index];
	int rows = PQntuples(res);
	/* Rows mark their shards, then every ask not marked is lost. */
	for (int i = 0; i < rows; i++) {
		unsigned long shard = strtoul(PQgetvalue(res, i, 0), NULL, 10);
		if (shard < t->nshards)
			t->shards[shard].owned_in = b->serial;
	}
	for (size_t i = 0; i < b->nasks; i++) {
		const struct pg_fence_ask *a = &b->asks[i];
		if (a->type_index != q->type_index)
			continue;
		if (a->shard >= t->nshards || t->shards[a->shard].owned_in != b->serial)
			fence_lost(s, a);
	}
}

static int ask_order(const void *x, const void *y)
{
	const struct pg_fence_ask *a = x, *b = y;
	return a->type_index < b->type_index ? -1 : a->type_index > b->type_index;
}

/* The shards the next writes of the queue (at most BATCH_MAX) write, at
 * the epochs they carry, in type order, into b->asks. Returns 0 or
 * -ENOMEM. */
static int gather_asks(struct state_pg *s, struct pg_batch *b)
{
	size_t n = 0;
	for (const struct pg_write *w = s->writes; w != NULL && n < BATCH_MAX; w = w->next)
		n++;
	b->asks = malloc(n * sizeof *b->asks + 1);
	if (b->asks == NULL)
		return -ENOMEM;
	n = 0;
	for (const struct pg_write *w = s->writes; w != NULL && n < BATCH_MAX; w = w->next, n++) {
		struct pg_type *t = &s->types[w->type_index];
		if ((w->kind != W_PUT && w->kind != W_DELETE) || w->shard >= t->nshards)
			continue;
		struct pg_shard *sh = &t->shards[w->shard];
		if (sh->asked_in == b->serial && sh->asked_epoch == w->epoch)
			continue;
		sh->asked_in = b->serial;
		sh->asked_epoch = w->epoch;
		b->asks[b->nasks++] = (struct pg_fence_ask){.type_index = w->type_index, .type_gen = t->gen,
							    .shard = w->shard, .epoch = w->epoch};
	}
	qsort(b->asks, b->nasks, sizeof *b->asks, ask_order);
	return 0;
}

/* `{a,b,c}`: an array parameter in text form. Returns a malloc'ed string,
 * or NULL. */
static char *text_array(const struct pg_fence_ask *asks, size_t n, bool epochs)
{
	size_t cap = 3 + n * 21; /* a uint64 has at most 20 digits, then a comma */
	char *a = malloc(cap);
	if (a == NULL)
		return NULL;
	size_t at = 0;
	a[at++] = '{';
	for (size_t i = 0; i < n; i++)
		at += (size_t)snprintf(a + at, cap - at, "%s%llu", i ? "," : "",
				       epochs ? (unsigned long long)asks[i].epoch : (unsigned long long)asks[i].shard);
	a[at++] = '}';
	a[at] = 0;
	return a;
}

/* One fence statement per type the batch writes. Returns 0 or -ENOMEM. */
static int send_fences(struct state_pg *s, struct pg_batch *b)
{
	size_t i = 0;
	while (i < b->nasks) {
		size_t j = i;
		while (j < b->nasks && b->asks[j].type_index == b->asks[i].type_index)
			j++;
		uint32_t type = b->asks[i].type_index;
		char *shards = text_array(b->asks + i, j - i, false), *epochs = text_array(b->asks + i, j - i, true);
		const char *values[3] = {s->types[type].name, shards, epochs};
		b->fence[type] = (struct pg_fence_query){.b = b, .type_index = type};
		int rc = shards && epochs ? pg_conn_query(s->conn, fence_sql, 3, values, NULL, NULL, 0, on_fence,
							  &b->fence[type])
					  : -ENOMEM;
		free(shards);
		free(epochs);
		if (rc != 0)
			return rc;
		i = j;
	}
	return 0;
}

/* Sends the writes queued (at most BATCH_MAX) as one transaction, in the
 * free batch slot `b`: BEGIN, the fence statements, the writes, COMMIT. */
static void send_batch(struct state_pg *s, struct pg_batch *b)
{
	*b = (struct pg_batch){.s = s, .out = true, .serial = ++s->batch_serial};
	int rc = gather_asks(s, b);
	if (rc == 0)
		rc = pg_conn_query(s->conn, "BEGIN", 0, NULL, NULL, NULL, 0, on_statement, b);
	if (rc == 0)
		rc = send_fences(s, b);
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

/* ---- claims ---- */

/* A claim the server refused (not a lost connection, which the reconnect
 * answers) is sent again after this long. */
#define CLAIM_RETRY_MS 1000

static void on_claim(void *arg, const PGresult *res)
{
	struct pg_claim *c = arg;
	struct state_pg *s = c->s;
	struct pg_type *t = &s->types[c->type_index];
	if (s->closing || !t->in_use || t->gen != c->type_gen) {
		free(c);
		return;
	}
	if (res != NULL && PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
		struct pg_shard *sh = &t->shards[c->shard];
		uint64_t epoch = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
		if (epoch > sh->epoch)
			sh->epoch = epoch;
		sh->claims_out--;
		uint32_t shard = c->shard;
		free(c);
		log_debug(s->log, "postgres: %s shard %u claimed, epoch %llu", t->name, shard,
			  (unsigned long long)epoch);
		if (t->cb.claimed)
			t->cb.claimed(t->cb.arg, shard);
		kick(s); /* its loads may go */
		return;
	}
	/* Not claimed: again, after the reconnect (res NULL: it kicks) or a
	 * while (the server refused it). */
	if (res != NULL) {
		log_error(s->log, "postgres: claiming %s shard %u failed: %s", t->name, c->shard,
			  PQresultErrorMessage(res));
		if (!evloop_timer_armed(&s->claim_retry))
			evloop_timer_start(s->loop, &s->claim_retry, CLAIM_RETRY_MS);
	}
	c->next = NULL;
	*s->claims_tail = c;
	s->claims_tail = &c->next;
}

static void on_claim_retry(struct evloop *loop, void *arg)
{
	(void)loop;
	kick(arg);
}

/* Sends the claims queued, each its own transaction: one that waits for
 * an owner row never holds another (no deadlock with a batch's fence). */
static void send_claims(struct state_pg *s)
{
	while (s->claims) {
		struct pg_claim *c = s->claims;
		const struct pg_type *t = &s->types[c->type_index];
		if (t->in_use && t->gen == c->type_gen) {
			char shard[4];
			be32_write(shard, c->shard);
			const char *values[2] = {t->name, shard};
			const int lengths[2] = {0, 4}, formats[2] = {0, 1};
			if (pg_conn_query(s->conn, claim_sql, 2, values, lengths, formats, 0, on_claim, c) != 0)
				return; /* out of memory: on the next kick */
			(void)pg_conn_sync(s->conn); /* failing, the next sync sends it */
		}
		s->claims = c->next;
		if (s->claims == NULL)
			s->claims_tail = &s->claims;
		if (!(t->in_use && t->gen == c->type_gen))
			free(c); /* its type closed */
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
	return !t->in_use || t->gen != l->type_gen || l->shard >= t->nshards || t->shards[l->shard].claims_out == 0;
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
		if (ids == NULL || pg_conn_query(s->conn, load_sql, 2, values, lengths, formats, 1, on_load_group, g) != 0) {
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
		send_claims(s); /* before the loads that wait for them */
	struct pg_batch *b = &s->batches[s->next_batch];
	if (!b->out && s->writes != NULL) {
		send_batch(s, b);
		s->next_batch = (s->next_batch + 1) % BATCHES_OUT;
	}
	if (s->loads != NULL)
		send_loads(s);
}

/* Sends what waits at the end of this loop turn, so that the writes of
 * the turn share a transaction. */
static void kick(struct state_pg *s)
{
	if (!evloop_timer_armed(&s->flush_timer))
		evloop_timer_start(s->loop, &s->flush_timer, 0);
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
	uint64_t epoch = shard < t->nshards ? t->shards[shard].epoch : 0;
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
	kick(s);
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
	kick(s);
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
	kick(s);
	return 0;
}

static int op_scan(struct state_store_type *t, uint32_t shard, const char *after_key, size_t after_len,
		   size_t max_bytes, uint64_t token)
{
	(void)t, (void)shard, (void)after_key, (void)after_len, (void)max_bytes, (void)token;
	return -EOPNOTSUPP;
}

static void op_cancel_queued(struct state_store_type *base)
{
	struct pg_type *t = pg_type(base);
	for (struct pg_write *w = t->s->writes; w != NULL; w = w->next)
		if (w->type_index == t->index)
			w->kind = W_CANCELLED;
}

static uint64_t op_last_queued(const struct state_store *base)
{
	return pg_store(base)->last_queued;
}

/* A shard number no configuration reaches (number_of_shards is at most a
 * million): the table indexed by it stays small. */
#define SHARD_LIMIT (1u << 24)

static int op_claim(struct state_store_type *base, uint32_t shard)
{
	struct pg_type *t = pg_type(base);
	struct state_pg *s = t->s;
	if (shard >= SHARD_LIMIT)
		return -EINVAL;
	if (shard >= t->nshards) {
		uint32_t n = t->nshards ? t->nshards : 64;
		while (n <= shard)
			n *= 2;
		struct pg_shard *grown = realloc(t->shards, n * sizeof *grown);
		if (grown == NULL)
			return -ENOMEM;
		memset(grown + t->nshards, 0, (n - t->nshards) * sizeof *grown);
		t->shards = grown;
		t->nshards = n;
	}
	struct pg_claim *c = malloc(sizeof *c);
	if (c == NULL)
		return -ENOMEM;
	*c = (struct pg_claim){.s = s, .type_index = t->index, .type_gen = t->gen, .shard = shard};
	*s->claims_tail = c;
	s->claims_tail = &c->next;
	t->shards[shard].claims_out++;
	kick(s);
	return 0;
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
	evloop_timer_init(&s->claim_retry, on_claim_retry, s);
	for (uint32_t i = 0; i < NODE_TYPES_MAX; i++)
		s->types[i] = (struct pg_type){.base = {.store = &s->base}, .s = s, .index = i};
	s->conn = pg_conn_new(loop, log, conninfo, on_conn_state, s, err);
	if (s->conn == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

struct state_store *state_pg_store(struct state_pg *s)
{
	return &s->base;
}
