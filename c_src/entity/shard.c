/* shard.c — see shard.h. */
#include "entity/shard.h"
#include "entity/entity_type.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "etf/term.h"
#include "etf/term_validate.h"
#include "etf/term_encode.h"

struct shard *shard_new(uint32_t id, const struct entity_type *type)
{
	struct shard *s = calloc(1, sizeof *s);
	if (s == NULL)
		return NULL;
	s->id = id;
	s->type = type;
	return s;
}

int shard_limit_init(struct shard_limit *l, size_t max, bool by_frequency)
{
	entity_lru_init(&l->lru);
	l->max = max ? max : 1;
	l->passivated = 0;
	l->may_evict = NULL;
	l->may_evict_arg = NULL;
	l->sketch = (struct freq_sketch){0};
	return by_frequency ? freq_sketch_init(&l->sketch, l->max) : 0;
}

void shard_limit_free(struct shard_limit *l) { freq_sketch_free(&l->sketch); }

void shard_set_limit(struct shard *s, struct shard_limit *limit)
{
	s->limit = limit;
	entity_table_set_lru(&s->entities, limit != NULL ? &limit->lru : NULL, s);
}

static void stop_entity(struct entity *e, void *arg)
{
	struct shard *s = arg;
	if (s->type->stop)
		s->type->stop(entity_state(e));
	s->passivated++;
	if (s->instances.event)
		s->instances.event(s->instances.arg, s, entity_id(e), e->id_len, false);
}

void shard_retired_add(struct shard_retired *r, const char *id, size_t len)
{
	if (byte_set_add(&r->ids, id, len) != 0)
		r->incomplete = true;
}

/* Stopped for good: the observer hears of it, and its id is kept as
 * retired. */
static void note_retired(struct shard *s, const struct entity *e)
{
	if (s->observer.stopped)
		s->observer.stopped(s->observer.arg, s->id, entity_id(e), e->id_len);
	if (s->retired != NULL)
		shard_retired_add(s->retired, entity_id(e), e->id_len);
}

static void retire_entity(struct shard *s, struct entity *e)
{
	stop_entity(e, s);
	note_retired(s, e);
	entity_table_remove(&s->entities, e);
}

/* Entities of the least recently used sampled for the one to passivate,
 * when frequency counts. */
#define VICTIM_SAMPLE 8

/* The entity to passivate for the limit, and its shard in *owner: the
 * least recently used, or with a sketch the least often asked of the
 * VICTIM_SAMPLE least recently used (the older on a tie). Never `keep`
 * (just started, the most recent); entities of a shard that may not lose
 * any are passed over and made the most recent, so they are looked at
 * once. NULL: none may go now. */
static struct entity *pick_victim(struct shard_limit *l, const struct entity *keep, void **owner)
{
	size_t sample = l->sketch.counts != NULL ? VICTIM_SAMPLE : 1, seen = 0;
	struct entity *best = NULL;
	unsigned best_freq = 0;
	void *o = NULL;
	struct entity *e = entity_lru_oldest(&l->lru, &o);
	while (e != NULL && e != keep && seen < sample) {
		void *next_owner = NULL;
		struct entity *next = entity_lru_newer(&l->lru, e, &next_owner);
		struct shard *from = o;
		if (l->may_evict != NULL && !l->may_evict(l->may_evict_arg, from, e)) {
			entity_table_touch(&from->entities, e);
		} else {
			unsigned freq = freq_sketch_estimate(&l->sketch, e->hash);
			if (best == NULL || freq < best_freq) {
				best = e;
				best_freq = freq;
				*owner = o;
			}
			seen++;
		}
		e = next;
		o = next_owner;
	}
	return best;
}

/* Beyond the limit, entities (of any shard under it) are passivated. `e`
 * was just used and stays — unless, with frequencies kept, it is the one
 * entity too many (new, then) and has not been asked more often lately
 * than the entity that would make room for it: then it goes instead, its
 * message handled (W-TinyLFU's admission: a one-off does not push out an
 * entity asked again and again). A list of none that may go leaves the
 * limit exceeded until the next start. `may_reject` false (a start with
 * no message): e stays whatever its frequency. */
