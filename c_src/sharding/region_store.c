/*
 * region_store.c — a region's entities backed by a durable store
 * (`state_store = lmdb` or `postgres`; docs/contract.md, "Entity state").
 *
 * Three duties, all on the loop:
 *
 *   Loading. An entity that is not live loads its stored state before it
 *   handles anything: its message waits at the head of its shard's buffer
 *   (and every later message of that shard behind it, which keeps each
 *   sender's order without a queue per entity) while the store's reader
 *   thread looks the record up. A load is issued only once every write
 *   queued before it is committed, so it never reads a state older than
 *   one already handled here (an entity passivated right after a change).
 *
 *   Writing. A message that changed its entity's state queues the new
 *   state for the writer thread, which commits the changes of many
 *   entities together.
 *
 *   Fencing. With a store every member shares (postgres), a shard hosted
 *   here is claimed first, and its messages wait for the claim; a store
 *   that reports the shard fenced (another member claimed it since) has
 *   refused its writes: their replies get {error, store_unavailable}, and
 *   the shard stops here and asks where it lives.
 *
 *   Holding replies. Acknowledged means durable: the reply to a message
 *   waits until every write queued up to its own handling is committed —
 *   also the reply to a message that changed nothing, which may show a
 *   state not yet durable. Replies leave in the order their messages were
 *   handled. A commit that failed, or one not done within
 *   store_timeout_ms, answers the waiting replies {error, store_unavailable}
 *   instead — {error, unconfirmed} where the write may still land (it was
 *   committing, or the connection to the database broke during its
 *   commit); their entities are stopped, so their next message reloads
 *   what the store really holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity_type.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "sharding/region_internal.h"
#include "sharding/region_buffer.h"
#include "sharding/region_send.h"
#include "sharding/region_store.h"

/* A load under way: the answer's token finds it in its slot's list. */
struct pending_load {
	struct pending_load *next;
	uint64_t token;
	uint32_t id_len;
	char id[]; /* canonical */
};

/* A reply that waits for a commit. Owns copies of everything. */
struct held_reply {
	struct held_reply *next;
	uint64_t seq;       /* released once the store has written up to this */
	uint64_t held_at;   /* the loop's clock, for store_timeout_ms */
	uint64_t t0_ns;     /* the message's envelope's, for the reply latency */
	uint64_t arrived_ns; /* and its arrival, for the whole time */
	uint32_t shard;
	bool is_call;
	/* The sender, its node name the first of `data`. One is held per
	 * durable write in flight. */
	struct kept_sender from;
	uint32_t tag_len, id_len, reply_len;
	char data[]; /* the sender's node name, tag, canonical id, reply (no version byte) */
};

uint64_t region_store_last_queued(const struct region *r)
{
	return state_store_last_queued(r->cfg.store);
}

/* ---- loading ---- */

static int start_load(struct region *r, uint32_t shard, const char *id, size_t id_len)
{
	struct shard_slot *slot = &r->slots[shard];
	struct pending_load *l = malloc(sizeof *l + id_len);
	if (l == NULL)
		return -ENOMEM;
	l->next = NULL;
	l->token = (++r->held.loads_issued << 32) | shard;
	l->id_len = (uint32_t)id_len;
	memcpy(l->id, id, id_len);
	int rc = state_store_load(r->store, shard, id, id_len, l->token);
	if (rc) {
		free(l);
		return rc;
	}
	struct pending_load **at = &slot->loads;
	while (*at)
		at = &(*at)->next;
	*at = l;
	region_slot_load_started(&slot->st);
	return 0;
}

/* Ids retired before the writes now queued are no concern once those are
 * committed: the older set is emptied then, and the newer takes its place,
 * to wait for the writes queued by now. */
static void turn_over_retired(struct region *r)
{
	if (r->retired.old_upto > r->held.written_upto)
		return;
	byte_set_clear(&r->retired.old.ids);
	r->retired.old.incomplete = false;
	if (r->retired.now.ids.count == 0 && !r->retired.now.incomplete)
		return;
	r->retired.old = r->retired.now;
	byte_set_init(&r->retired.now.ids);
	r->retired.now.incomplete = false;
	r->retired.old_upto = region_store_last_queued(r);
}

/* The write whose commit a load of this entity must wait for (0: none).
 * An entity that is not live may have a write not yet committed in two
 * ways: it was live here and retired since (its last change is among the
 * shard's writes), or its record came another way (a moved state, a
 * replicated store's copy of another member's writes, the shard cleared:
 * the shard's bulk writes). Any other
 * entity's record is as committed as it will be, so it loads at once,
 * however many writes of other entities keep coming; waiting for them all
 * held every miss a commit long, and its shard with it. A type run on a
 * host waits for all of its shard's writes. */
