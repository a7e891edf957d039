/*
 * region_deliver.c — a message reaches its entity (region_internal.h): to a
 * shard hosted here, with or without a store (a changed state is written
 * and the reply waits for the commit), or forwarded to the region that
 * hosts it; and what waited in a shard's buffer, flushed in arrival order.
 * Below the coordinator protocol: nothing here steps a slot.
 */
#include <errno.h>
#include <stdlib.h>

#include "etf/shardnode_msg.h"
#include "etf/term.h"
#include "sharding/region_internal.h"
#include "sharding/region_buffer.h"
#include "sharding/region_deliver.h"
#include "sharding/region_hosting.h"
#include "sharding/region_send.h"
#include "sharding/region_store.h"
#include "etf/term_encode.h"

/* ---- delivery ---- */

/* With a store: `delete` removes the stored state and stops the entity;
 * a changed state is queued for writing. Either way the reply waits for
 * the commit (region_store.c). */
static void deliver_stored(struct region *r, struct shard *s, const struct envelope *e, ei_x_buff *reply)
{
	if (e->kind == ENVELOPE_DELETE) {
		shard_stop_entity(s, e->id, e->id_len);
		int rc = region_store_write(r, s->id, e->id, e->id_len, NULL) == 0
				 ? term_x_encode_atom(reply, "ok")
				 : term_x_error_atom(reply, "store_unavailable");
		/* Live or not, its next load waits for the deletion's commit. */
		region_store_note_retired(r, e->id, e->id_len);
		(void)term_x_whole_or_enomem(reply, 0, rc);
	} else {
		ei_x_buff spare, *state = scratch_get(&r->bufs.state, &spare);
		if (state == NULL) {
			(void)term_x_error_atom(reply, "enomem");
		} else {
			int rc = shard_deliver(s, e->id, e->id_len, e->msg, e->msg_len, e->kind == ENVELOPE_PASSIVATE,
					   region_now32(r), reply, state);
			if (rc == 0 && state->index > 0)
				rc = region_store_write(r, s->id, e->id, e->id_len, state);
			if (rc != 0 && rc != -ENOMEM) {
				/* The change cannot be kept: the entity stops (so it does
				 * not answer from it again) and the caller learns it. */
				shard_stop_entity(s, e->id, e->id_len);
				reply->index = 0;
				(void)term_x_whole_or_enomem(reply, 0, term_x_error_atom(reply, "store_unavailable"));
			}
			scratch_put(&r->bufs.state, state);
		}
	}
	region_count_handled(r, e->is_call);
	region_store_answer(r, s->id, e, reply);
}

/* '$shardnode_state' (docs/contract.md "Looking at an entity"): the
 * state the entity last completed, answered here for every type, C or
 * hosted (a message its process is handling or has queued is not in it
 * yet), without starting the entity or counting as its activity; nothing
 * is written. */

static void answer_peek(struct region *r, const struct shard *s, const struct envelope *e)
{
	ei_x_buff spare, *reply = scratch_get(&r->bufs.reply, &spare);
	if (reply == NULL)
		return;
	if (shard_peek_entity(s, e->id, e->id_len, reply) == 0)
		region_answer(r, e, reply);
	scratch_put(&r->bufs.reply, reply);
}

/* ---- the kinds of entities (struct region_entities) ---- */

/* C entities without a store: the reply goes at once. */
static void deliver_plain(struct region *r, struct shard *s, const struct envelope *e, ei_x_buff *reply)
{
	if (r->cfg.store != NULL && !r->cfg.proxy_only && e->kind == ENVELOPE_DELETE) {
		/* A type that keeps no state has nothing stored: `delete` just
		 * stops the entity, as for every type on a node with a store. */
		shard_stop_entity(s, e->id, e->id_len);
		(void)term_x_whole_or_enomem(reply, 0, term_x_encode_atom(reply, "ok"));
	} else {
		shard_deliver(s, e->id, e->id_len, e->msg, e->msg_len, e->kind == ENVELOPE_PASSIVATE, region_now32(r),
			      reply, NULL);
	}
	region_count_handled(r, e->is_call);
	region_answer(r, e, reply);
}

/* C entities, in this process: a peek answered, or the message delivered
 * with a reply buffer, with a store (deliver_stored) or without. */
static void deliver_in_process(struct region *r, struct shard *s, const struct envelope *e, bool stored)
{
	if (e->kind == ENVELOPE_PEEK) {
		answer_peek(r, s, e);
		return;
	}
	ei_x_buff spare, *reply = scratch_get(&r->bufs.reply, &spare);
	if (reply == NULL)
		return;
	if (stored)
		deliver_stored(r, s, e, reply);
	else
		deliver_plain(r, s, e, reply);
	scratch_put(&r->bufs.reply, reply);
}

static void deliver_to_c(struct region *r, struct shard *s, const struct envelope *e)
{
	deliver_in_process(r, s, e, false);
}

static void deliver_to_stored_c(struct region *r, struct shard *s, const struct envelope *e)
{
	deliver_in_process(r, s, e, true);
}

/* Entities run on a host: answered when their process completes the
 * message (and, with a store, its write is committed). */
static void deliver_to_hosted(struct region *r, struct shard *s, const struct envelope *e)
{
	if (e->kind == ENVELOPE_PEEK)
		answer_peek(r, s, e);
	else
		region_hosting_deliver(r, s, e);
}