static void enforce_limit(struct shard *s, struct entity *e, bool may_reject)
{
	struct shard_limit *l = s->limit;
	while (l != NULL && l->lru.count > l->max) {
		void *owner = NULL;
		struct entity *victim = pick_victim(l, e, &owner);
		if (victim == NULL)
			return;
		if (may_reject && l->lru.count == l->max + 1 && l->sketch.counts != NULL &&
		    freq_sketch_estimate(&l->sketch, e->hash) <= freq_sketch_estimate(&l->sketch, victim->hash)) {
			retire_entity(s, e);
			l->passivated++;
			return;
		}
		retire_entity(owner, victim);
		l->passivated++;
	}
}

/* Inserts and starts an entity and, given a state term (state != NULL),
 * restores it with decode_state. Returns it, or NULL with *rc: -ENOMEM,
 * the start callback's non-zero result, or decode_state's (the entity is
 * then stopped and nothing is left behind). */
static struct entity *start_entity_with(struct shard *s, const char *id, size_t id_len, uint32_t hash,
					const char *state, size_t state_len, int *rc)
{
	struct entity *e = entity_table_insert(&s->entities, id, id_len, hash, s->type->state_size);
	if (e == NULL) {
		*rc = -ENOMEM;
		return NULL;
	}
	if (s->type->start && (*rc = s->type->start(entity_state(e), id, id_len)) != 0) {
		entity_table_remove(&s->entities, e);
		return NULL;
	}
	if (state != NULL && (*rc = s->type->decode_state(entity_state(e), state, state_len)) != 0) {
		/* decode_state's contract: the state stays releasable. */
		if (s->type->stop)
			s->type->stop(entity_state(e));
		entity_table_remove(&s->entities, e);
		return NULL;
	}
	s->started++;
	if (s->observer.started)
		s->observer.started(s->observer.arg, s->id, id, id_len);
	if (s->instances.event)
		s->instances.event(s->instances.arg, s, id, id_len, true);
	return e;
}

static struct entity *start_entity(struct shard *s, const char *id, size_t id_len, uint32_t hash, int *rc)
{
	return start_entity_with(s, id, id_len, hash, NULL, 0, rc);
}

int shard_restore_entity(struct shard *s, const char *id, size_t id_len, const char *state, size_t state_len,
			 uint32_t now_ms)
{
	uint32_t hash = entity_table_hash(id, id_len);
	if (entity_table_find(&s->entities, id, id_len, hash) != NULL)
		return 0;
	int rc = 0;
	struct entity *e = start_entity_with(s, id, id_len, hash, state, state_len, &rc);
	if (e == NULL)
		return rc == -ENOMEM ? -ENOMEM : -EPROTO;
	e->last_active = now_ms;
	entity_table_touch(&s->entities, e);
	return 1;
}

int shard_start_entity(struct shard *s, const char *id, size_t id_len, uint32_t now_ms)
{
	uint32_t hash = entity_table_hash(id, id_len);
	struct entity *e = entity_table_find(&s->entities, id, id_len, hash);
	int rc = 0;
	if (e == NULL && (e = start_entity(s, id, id_len, hash, &rc)) == NULL)
		return rc == -ENOMEM ? -ENOMEM : -ECANCELED;
	e->last_active = now_ms;
	entity_table_touch(&s->entities, e);
	enforce_limit(s, e, false);
	return 0;
}