static uint64_t load_waits_for(struct region *r, uint32_t shard, const char *id, size_t id_len)
{
	const struct shard_slot *slot = &r->slots[shard];
	/* Also here, not only on commits: with no writes coming there are
	 * none, and the sets would grow with every entity passivated. */
	turn_over_retired(r);
	uint64_t copied = state_store_copied_upto(r->store, shard);
	uint64_t last = slot->last_write_seq > copied ? slot->last_write_seq : copied;
	uint64_t bulk = slot->bulk_write_seq > copied ? slot->bulk_write_seq : copied;
	if (r->cfg.host != NULL)
		return last;
	bool retired = r->retired.now.incomplete || byte_set_contains(&r->retired.now.ids, id, id_len) ||
		       r->retired.old.incomplete || byte_set_contains(&r->retired.old.ids, id, id_len);
	return retired && last > bulk ? last : bulk;
}

bool region_store_must_wait(struct region *r, uint32_t shard, const struct envelope *e)
{
	const char *id = e->id;
	size_t id_len = e->id_len;
	struct shard_slot *slot = &r->slots[shard];
	if (r->store == NULL)
		return false;
	/* Its claim, an earlier load, the writes a load waits for
	 * (region_slot.h): whatever comes after waits too. */
	if (region_slot_store_hold(&slot->st, r->held.written_upto) != SLOT_HOLD_NONE)
		return true;
	(void)region_slot_commits_done(&slot->st, r->held.written_upto); /* a wait that is over */
	if (state_store_must_wait(r->store, shard)) {
		/* A replicated store's copy elsewhere does not acknowledge: the
		 * shard's next messages wait (until it does, or the coordinator
		 * replaces it, or they have waited store_timeout_ms:
		 * region_store_tick) rather than make changes that would exist
		 * here alone. */
		region_slot_wait_for_commits(&slot->st, region_store_last_queued(r));
		r->slots_awaiting_commit = true;
		return true;
	}
	if (r->held.count >= r->cfg.buffer_size) {
		/* As many replies wait for commits as a region may buffer
		 * messages: a slow store holds the next messages in the shards'
		 * buffers (bounded by buffer_size) rather than taking on more
		 * changes it cannot confirm. */
		region_slot_wait_for_commits(&slot->st, region_store_last_queued(r));
		r->slots_awaiting_commit = true;
		return true;
	}
	if (e->kind == ENVELOPE_DELETE || e->kind == ENVELOPE_PASSIVATE ||
	    shard_entity_live(slot->shard, id, id_len))
		return false;
	uint64_t need = load_waits_for(r, shard, id, id_len);
	if (need > r->held.written_upto) {
		region_slot_wait_for_commits(&slot->st, need);
		r->slots_awaiting_commit = true;
		return true;
	}
	int rc = start_load(r, shard, id, id_len);
	if (rc) {
		log_at_shard(r->cfg.log, LOG_WARN, shard, "region %s: shard %u: loading an entity's state failed (%d): it starts afresh",
			 r->cfg.name, shard, rc);
		return false;
	}
	return true;
}

bool region_store_on_loaded(struct region *r, uint64_t token, int found, const char *state, size_t len,
			    uint32_t *shard_out)
{
	uint32_t shard = (uint32_t)(token & 0xffffffffu);
	*shard_out = shard;
	if (shard >= r->cfg.number_of_shards)
		return false;
	struct shard_slot *slot = &r->slots[shard];
	struct pending_load **at = &slot->loads;
	while (*at && (*at)->token != token)
		at = &(*at)->next;
	struct pending_load *l = *at;
	if (l == NULL)
		return false; /* the shard left meanwhile */
	*at = l->next;
	if (found < 0 && slot->shard != NULL && region_slot_hosted(&slot->st)) {
		/* The store could not answer. Starting the entity afresh would
		 * let its next change overwrite the state it has: its waiting
		 * messages get {error, store_unavailable} instead, and its next
		 * message loads again. */
		log_at_shard(r->cfg.log, LOG_WARN, shard, "region %s: shard %u: loading an entity's state failed (%d): "
			 "{error, store_unavailable}", r->cfg.name, shard, found);
		region_refuse_entity(r, slot, l->id, l->id_len, "store_unavailable");
	} else if (slot->shard != NULL && region_slot_hosted(&slot->st)) {
		int rc = 0;
		size_t end = 0;
		/* The stored bytes are checked as if they came from the network:
		 * a damaged record must not reach decode_state. */
		if (found == 1 && (len < 2 || (unsigned char)state[0] != TERM_VERSION_MAGIC ||
				   term_validate(state + 1, len - 1, &end) != 0 || end != len - 1))
			rc = -EPROTO;
		if (rc == 0 && found == 1)
			rc = shard_restore_entity(slot->shard, l->id, l->id_len, state + 1, len - 1, region_now32(r));
		if (rc < 0)
			log_at_shard(r->cfg.log, LOG_WARN, shard, "region %s: shard %u: an entity's stored state is damaged (%d): "
				 "it starts afresh", r->cfg.name, shard, rc);
		if (found != 1 || rc < 0)
			shard_start_entity(slot->shard, l->id, l->id_len, region_now32(r));
	}
	free(l);
	return region_slot_loaded(&slot->st);
}