static const struct region_entities c_entities = {.must_wait = NULL, .deliver = deliver_to_c};
static const struct region_entities stored_c_entities = {.must_wait = region_store_must_wait,
							 .deliver = deliver_to_stored_c};
static const struct region_entities hosted_entities = {.must_wait = NULL, .deliver = deliver_to_hosted};
static const struct region_entities stored_hosted_entities = {.must_wait = region_store_must_wait,
							      .deliver = deliver_to_hosted};

void region_deliver_choose(struct region *r)
{
	if (r->hosting != NULL)
		r->entities = region_store_active(r) ? &stored_hosted_entities : &hosted_entities;
	else
		r->entities = region_store_active(r) ? &stored_c_entities : &c_entities;
}

/* Sends the message on to the region that hosts its shard. A call goes as
 * the original '$gen_call', so the home answers the caller itself. */
int region_forward(struct region *r, const erlang_pid *home, const struct envelope *e)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return -ENOMEM;
	int rc;
	if (e->is_call) {
		rc = ei_x_encode_version(&x) | ei_x_encode_tuple_header(&x, 3) |
		     term_x_encode_atom(&x, "$gen_call") | ei_x_encode_tuple_header(&x, 2) |
		     ei_x_encode_pid(&x, e->from);
		rc = rc < 0 ? -ENOMEM : term_x_append_raw(&x, e->tag, e->tag_len);
		/* A singleton's request is the message itself. */
		if (rc == 0 && !r->cfg.singleton)
			rc = ei_x_encode_tuple_header(&x, 2) < 0 ? -ENOMEM : 0;
		if (rc == 0 && !r->cfg.singleton)
			rc = term_x_append_raw(&x, e->id, e->id_len);
		if (rc == 0)
			rc = term_x_append_raw(&x, e->msg, e->msg_len);
	} else {
		rc = shard_msg_encode_tell(&x, e->from, e->id, e->id_len, e->msg, e->msg_len);
	}
	/* A message that waited here (a buffer, a hand-off) tells the home
	 * how long, so its whole time is measured from its arrival here: it
	 * goes inside {'$shardnode', aged, WaitedUs, Message}. One that did
	 * not goes as it is. */
	uint64_t now = evloop_now_ns(r->cfg.loop);
	uint64_t waited = e->arrived_ns != 0 && now > e->arrived_ns ? now - e->arrived_ns : 0;
	ei_x_buff aged = {0};
	const ei_x_buff *out = &x;
	if (rc == 0 && waited >= REGION_AGED_MIN_NS) {
		if (ei_x_new_with_version(&aged) == 0 &&
		    shardnode_msg_begin(&aged, 4, "aged") == 0 &&
		    term_x_encode_uint(&aged, waited / 1000) == 0 &&
		    term_x_append_raw(&aged, x.buff + 1, (size_t)x.index - 1) == 0)
			out = &aged;
	}
	/* Never queued on a connection still being set up: one that does not
	 * come up drops what it holds, and this message must then wait for
	 * the shard's next home instead (docs/contract.md: nothing is lost at
	 * the forwarder). */
	if (rc == 0)
		rc = outlet_send_connected(&r->cfg.out, home, out->buff, (size_t)out->index);
	if (rc == 0)
		r->delivered.forwarded++;
	if (aged.buff != NULL)
		ei_x_free(&aged);
	ei_x_free(&x);
	return rc;
}

int region_flush_slot(struct region *r, struct shard_slot *slot)
{
	while (slot->head) {
		bool here = region_slot_hosted(&slot->st);
		/* Per message: a lease can run out in the middle of a long flush. */
		if (here && !region_may_deliver(r))
			return 0; /* region_resume comes back for the rest */
		/* A hand-off waits for its entities' processes: what is left
		 * follows the shard (host_entities_take_back). */
		if (here && region_slot_hand_off_waits(&slot->st))
			return 0;
		struct pending *p = slot->head;
		struct envelope e;
		erlang_pid from;
		region_envelope_of(p, &e, &from);
		/* A load under way (or started now) holds the rest back; the
		 * slot is flushed again when it is done. */
		if (here && region_entities_must_wait(r, (uint32_t)(slot - r->slots), &e))
			return 0;
		if (!here) {
			/* Not written: it stays first, the rest behind it. */
			int rc = region_forward(r, &slot->home_region, &e);
			if (rc != 0)
				return rc;
		}
		slot->head = p->next;
		if (here)
			r->entities->deliver(r, slot->shard, &e);
		free(p);
		region_slot_unbuffered(&slot->st, 1);
		r->buffered--;
	}
	slot->tail = NULL;
	return 0;
}

bool region_unwrap_aged(const struct proc_msg *m, struct proc_msg *inner, uint64_t *age_ns)
{
	size_t i = 0;
	long arity;
	if (!shardnode_msg_head(m->term, &i, &arity) || arity != 4 || !term_is_atom(m->term, i, "aged"))
		return false;
	term_skip(m->term, &i);
	int idx = (int)i;
	unsigned long long us;
	if (ei_decode_ulonglong(m->term, &idx, &us) < 0)
		return false;
	*inner = *m;
	inner->term = m->term + idx;
	inner->len = m->len - (size_t)idx;
	*age_ns = us > UINT64_MAX / 1000 ? UINT64_MAX : us * 1000;
	return true;
}
