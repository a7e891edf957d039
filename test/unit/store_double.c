/*
 * store_double.c — the in-memory state store of the unit harness
 * (store_double.h).
 *
 * Writes are numbered as they are queued and applied to the records when
 * committed; every answer (load, scan, commit, claim, fence) is an event
 * in one queue, in the order it was caused, taken off by a timer of 0 ms —
 * so, as with a real store, nothing is answered during the call that asks
 * for it. A held kind of event stays in the queue, keeping its place, until
 * store_double_release.
 */
#include "store_double.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#define DOUBLE_MAX_SHARDS 256

enum event_kind { EV_COMMIT, EV_LOAD, EV_SCAN, EV_CLAIM, EV_FENCE };

struct dtype {
	struct state_store_type base; /* first: the ops get it back */
	struct store_double *d;
	struct state_store_callbacks cb;
	uint64_t epoch[DOUBLE_MAX_SHARDS]; /* a shared double: this type's claim of each shard; 0: none */
	struct dtype *next;
};

struct event {
	struct event *next;
	enum event_kind kind;
	struct dtype *t; /* NULL for a commit: every type hears it */
	uint64_t token;  /* load, scan; a commit: the seq it reports up to */
	uint32_t shard;
	size_t id_len;
	char id[];
};

/* A queued or stored record; state NULL: a deletion queued. */
struct record {
	struct record *next;
	uint64_t seq;     /* queued: its number */
	uint64_t epoch;   /* queued, shared: the writer's claim of the shard */
	bool whole_shard; /* queued: delete every record of the shard */
	bool meta;        /* the shard's own record (shard_meta_write), no entity's */
	uint32_t shard;
	char *state;
	size_t state_len, id_len;
	char id[];
};

struct store_double {
	struct state_store base; /* first: the ops get it back */
	struct state_store_ops ops; /* double_ops, without claim when not shared */
	struct evloop *loop;
	struct evloop_timer timer;
	struct store_double_knobs knobs;
	struct store_double_counts counts;
	struct dtype *types;
	struct event *head, *tail;
	struct record *queued, *queued_tail; /* in seq order */
	struct record *stored;
	uint64_t seq;
	uint64_t newest_epoch[DOUBLE_MAX_SHARDS];
};

static struct dtype *dtype_of(struct state_store_type *t) { return (struct dtype *)t; }
static struct store_double *double_of(struct state_store *s) { return (struct store_double *)s; }

static void push(struct store_double *d, struct event *e)
{
	e->next = NULL;
	if (d->tail)
		d->tail->next = e;
	else
		d->head = e;
	d->tail = e;
	evloop_timer_start(d->loop, &d->timer, 0);
}

static struct event *event_new(enum event_kind kind, struct dtype *t, uint64_t token, uint32_t shard, const char *id,
			       size_t id_len)
{
	struct event *e = calloc(1, sizeof *e + id_len);
	cr_assert_not_null(e);
	*e = (struct event){.kind = kind, .t = t, .token = token, .shard = shard, .id_len = id_len};
	if (id_len)
		memcpy(e->id, id, id_len);
	return e;
}

static struct record **find_record(struct store_double *d, uint32_t shard, const char *id, size_t id_len, bool meta)
{
	struct record **p = &d->stored;
	while (*p && !((*p)->shard == shard && (*p)->meta == meta && (*p)->id_len == id_len &&
		       memcmp((*p)->id, id, id_len) == 0))
		p = &(*p)->next;
	return p;
}

static struct record **find_stored(struct store_double *d, uint32_t shard, const char *id, size_t id_len)
{
	return find_record(d, shard, id, id_len, false);
}

static void record_free(struct record *r)
{
	if (r) {
		free(r->state);
		free(r);
	}
}

/* Applies one committed write to the records. */
static void apply(struct store_double *d, struct record *w)
{
	if (w->whole_shard) {
		for (struct record **p = &d->stored; *p;) {
			if ((*p)->shard == w->shard && !(*p)->meta) {
				struct record *gone = *p;
				*p = gone->next;
				record_free(gone);
			} else {
				p = &(*p)->next;
			}
		}
		record_free(w);
		return;
	}
	struct record **p = find_record(d, w->shard, w->id, w->id_len, w->meta);
	if (*p) {
		struct record *old = *p;
		*p = old->next;
		record_free(old);
	}
	if (w->state == NULL) {
		record_free(w);
		return;
	}
	w->next = d->stored;
	d->stored = w;
}