void region_store_drop_loads(struct shard_slot *slot)
{
	while (slot->loads) {
		struct pending_load *l = slot->loads;
		slot->loads = l->next;
		free(l);
	}
	region_slot_loads_dropped(&slot->st);
}

/* ---- fencing ---- */

void region_store_claim(struct region *r, uint32_t shard)
{
	if (r->store == NULL)
		return;
	int rc = state_store_claim(r->store, shard);
	if (rc == 0)
		region_slot_claim_sent(&r->slots[shard].st);
	else if (rc < 0)
		/* Its writes will be refused (-ESTALE): the callers learn it. */
		log_at_shard(r->cfg.log, LOG_ERROR, shard, "region %s: shard %u: claiming it in the store failed (%d)",
			  r->cfg.name, shard, rc);
}

bool region_store_on_claimed(struct region *r, uint32_t shard)
{
	return shard < r->cfg.number_of_shards && region_slot_claimed(&r->slots[shard].st);
}

static void release_shard(struct region *r, uint32_t shard, const char *error);

bool region_store_on_fenced(struct region *r, uint32_t shard, const char *why)
{
	if (shard >= r->cfg.number_of_shards)
		return false;
	log_at_shard(r->cfg.log, LOG_WARN, shard, "region %s: shard %u: %s; its writes from here are refused: it stops "
		     "here", r->cfg.name, shard, why);
	release_shard(r, shard, "store_unavailable");
	return true;
}

/* ---- holding replies ---- */

/* Where h's tag, id and reply begin in its data. */
static const char *held_tag(const struct held_reply *h) { return h->data + h->from.node_len; }
static const char *held_id(const struct held_reply *h) { return held_tag(h) + h->tag_len; }

static void send_held(struct region *r, struct held_reply *h, const char *error)
{
	erlang_pid from;
	struct envelope e = {
		.t0_ns = h->t0_ns,
		.arrived_ns = h->arrived_ns,
		.is_call = h->is_call,
		.from = kept_sender_pid(&h->from, h->data, &from),
		.tag = held_tag(h),
		.tag_len = h->tag_len,
		.id = held_id(h),
		.id_len = h->id_len,
	};
	ei_x_buff x;
	if (error != NULL) {
		if (ei_x_new(&x) < 0)
			return;
		term_x_error_atom(&x, error);
	} else {
		x.buff = (char *)held_id(h) + h->id_len;
		x.index = (int)h->reply_len;
		x.buffsz = x.index;
	}
	region_answer(r, &e, &x);
	if (error != NULL)
		ei_x_free(&x);
}

/* A change that may not be in the store: its entity stops, so that its
 * next message reloads what the store does hold. */
static void forget_entity(struct region *r, const struct held_reply *h)
{
	struct shard_slot *slot = &r->slots[h->shard];
	if (slot->shard != NULL)
		shard_stop_entity(slot->shard, held_id(h), h->id_len);
}

