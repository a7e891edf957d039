/*
 * state_pg_fence.c — fencing in the PostgreSQL store (state_pg.h,
 * state_store.h): claiming shards, and the statement that opens each write
 * transaction, which holds the owner rows of the shards it writes and
 * finds the ones this node has lost.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/byteorder.h"
#include "store/state_pg_internal.h"

/* A claim takes the next number of one sequence, so every claim of a
 * shard, by any member, under any coordinator, has a greater epoch than
 * the claims before it. */
static const struct pg_prepared claim = {"sn_claim",
	"INSERT INTO shardnode_shard_owner (type, shard, epoch) VALUES ($1, $2, nextval('shardnode_epoch')) "
	"ON CONFLICT (type, shard) DO UPDATE SET epoch = EXCLUDED.epoch RETURNING epoch", 2};

/* First in each write transaction, once per type: the shards it writes
 * that are still this node's at the epochs it writes them with. FOR SHARE
 * holds their owner rows until the commit, so a claim by another member
 * waits for it — the new owner's loads then see these writes — and a claim
 * committed before makes the row not match: those shards are fenced. */
static const struct pg_prepared fence = {"sn_fence",
	"SELECT o.shard FROM shardnode_shard_owner o "
	"JOIN unnest($2::integer[], $3::bigint[]) AS f(shard, epoch) ON o.shard = f.shard AND o.epoch = f.epoch "
	"WHERE o.type = $1 FOR SHARE OF o", 3};

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
		state_pg_kick(s); /* its loads may go */
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

void state_pg_on_claim_retry(struct evloop *loop, void *arg)
{
	(void)loop;
	state_pg_kick(arg);
}

/* Sends the claims queued, each its own transaction: one that waits for
 * an owner row never holds another (no deadlock with a batch's fence). */
void state_pg_send_claims(struct state_pg *s)
{
	while (s->claims) {
		struct pg_claim *c = s->claims;
		const struct pg_type *t = &s->types[c->type_index];
		if (t->in_use && t->gen == c->type_gen) {
			char shard[4];
			be32_write(shard, c->shard);
			const char *values[2] = {t->name, shard};
			const int lengths[2] = {0, 4}, formats[2] = {0, 1};
			if (pg_conn_query_prepared(s->conn, &claim, values, lengths, formats, 0, on_claim, c) != 0)
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

/* A shard number no configuration reaches (number_of_shards is at most a
 * million): the table indexed by it stays small. */
#define SHARD_LIMIT (1u << 24)

int state_pg_claim(struct pg_type *t, uint32_t shard)
{
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
	state_pg_kick(s);
	return 0;
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
		state_pg_batch_note(b, res); /* the batch fails as a whole */
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

int state_pg_send_fences(struct state_pg *s, struct pg_batch *b)
{
	int rc = gather_asks(s, b);
	if (rc != 0)
		return rc;
	size_t i = 0;
	while (i < b->nasks) {
		size_t j = i;
		while (j < b->nasks && b->asks[j].type_index == b->asks[i].type_index)
			j++;
		uint32_t type = b->asks[i].type_index;
		char *shards = text_array(b->asks + i, j - i, false), *epochs = text_array(b->asks + i, j - i, true);
		const char *values[3] = {s->types[type].name, shards, epochs};
		b->fence[type] = (struct pg_fence_query){.b = b, .type_index = type};
		rc = shards && epochs ? pg_conn_query_prepared(s->conn, &fence, values, NULL, NULL, 0, on_fence,
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