/* Commits the writes queued up to `upto` and tells every type. */
static void commit(struct store_double *d, uint64_t upto)
{
	if (upto <= d->counts.committed_upto)
		return;
	int status = d->knobs.commit_error;
	while (d->queued && d->queued->seq <= upto) {
		struct record *w = d->queued;
		d->queued = w->next;
		if (d->queued == NULL)
			d->queued_tail = NULL;
		/* A shared store applies a write only under the shard's newest
		 * claim (state_store.h, fencing). */
		bool current = !d->base.shared || w->epoch == d->newest_epoch[w->shard];
		if (status == 0 && current)
			apply(d, w);
		else
			record_free(w);
	}
	d->counts.committed_upto = upto;
	for (struct dtype *t = d->types; t; t = t->next)
		t->cb.written(t->cb.arg, upto, status);
}

static void answer_load(struct store_double *d, struct event *e)
{
	if (d->knobs.load_error) {
		e->t->cb.loaded(e->t->cb.arg, e->token, d->knobs.load_error, NULL, 0);
		return;
	}
	struct record *r = *find_stored(d, e->shard, e->id, e->id_len);
	if (r)
		e->t->cb.loaded(e->t->cb.arg, e->token, 1, r->state, r->state_len);
	else
		e->t->cb.loaded(e->t->cb.arg, e->token, 0, NULL, 0);
}

/* The shard's records as one chunk [{Id, State}] (no version bytes). */
static void answer_scan(struct store_double *d, struct event *e)
{
	ei_x_buff x;
	cr_assert_eq(ei_x_new(&x), 0);
	uint32_t n = 0;
	for (struct record *r = d->stored; r; r = r->next)
		n += r->shard == e->shard && !r->meta;
	if (n > 0)
		cr_assert_eq(ei_x_encode_list_header(&x, n), 0);
	for (struct record *r = d->stored; r; r = r->next) {
		if (r->shard != e->shard || r->meta)
			continue;
		cr_assert_eq(ei_x_encode_tuple_header(&x, 2), 0);
		cr_assert_eq(ei_x_append_buf(&x, r->id, (int)r->id_len), 0);
		cr_assert_eq(ei_x_append_buf(&x, r->state + 1, (int)r->state_len - 1), 0);
	}
	cr_assert_eq(ei_x_encode_empty_list(&x), 0);
	e->t->cb.scanned(e->t->cb.arg, e->token, 0, x.buff, (size_t)x.index, false, "k", 1);
	ei_x_free(&x);
}

/* The claim commits: the shard's newest epoch is this type's, and the
 * member that held it before is fenced. */
static void answer_claim(struct store_double *d, struct event *e)
{
	uint64_t epoch = ++d->newest_epoch[e->shard];
	for (struct dtype *t = d->types; t; t = t->next) {
		if (t != e->t && t->epoch[e->shard] != 0) {
			t->epoch[e->shard] = 0;
			t->cb.fenced(t->cb.arg, e->shard);
		}
	}
	e->t->epoch[e->shard] = epoch;
	e->t->cb.claimed(e->t->cb.arg, e->shard);
}

static bool held(const struct store_double *d, const struct event *e)
{
	return (e->kind == EV_LOAD && d->knobs.hold_loads) || (e->kind == EV_COMMIT && d->knobs.hold_commits) ||
	       (e->kind == EV_CLAIM && d->knobs.hold_claims);
}

static void answer(struct store_double *d, struct event *e)
{
	switch (e->kind) {
	case EV_COMMIT:
		commit(d, e->token);
		break;
	case EV_LOAD:
		answer_load(d, e);
		break;
	case EV_SCAN:
		answer_scan(d, e);
		break;
	case EV_CLAIM:
		answer_claim(d, e);
		break;
	case EV_FENCE:
		for (struct dtype *t = d->types; t; t = t->next) {
			if (t->epoch[e->shard] != 0) {
				t->epoch[e->shard] = 0;
				t->cb.fenced(t->cb.arg, e->shard);
			}
		}
		break;
	}
}

/* Takes every event off the queue that is not held (all of them with
 * `all`), in order; an answer may queue more, which are taken too. */