void region_store_answer(struct region *r, uint32_t shard, const struct envelope *e, const ei_x_buff *reply)
{
	uint64_t need = region_store_last_queued(r);
	if (need <= r->held.written_upto) {
		region_answer(r, e, reply);
		return;
	}
	if (!e->is_call && e->from == NULL)
		return; /* nobody to answer */
	size_t node_len = kept_sender_size(e->from);
	size_t n = node_len + e->tag_len + e->id_len + (size_t)reply->index;
	struct held_reply *h = malloc(sizeof *h + n);
	if (h == NULL) {
		/* No room to wait: better no answer than one that is not
		 * durable yet. The caller's timeout tells it. */
		log_warn(r->cfg.log, "region %s: out of memory holding a reply", r->cfg.name);
		return;
	}
	*h = (struct held_reply){.seq = need, .held_at = evloop_now_ms(r->cfg.loop), .t0_ns = e->t0_ns,
				 .arrived_ns = e->arrived_ns, .shard = shard, .is_call = e->is_call,
				 .tag_len = (uint32_t)e->tag_len, .id_len = (uint32_t)e->id_len,
				 .reply_len = (uint32_t)reply->index};
	kept_sender_keep(&h->from, h->data, e->from);
	char *at = h->data + node_len;
	if (e->tag_len > 0)
		memcpy(at, e->tag, e->tag_len);
	at += e->tag_len;
	memcpy(at, e->id, e->id_len);
	at += e->id_len;
	memcpy(at, reply->buff, (size_t)reply->index);
	if (r->held.tail)
		r->held.tail->next = h;
	else
		r->held.head = h;
	r->held.tail = h;
	r->held.count++;
}

/* Releases the held replies up to `upto`: answered as they are (error
 * NULL), or with {error, error}. `forget`: their changes may not be in the
 * store, so their entities stop. */
static void release(struct region *r, uint64_t upto, const char *error, bool forget)
{
	while (r->held.head && r->held.head->seq <= upto) {
		struct held_reply *h = r->held.head;
		r->held.head = h->next;
		if (r->held.head == NULL)
			r->held.tail = NULL;
		r->held.count--;
		if (forget)
			forget_entity(r, h);
		send_held(r, h, error);
		free(h);
	}
}

/* Answers every held reply of `shard` {error, error}: its writes were
 * refused. The entities stop too (the shard goes). */
static void release_shard(struct region *r, uint32_t shard, const char *error)
{
	struct held_reply **at = &r->held.head, *prev = NULL;
	while (*at) {
		struct held_reply *h = *at;
		if (h->shard != shard) {
			prev = h;
			at = &h->next;
			continue;
		}
		*at = h->next;
		if (r->held.tail == h)
			r->held.tail = prev;
		r->held.count--;
		forget_entity(r, h);
		send_held(r, h, error);
		free(h);
	}
}

void region_store_on_written(struct region *r, uint64_t upto, int status)
{
	/* Never goes back (a replicated store may report a number again). */
	if (upto > r->held.written_upto)
		r->held.written_upto = upto;
	if (status == STATE_STORE_UNCONFIRMED) {
		/* The changes may have landed: a caller told store_unavailable
		 * (nothing applied) could apply one twice by trying again. */
		log_error(r->cfg.log, "region %s: the connection to the store was lost during a commit, whose outcome "
			  "is not known: its replies get {error, unconfirmed}", r->cfg.name);
		release(r, upto, "unconfirmed", true);
		return;
	}
	if (status != 0) {
		log_error(r->cfg.log, "region %s: the store failed a commit (%d): its replies get "
			  "{error, store_unavailable}", r->cfg.name, status);
		release(r, upto, "store_unavailable", true);
		return;
	}
	turn_over_retired(r);
	release(r, r->held.written_upto, NULL, false);
}

bool region_store_next_load_ready(struct region *r, uint32_t *from)
{
	for (uint32_t s = *from; s < r->cfg.number_of_shards; s++) {
		struct shard_slot *slot = &r->slots[s];
		if (slot->st.load_after == 0)
			continue;
		if (!region_slot_commits_done(&slot->st, r->held.written_upto)) {
			r->slots_awaiting_commit = true; /* not yet */
			continue;
		}
		*from = s;
		return true;
	}
	return false;
}

/* Messages that waited in a slot's buffer for commits (a store or a
 * replica that does not answer) for store_timeout_ms are answered {error,
 * store_unavailable}: none of them was handled, so nothing of them is
 * applied. */
static void refuse_waiting_too_long(struct region *r)
{
	uint64_t now_ns = evloop_now_ns(r->cfg.loop);
	uint64_t limit_ns = (uint64_t)r->cfg.store_timeout_ms * 1000000u;
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		struct shard_slot *slot = &r->slots[s];
		if (!region_slot_hosted(&slot->st) || slot->st.load_after <= r->held.written_upto ||
		    !region_buffer_waited(slot, now_ns, limit_ns))
			continue;
		log_at_shard(r->cfg.log, LOG_WARN, s, "region %s: shard %u: %u messages waited store_timeout_ms (%u ms) "
			     "for commits: {error, store_unavailable}", r->cfg.name, s, slot->st.buffered,
			     r->cfg.store_timeout_ms);
		region_refuse_buffered(r, slot, "store_unavailable");
	}
}