int shard_deliver(struct shard *s, const char *id, size_t id_len, const char *msg, size_t msg_len, bool passivate,
		  uint32_t now_ms, ei_x_buff *reply, ei_x_buff *changed)
{
	uint32_t hash = entity_table_hash(id, id_len);
	struct entity *e = entity_table_find(&s->entities, id, id_len, hash);
	if (passivate) {
		if (e != NULL)
			retire_entity(s, e);
		(void)term_x_whole_or_enomem(reply, 0, term_x_encode_atom(reply, "ok"));
		return 0;
	}
	if (e == NULL) {
		int rc = 0;
		e = start_entity(s, id, id_len, hash, &rc);
		if (e == NULL && rc == -ENOMEM) {
			(void)term_x_error_atom(reply, "enomem");
			return -ENOMEM;
		}
		if (e == NULL) {
			int enc = ei_x_encode_tuple_header(reply, 2) | term_x_encode_atom(reply, "error") |
				  ei_x_encode_tuple_header(reply, 2) | term_x_encode_atom(reply, "entity_start_failed") |
				  term_x_encode_int(reply, rc);
			(void)term_x_whole_or_enomem(reply, 0, enc);
			return 0;
		}
	}
	e->last_active = now_ms;
	entity_table_touch(&s->entities, e);
	if (s->limit != NULL)
		freq_sketch_add(&s->limit->sketch, e->hash);
	enum entity_after after = s->type->handle(entity_state(e), msg, msg_len, reply);
	if (reply->index == 0)
		entity_reply_unknown(reply, msg, msg_len); /* a type that forgot to reply */
	/* The caller gets one whole valid term or an error: an encoder that
	 * ran out of memory, or a plugin's mistake, leaves a reply the BEAM
	 * would drop the connection on. */
	size_t end = 0;
	if (term_validate(reply->buff, (size_t)reply->index, &end) != 0 || end != (size_t)reply->index) {
		reply->index = 0;
		(void)term_x_whole_or_enomem(reply, 0, term_x_error_atom(reply, "invalid_reply"));
	}
	int rc = 0;
	if (changed != NULL && entity_after_changed(s->type, after) && entity_type_keeps_state(s->type)) {
		if (ei_x_encode_version(changed) < 0 || s->type->encode_state(entity_state(e), changed) != 0) {
			changed->index = 0;
			rc = -EIO;
			after = (enum entity_after)(after | ENTITY_STOP);
		}
	}
	if (entity_after_stops(after))
		retire_entity(s, e);
	else
		enforce_limit(s, e, true);
	return rc;
}

void shard_touch_entity(struct shard *s, struct entity *e, uint32_t now_ms)
{
	e->last_active = now_ms;
	entity_table_touch(&s->entities, e);
	enforce_limit(s, e, false);
}

int shard_peek_entity(const struct shard *s, const char *id, size_t id_len, ei_x_buff *reply)
{
	const struct entity *e = entity_table_find(&s->entities, id, id_len, entity_table_hash(id, id_len));
	int start = reply->index, rc;
	if (e == NULL)
		rc = term_x_error_atom(reply, "not_running");
	else if (!entity_type_keeps_state(s->type))
		rc = term_x_error_atom(reply, "no_state");
	else
		rc = ei_x_encode_tuple_header(reply, 2) < 0 || term_x_encode_atom(reply, "ok") < 0
			     ? -ENOMEM
			     : s->type->encode_state((const void *)e->data, reply);
	return term_x_whole_or_enomem(reply, start, rc);
}

bool shard_entity_live(const struct shard *s, const char *id, size_t id_len)
{
	return entity_table_find(&s->entities, id, id_len, entity_table_hash(id, id_len)) != NULL;
}

void shard_stop_entity(struct shard *s, const char *id, size_t id_len)
{
	struct entity *e = entity_table_find(&s->entities, id, id_len, entity_table_hash(id, id_len));
	if (e != NULL)
		retire_entity(s, e);
}

/* One idle sweep: entities quiet since before now - idle stop. */
struct idle_sweep {
	uint32_t now, idle;
	struct shard *shard;
};

static bool is_idle(struct entity *e, void *arg)
{
	const struct idle_sweep *w = arg;
	/* Unsigned difference: correct across the 49-day wrap of the clock. */
	return w->now - e->last_active >= w->idle;
}

static void stop_idle(struct entity *e, void *arg)
{
	struct shard *s = ((struct idle_sweep *)arg)->shard;
	stop_entity(e, s);
	note_retired(s, e);
}

size_t shard_passivate_idle(struct shard *s, uint32_t now_ms, uint32_t idle_ms)
{
	struct idle_sweep w = {.now = now_ms, .idle = idle_ms, .shard = s};
	return entity_table_remove_if(&s->entities, is_idle, stop_idle, &w);
}

void shard_free(struct shard *s)
{
	if (s == NULL)
		return;
	entity_table_clear(&s->entities, stop_entity, s);
	free(s);
}