static void drain(struct store_double *d, bool all)
{
	struct event **p = &d->head;
	while (*p) {
		struct event *e = *p;
		if (!all && held(d, e)) {
			p = &e->next;
			continue;
		}
		*p = e->next;
		if (d->tail == e) {
			d->tail = NULL;
			for (struct event *q = d->head; q; q = q->next)
				d->tail = q;
		}
		answer(d, e);
		free(e);
		p = &d->head; /* an answer may have changed the queue */
		if (!all)
			while (*p && held(d, *p))
				p = &(*p)->next;
	}
}

static void on_timer(struct evloop *loop, void *arg)
{
	(void)loop;
	drain(arg, false);
}

void store_double_release(struct store_double *d) { drain(d, true); }

/* ---- the operations ---- */

static uint64_t queue_write(struct dtype *t, struct record *w)
{
	struct store_double *d = t->d;
	w->seq = ++d->seq;
	w->epoch = t->epoch[w->shard];
	if (d->queued_tail)
		d->queued_tail->next = w;
	else
		d->queued = w;
	d->queued_tail = w;
	push(d, event_new(EV_COMMIT, NULL, w->seq, 0, NULL, 0));
	return w->seq;
}

static int op_write(struct state_store_type *st, uint32_t shard, const char *id, size_t id_len, const char *state,
		    size_t state_len, uint64_t *seq)
{
	struct dtype *t = dtype_of(st);
	cr_assert_lt(shard, DOUBLE_MAX_SHARDS);
	struct record *w = calloc(1, sizeof *w + id_len);
	cr_assert_not_null(w);
	w->shard = shard;
	w->id_len = id_len;
	memcpy(w->id, id, id_len);
	if (state != NULL) {
		w->state = malloc(state_len);
		cr_assert_not_null(w->state);
		memcpy(w->state, state, state_len);
		w->state_len = state_len;
		t->d->counts.writes++;
	} else {
		t->d->counts.deletes++;
	}
	*seq = queue_write(t, w);
	return 0;
}

/* A shard's own record: queued and committed in order with the writes,
 * kept apart from the entities' records (loads and scans never see it). */
static int op_shard_meta_write(struct state_store_type *st, uint32_t shard, const void *meta, size_t len,
			       uint64_t *seq)
{
	struct dtype *t = dtype_of(st);
	cr_assert_lt(shard, DOUBLE_MAX_SHARDS);
	struct record *w = calloc(1, sizeof *w);
	cr_assert_not_null(w);
	w->shard = shard;
	w->meta = true;
	w->state = malloc(len ? len : 1);
	cr_assert_not_null(w->state);
	memcpy(w->state, meta, len);
	w->state_len = len;
	*seq = queue_write(t, w);
	return 0;
}