void region_store_tick(struct region *r)
{
	if (r->store == NULL || r->cfg.store_timeout_ms == 0)
		return;
	uint64_t now = evloop_now_ms(r->cfg.loop);
	if (r->slots_awaiting_commit)
		refuse_waiting_too_long(r);
	if (r->held.head == NULL)
		return;
	/* Held in order, so the oldest is first. */
	if (now - r->held.head->held_at < r->cfg.store_timeout_ms)
		return;
	/* Committed here, it waits for a copy on another member (a replicated
	 * store): the change is applied, so an error would not be true. It is
	 * answered when the replica answers or the coordinator replaces it
	 * (then the new set holds it); the caller's own timeout meanwhile
	 * says "maybe". What
	 * comes after it waits in the buffers and is refused there
	 * (refuse_waiting_too_long), nothing of it applied. */
	if (state_store_waits_only_elsewhere(r->store, r->held.head->seq))
		return;
	/* The store is in trouble. The type's writes not yet being committed
	 * are cancelled, so their replies can say the change was not applied
	 * ({error, store_unavailable}, which a caller may try again); a write
	 * already committing (taken by the writer, sent to the database) may
	 * still land, so its reply says {error, unconfirmed}. No held reply
	 * can be sent as it is: their entities stop, to reload what the store
	 * holds. */
	uint64_t committing = state_store_cancel_queued(r->store);
	uint32_t maybe = 0;
	for (const struct held_reply *h = r->held.head; h != NULL && h->seq <= committing; h = h->next)
		maybe++;
	log_warn(r->cfg.log, "region %s: a write not committed within store_timeout_ms (%u ms): {error, unconfirmed} "
		 "to the %u replies whose writes were committing, {error, store_unavailable} to the %u others",
		 r->cfg.name, r->cfg.store_timeout_ms, maybe, r->held.count - maybe);
	release(r, committing, "unconfirmed", true);
	release(r, UINT64_MAX, "store_unavailable", true);
}

int region_start_entity(struct region *r, uint32_t shard, const char *id, size_t id_len)
{
	struct shard_slot *slot = &r->slots[shard];
	if (!region_store_active(r))
		return shard_start_entity(slot->shard, id, id_len, region_now32(r));
	if (slot->shard != NULL && shard_entity_live(slot->shard, id, id_len))
		return 0;
	return start_load(r, shard, id, id_len);
}

/* ---- writing ---- */

int region_store_write(struct region *r, uint32_t shard, const char *id, size_t id_len, const ei_x_buff *state)
{
	uint64_t seq;
	const char *bytes = state ? state->buff : NULL;
	size_t len = state ? (size_t)state->index : 0;
	int rc = state_store_write(r->store, shard, id, id_len, bytes, len, &seq);
	if (rc == 0)
		r->slots[shard].last_write_seq = seq;
	return rc;
}

int region_store_write_record(struct region *r, uint32_t shard, const char *id, size_t id_len,
			      const ei_x_buff *state)
{
	int rc = region_store_write(r, shard, id, id_len, state);
	if (rc == 0)
		r->slots[shard].bulk_write_seq = r->slots[shard].last_write_seq;
	return rc;
}

void region_store_note_retired(struct region *r, const char *id, size_t id_len)
{
	shard_retired_add(&r->retired.now, id, id_len);
}

int region_store_delete_shard(struct region *r, uint32_t shard)
{
	uint64_t seq;
	int rc = state_store_delete_shard(r->store, shard, &seq);
	if (rc == 0)
		r->slots[shard].last_write_seq = r->slots[shard].bulk_write_seq = seq;
	return rc;
}

/* ---- life ---- */

bool region_store_wanted(const struct region *r)
{
	return r->cfg.store != NULL && entity_type_keeps_state(r->cfg.type) && !r->cfg.proxy_only;
}

void region_store_start(struct region *r, struct state_store_type *t)
{
	r->store = t;
	r->held.written_upto = region_store_last_queued(r);
}

void region_store_stop(struct region *r)
{
	/* Their writes still commit here (state_store_free waits for them),
	 * and a replica may have taken them: the messages were handled, but
	 * whether their effect lasts cannot be told any more. So not
	 * shutting_down, which says a message was not handled: unconfirmed,
	 * an outcome unknown, as a timeout's. */
	release(r, UINT64_MAX, "unconfirmed", false);
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++)
		region_store_drop_loads(&r->slots[s]);
	state_store_type_close(r->store);
	r->store = NULL;
	r->replication = NULL; /* it was the store's face: closed with it */
	byte_set_clear(&r->retired.now.ids);
	byte_set_clear(&r->retired.old.ids);
}