static int op_shard_meta_read(struct state_store_type *st, state_store_meta_fn fn, void *arg)
{
	struct dtype *t = dtype_of(st);
	for (const struct record *r = t->d->stored; r; r = r->next) {
		if (!r->meta)
			continue;
		int rc = fn(arg, r->shard, r->state, r->state_len);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int op_delete_shard(struct state_store_type *st, uint32_t shard, uint64_t *seq)
{
	struct dtype *t = dtype_of(st);
	struct record *w = calloc(1, sizeof *w);
	cr_assert_not_null(w);
	w->shard = shard;
	w->whole_shard = true;
	t->d->counts.shard_deletes++;
	*seq = queue_write(t, w);
	return 0;
}

static int op_load(struct state_store_type *st, uint32_t shard, const char *id, size_t id_len, uint64_t token)
{
	struct dtype *t = dtype_of(st);
	t->d->counts.loads++;
	push(t->d, event_new(EV_LOAD, t, token, shard, id, id_len));
	return 0;
}

static int op_scan(struct state_store_type *st, uint32_t shard, const char *after_key, size_t after_len,
		   size_t max_bytes, uint64_t token)
{
	(void)after_key;
	(void)after_len;
	(void)max_bytes;
	struct dtype *t = dtype_of(st);
	t->d->counts.scans++;
	push(t->d, event_new(EV_SCAN, t, token, shard, NULL, 0));
	return 0;
}

static int op_claim(struct state_store_type *st, uint32_t shard)
{
	struct dtype *t = dtype_of(st);
	cr_assert_lt(shard, DOUBLE_MAX_SHARDS);
	t->d->counts.claims++;
	push(t->d, event_new(EV_CLAIM, t, 0, shard, NULL, 0));
	return 0;
}

/* Takes the type's events out of the queue unanswered: every one of
 * them, or only its loads and scans. */
static void drop_events(struct dtype *t, bool reads_only)
{
	struct store_double *d = t->d;
	struct event **p = &d->head;
	d->tail = NULL;
	while (*p) {
		struct event *e = *p;
		if (e->t == t && (!reads_only || e->kind == EV_LOAD || e->kind == EV_SCAN)) {
			*p = e->next;
			free(e);
		} else {
			d->tail = e;
			p = &e->next;
		}
	}
}

/* The double's held writes count as being committed: they may land. */
static uint64_t op_cancel_queued(struct state_store_type *st)
{
	drop_events(dtype_of(st), true);
	return dtype_of(st)->d->seq;
}

static uint64_t op_last_queued(const struct state_store *s) { return ((const struct store_double *)s)->seq; }

static struct state_store_type *op_type_open(struct state_store *s, const char *type,
					     const struct state_store_callbacks *cb, int *err)
{
	(void)type;
	(void)err;
	struct store_double *d = double_of(s);
	struct dtype *t = calloc(1, sizeof *t);
	cr_assert_not_null(t);
	t->base.store = s;
	t->d = d;
	t->cb = *cb;
	t->next = d->types;
	d->types = t;
	return &t->base;
}

/* Closes the type: its unanswered events go with it. */
static void op_type_close(struct state_store_type *st)
{
	struct dtype *t = dtype_of(st);
	struct store_double *d = t->d;
	drop_events(t, false);
	for (struct dtype **p = &d->types; *p; p = &(*p)->next) {
		if (*p == t) {
			*p = t->next;
			break;
		}
	}
	free(t);
}

static void op_free(struct state_store *s) { (void)s; }

static const struct state_store_ops double_ops = {
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

/* ---- life and inspection ---- */

struct store_double *store_double_new(struct evloop *loop, bool shared)
{
	struct store_double *d = calloc(1, sizeof *d);
	cr_assert_not_null(d);
	d->ops = double_ops;
	if (!shared) {
		d->ops.claim = NULL; /* one node's own store: nothing to claim */
		d->ops.shard_meta_write = op_shard_meta_write; /* and a record per shard */
		d->ops.shard_meta_read = op_shard_meta_read;
	}
	d->base.ops = &d->ops;
	d->base.shared = shared;
	d->loop = loop;
	evloop_timer_init(&d->timer, on_timer, d);
	return d;
}

struct state_store *store_double_store(struct store_double *d) { return &d->base; }

struct store_double_knobs *store_double_knobs(struct store_double *d) { return &d->knobs; }

void store_double_free(struct store_double *d)
{
	if (d == NULL)
		return;
	cr_assert_null(d->types, "a type of the store double is still open");
	evloop_timer_stop(d->loop, &d->timer);
	while (d->head) {
		struct event *e = d->head;
		d->head = e->next;
		free(e);
	}
	while (d->queued) {
		struct record *r = d->queued;
		d->queued = r->next;
		record_free(r);
	}
	while (d->stored) {
		struct record *r = d->stored;
		d->stored = r->next;
		record_free(r);
	}
	free(d);
}

void store_double_counts(const struct store_double *d, struct store_double_counts *out)
{
	*out = d->counts;
	out->held_loads = out->held_commits = out->held_claims = 0;
	for (const struct event *e = d->head; e; e = e->next) {
		out->held_loads += e->kind == EV_LOAD;
		out->held_commits += e->kind == EV_COMMIT;
		out->held_claims += e->kind == EV_CLAIM;
	}
}

size_t store_double_get(const struct store_double *d, uint32_t shard, const char *id, size_t id_len,
			const char **state)
{
	for (const struct record *r = d->stored; r; r = r->next) {
		if (r->shard == shard && r->id_len == id_len && memcmp(r->id, id, id_len) == 0) {
			*state = r->state;
			return r->state_len;
		}
	}
	return 0;
}

void store_double_fence(struct store_double *d, uint32_t shard)
{
	cr_assert(d->base.shared);
	cr_assert_lt(shard, DOUBLE_MAX_SHARDS);
	d->newest_epoch[shard]++;
	push(d, event_new(EV_FENCE, NULL, 0, shard, NULL, 0));
}
