/*
 * region_handoff_state.c — entity states moving with their shard
 * (docs/contract.md, "Entity state"; docs/protocol.md, shard_state).
 *
 * The old home, its handoff acknowledged by every region, freezes the
 * shard (SLOT_SENDING_STATE: messages wait, nothing is passivated) and
 * streams its entities' states to the new home as shard_state chunks of at
 * most STATE_CHUNK_BYTES, with at most STATE_WINDOW chunks unacknowledged,
 * so a shard of a million entities neither builds one huge message nor
 * floods the connection while other traffic waits behind it. The new home
 * restores each chunk into a shard of its own that it holds aside
 * (`incoming`) and acknowledges it. Only after the last acknowledgement
 * does the old home stop the shard and tell the coordinator shard_stopped,
 * so the coordinator's shard_home naming the new home comes after every
 * state is restored there; the new home then takes the held shard as its
 * own and applies the messages buffered during the move to it.
 *
 * A destination that goes down, a send that fails, or the deadline
 * (region_slot.h) end the stream early: the shard stops anyway, and the
 * entities whose states did not arrive start afresh, as with API v1.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity_type.h"
#include "etf/term.h"
#include "sharding/region_internal.h"
#include "sharding/region_handoff_state.h"
#include "sharding/region_store.h"
#include "entity/shard_state.h"

/* A chunk ends once it holds this many bytes (an entity is never split). */
#define STATE_CHUNK_BYTES (64 * 1024)
/* Chunks sent and not yet acknowledged, at most, per stream and in all
 * the region's streams together: a rebalance that moves a hundred shards
 * at once must not build hundreds of chunks in one turn of the loop while
 * other traffic waits; each acknowledgement lets one more be built. */
#define STATE_WINDOW 4
#define REGION_STATE_WINDOW 8

bool region_state_to_carry(const struct region *r, const struct shard_slot *slot)
{
	/* With a store the stream also tells the new home to forget what it
	 * held of the shard before, so it goes even with nothing live. */
	return slot->shard != NULL && (slot->shard->entities.count > 0 || region_store_active(r)) &&
	       slot->out.destination_known && entity_type_keeps_state(r->cfg.type) &&
	       !term_pid_equal(&slot->home_region, &r->pid);
}

/* Sends one chunk (a term, no version byte) as the stream's next. Returns
 * 0 or a negative errno. */
static int send_chunk(struct region *r, uint32_t shard, const char *chunk, size_t len, bool last)
{
	struct shard_slot *slot = &r->slots[shard];
	struct state_out *out = &slot->out;
	ei_x_buff msg;
	if (ei_x_new(&msg) < 0)
		return -ENOMEM;
	int rc = shard_msg_encode_state_chunk(&msg, shard, out->next_seq, last, &r->pid, chunk, len);
	if (rc == 0)
		rc = outlet_send(&r->cfg.out, &slot->home_region, msg.buff, (size_t)msg.index);
	ei_x_free(&msg);
	if (rc == 0) {
		out->next_seq++;
		out->last_sent = last;
	}
	return rc;
}

/* Room left in the region's window: REGION_STATE_WINDOW less the chunks
 * (and scans for chunks) its streams have out. Counted once per event
 * rather than kept, so no way a stream ends can leave a count wrong; the
 * pumps below take it as `room` and spend it. */
static uint32_t region_window_room(const struct region *r)
{
	uint32_t n = 0;
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		const struct shard_slot *slot = &r->slots[s];
		if (slot->st.state == SLOT_SENDING_STATE && !slot->out.failed)
			n += slot->out.next_seq - slot->out.acked + (slot->out.scan_in_flight ? 1 : 0);
	}
	return n < REGION_STATE_WINDOW ? REGION_STATE_WINDOW - n : 0;
}

/* Whether the stream may put another chunk out, room permitting. */
static bool stream_open(const struct state_out *out)
{
	return !out->failed && !out->last_sent && !out->scan_in_flight && out->next_seq - out->acked < STATE_WINDOW;
}

/* With a store: asks it for the next chunk when the windows have room and
 * the writes before the stream are committed. Returns 0 or -errno. */
static int pump_store(struct region *r, uint32_t shard, uint32_t *room)
{
	struct state_out *out = &r->slots[shard].out;
	if (!stream_open(out) || *room == 0)
		return 0;
	if (out->commit_needed > r->held.written_upto) {
		r->handoff.streams_awaiting_commit = true; /* region_state_on_committed */
		return 0;
	}
	if (region_store_shared(r) ||
	    replicated_store_peer_complete(r->replication, shard, &r->slots[shard].home_region)) {
		/* The new home reads the states from the store itself (one every
		 * member shares, or its own as a complete replica of the
		 * shard, every write acknowledged): the stream is one empty
		 * chunk, sent once the writes are in. */
		const char nil = ERL_NIL_EXT;
		(*room)--;
		return send_chunk(r, shard, &nil, 1, true);
	}
	int rc = state_store_scan(r->store, shard, out->scan_key, out->scan_key_len, STATE_CHUNK_BYTES,
				 ((uint64_t)out->gen << 32) | shard);
	out->scan_in_flight = rc == 0;
	if (rc == 0)
		(*room)--;
	return rc;
}

/* Sends chunks while the stream's window and `room` allow. Returns 0, or
 * a negative errno when a chunk could not be built or sent (the stream is
 * then over). */
static int pump(struct region *r, uint32_t shard, uint32_t *room)
{
	if (r->slots[shard].out.from_store)
		return pump_store(r, shard, room);
	struct shard_slot *slot = &r->slots[shard];
	struct state_out *out = &slot->out;
	while (stream_open(out) && *room > 0) {
		ei_x_buff chunk;
		if (ei_x_new(&chunk) < 0)
			return -ENOMEM;
		size_t count;
		int more = shard_state_export(slot->shard, &out->cursor, STATE_CHUNK_BYTES, &chunk, &count);
		int rc = more < 0 ? more : send_chunk(r, shard, chunk.buff, (size_t)chunk.index, more == 0);
		ei_x_free(&chunk);
		if (rc)
			return rc;
		(*room)--;
	}
	return 0;
}

/* The stream cannot go on: the shard stops without the rest. */
static void give_up(struct region *r, uint32_t shard, int err)
{
	log_at_shard(r->cfg.log, LOG_WARN, shard, "region %s: shard %u: sending its entity states failed (%d): the rest start afresh",
		 r->cfg.name, shard, err);
	r->slots[shard].out.failed = true;
	region_owe(r, shard, SLOT_OWES_STATE_SENT);
}

void region_state_send_start(struct region *r, uint32_t shard)
{
	struct shard_slot *slot = &r->slots[shard];
	/* An earlier stream to the same region may still have
	 * acknowledgements on their way (state_out.stale_acks). */
	bool again = slot->out.to_known && term_pid_equal(&slot->out.to, &slot->home_region);
	slot->out.stale_acks = again ? slot->out.stale_acks + (slot->out.next_seq - slot->out.acked) : 0;
	slot->out.to = slot->home_region;
	slot->out.to_known = true;
	slot->out.cursor = (struct shard_state_cursor){0};
	slot->out.next_seq = 0;
	slot->out.acked = 0;
	slot->out.last_sent = false;
	slot->out.failed = false;
	slot->out.from_store = region_store_active(r);
	slot->out.scan_in_flight = false;
	slot->out.gen++;
	slot->out.scan_key_len = 0;
	/* The shard is frozen now: the writes queued so far hold all its
	 * changes, and the records are read once they are committed. */
	slot->out.commit_needed = slot->out.from_store ? region_store_last_queued(r) : 0;
	log_at_shard(r->cfg.log, LOG_DEBUG, shard, "region %s: shard %u: sending %zu entity states to %s", r->cfg.name, shard,
		  slot->shard->entities.count, slot->home_region.node);
	uint32_t room = region_window_room(r);
	int rc = pump(r, shard, &room);
	if (rc)
		give_up(r, shard, rc);
}

/* The streams that wait go on while `room` lasts, the lowest shard first:
 * after an acknowledgement, a stream's end, or a commit they waited for. */
static void pump_waiting(struct region *r, uint32_t *room)
{
	for (uint32_t s = 0; s < r->cfg.number_of_shards && *room > 0; s++) {
		struct shard_slot *slot = &r->slots[s];
		if (slot->st.state != SLOT_SENDING_STATE || !stream_open(&slot->out))
			continue;
		int rc = pump(r, s, room);
		if (rc)
			give_up(r, s, rc);
	}
}

/* The new home restored chunk `seq`. Counted for the last stream even
 * when it has ended (cut short, the slot no longer SENDING_STATE): a
 * stream started again to the same region then knows how many
 * acknowledgements are still the earlier one's. */
static void on_ack(struct region *r, uint32_t shard, uint32_t seq, const erlang_pid *from)
{
	struct shard_slot *slot = &r->slots[shard];
	struct state_out *out = &slot->out;
	int rc;
	/* From a region no stream went to last, it tells nothing. */
	if (!out->to_known || !term_pid_equal(from, &out->to))
		return;
	if (out->stale_acks > 0) {
		out->stale_acks--; /* an earlier stream's: they come first */
		return;
	}
	if (seq != out->acked || out->acked == out->next_seq)
		return;
	out->acked++;
	if (slot->st.state != SLOT_SENDING_STATE || out->failed)
		return;
	if (out->last_sent && out->acked == out->next_seq)
		region_owe(r, shard, SLOT_OWES_STATE_SENT);
	uint32_t room = region_window_room(r);
	if (slot->st.state == SLOT_SENDING_STATE && (rc = pump(r, shard, &room)) != 0)
		give_up(r, shard, rc);
	pump_waiting(r, &room);
}

/* With a store, a chunk is acknowledged once its states are committed
 * here: the old home stops the shard after the last acknowledgement, and
 * the states must not then exist only in this node's memory. */
struct held_state_ack {
	struct held_state_ack *next;
	uint64_t need; /* sent once the store has written up to this */
	uint32_t shard, seq;
	erlang_pid to;
};

static void send_ack(struct region *r, uint32_t shard, uint32_t seq, const erlang_pid *to)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (shard_msg_encode_state_ack(&x, shard, seq, &r->pid) == 0)
		outlet_send(&r->cfg.out, to, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

/* Acknowledges chunk `seq` now, or once the writes queued so far are
 * committed. */
static void ack_when_durable(struct region *r, uint32_t shard, uint32_t seq, const erlang_pid *to)
{
	uint64_t need = region_store_active(r) ? region_store_last_queued(r) : 0;
	struct held_state_ack *a = need > r->held.written_upto ? malloc(sizeof *a) : NULL;
	if (a == NULL) {
		send_ack(r, shard, seq, to); /* durable already, or no room to wait */
		return;
	}
	*a = (struct held_state_ack){.need = need, .shard = shard, .seq = seq, .to = *to};
	if (r->handoff.acks_tail)
		r->handoff.acks_tail->next = a;
	else
		r->handoff.acks_head = a;
	r->handoff.acks_tail = a;
}

void region_state_release_acks(struct region *r, uint64_t upto)
{
	while (r->handoff.acks_head && r->handoff.acks_head->need <= upto) {
		struct held_state_ack *a = r->handoff.acks_head;
		r->handoff.acks_head = a->next;
		if (r->handoff.acks_head == NULL)
			r->handoff.acks_tail = NULL;
		send_ack(r, a->shard, a->seq, &a->to);
		free(a);
	}
}

void region_state_on_committed(struct region *r)
{
	/* A failed commit releases them too: the states are live here, and the
	 * old home must not wait for a store that fails. */
	region_state_release_acks(r, r->held.written_upto);
	if (!r->handoff.streams_awaiting_commit)
		return;
	r->handoff.streams_awaiting_commit = false;
	uint32_t room = region_window_room(r);
	pump_waiting(r, &room); /* a stream still waiting sets the flag again */
}

void region_state_on_scanned(struct region *r, uint64_t token, int status, const char *chunk, size_t len, bool more,
			     const char *last_key, size_t last_key_len)
{
	uint32_t shard = (uint32_t)(token & 0xffffffffu);
	if (shard >= r->cfg.number_of_shards)
		return;
	struct shard_slot *slot = &r->slots[shard];
	struct state_out *out = &slot->out;
	/* An answer to a stream that ended, or to an earlier one. */
	if (slot->st.state != SLOT_SENDING_STATE || out->failed || !out->from_store || !out->scan_in_flight ||
	    (uint32_t)(token >> 32) != out->gen)
		return;
	out->scan_in_flight = false;
	int rc = status;
	if (rc == 0) {
		if (last_key_len > 0 && last_key_len <= sizeof out->scan_key) {
			memcpy(out->scan_key, last_key, last_key_len);
			out->scan_key_len = (uint16_t)last_key_len;
		}
		rc = send_chunk(r, shard, chunk, len, !more);
	}
	uint32_t room = region_window_room(r);
	if (rc == 0)
		rc = pump_store(r, shard, &room);
	if (rc)
		give_up(r, shard, rc);
}

/* With a store of this node's own, the states that come are written to
 * it, not started: the entities load them on their first message, as
 * after a restart, so a shard whose stored entities were mostly
 * passivated does not make them all live here. */
struct store_ctx {
	struct region *r;
	uint32_t shard;
	ei_x_buff x;
};

static int store_record(void *arg, const char *id, size_t id_len, const char *state, size_t state_len)
{
	struct store_ctx *c = arg;
	c->x.index = 0;
	if (ei_x_encode_version(&c->x) < 0 || term_x_append_raw(&c->x, state, state_len) != 0)
		return -ENOMEM;
	return region_store_write_record(c->r, c->shard, id, id_len, &c->x);
}

/* Writes the chunk's states to the store. Returns 0 or a negative errno. */
static int store_chunk(struct region *r, const struct shard_msg *sm)
{
	struct store_ctx c = {.r = r, .shard = sm->shard};
	if (ei_x_new(&c.x) < 0)
		return -ENOMEM;
	int rc = shard_state_each(sm->msg, sm->msg_len, store_record, &c);
	ei_x_free(&c.x);
	return rc;
}

/* Whether the states `from` streams of `shard` are for this region to
 * keep. A slot waiting for the shard (MOVING) keeps them. So does one the
 * move's begin_handoff left no mark on (an answer that named the old home
 * came after it, or the order came while this region was registering
 * with another coordinator) when it does not host the shard and the
 * sender is the home it knows, or it knows none: the old home streams
 * only to the region its coordinator named the new home, and its states
 * are the shard's latest. Such a slot is left as it is (the coordinator's
 * shard_home decides where the shard lives); with a store the states are
 * written, without one they wait as `incoming` for a shard_home naming
 * this region, and either way they are what the shard starts from here.
 * Dropped (logged): a stream to a slot that hosts or sends the shard
 * itself, or from a region that is no longer the shard's home as far as
 * this region knows — an older move's, whose states are out of date. */
static bool keeps_chunk(const struct region *r, const struct shard_msg *sm)
{
	const struct shard_slot *slot = &r->slots[sm->shard];
	switch (slot->st.state) {
	case SLOT_MOVING:
		return true;
	case SLOT_REMOTE:
		if (!term_pid_equal(&slot->home_region, &sm->pid))
			return false;
		break;
	case SLOT_UNKNOWN:
	case SLOT_ASKED:
		break;
	default:
		return false;
	}
	return !replicated_store_names_other_home(r->replication, sm->shard, &sm->pid);
}

/* A chunk from the old home. Acknowledged whatever becomes of it (with a
 * store, once its writes are committed): the old home must not stay
 * frozen waiting, and a chunk this region cannot use would not be any
 * better sent again. */
static void on_chunk(struct region *r, const struct shard_msg *sm)
{
	struct shard_slot *slot = &r->slots[sm->shard];
	if (!keeps_chunk(r, sm)) {
		log_at_shard(r->cfg.log, LOG_WARN, sm->shard, "region %s: shard %u: entity states from %s while %s: dropped", r->cfg.name,
			 sm->shard, sm->pid.node, region_slot_state_name(slot->st.state));
	} else if (!entity_type_keeps_state(r->cfg.type)) {
		log_at_shard(r->cfg.log, LOG_WARN, sm->shard, "region %s: shard %u: entity states from %s, but this node's type keeps none",
			 r->cfg.name, sm->shard, sm->pid.node);
	} else {
		if (sm->count == 0) {
			region_state_drop_incoming(slot); /* a new stream: an earlier one was cut short */
			/* What this node stored of the shard, when it last hosted
			 * it, is out of date: the stream brings what there is now
			 * (entities deleted since must not come back) — unless this
			 * region is a complete replica of the shard: it holds what
			 * there is, and the stream is empty. */
			if (region_store_active(r) && !region_store_shared(r) &&
			    !replicated_store_holds_all(r->replication, sm->shard, &sm->pid) &&
			    region_store_delete_shard(r, sm->shard) != 0)
				log_at_shard(r->cfg.log, LOG_WARN, sm->shard, "region %s: shard %u: out of memory clearing its old records",
					 r->cfg.name, sm->shard);
		}
		int rc;
		if (region_store_active(r)) {
			rc = store_chunk(r, sm);
		} else {
			if (slot->incoming != NULL && !term_pid_equal(&slot->incoming_from, &sm->pid))
				region_state_drop_incoming(slot); /* another sender's: out of date */
			if (slot->incoming == NULL) {
				slot->incoming = region_new_shard(r, sm->shard);
				slot->incoming_from = sm->pid;
			}
			size_t restored = 0;
			rc = slot->incoming ? shard_state_import(slot->incoming, sm->msg, sm->msg_len, region_now32(r),
								 &restored)
					    : -ENOMEM;
		}
		if (rc)
			log_at_shard(r->cfg.log, LOG_WARN, sm->shard, "region %s: shard %u: entity states from %s not all restored (%d)",
				 r->cfg.name, sm->shard, sm->pid.node, rc);
		region_owe(r, sm->shard, SLOT_OWES_STATE_CHUNK);
	}
	ack_when_durable(r, sm->shard, sm->count, &sm->pid);
}

void region_state_on_msg(struct region *r, const struct shard_msg *sm)
{
	if (sm->kind == SMSG_SHARD_STATE)
		on_chunk(r, sm);
	else if (sm->kind == SMSG_SHARD_STATE_ACK)
		on_ack(r, sm->shard, sm->count, &sm->pid);
}

void region_state_on_nodedown(struct region *r, const char *node)
{
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		struct shard_slot *slot = &r->slots[s];
		if (slot->st.state == SLOT_SENDING_STATE && strcmp(slot->home_region.node, node) == 0)
			give_up(r, s, -ENOTCONN);
	}
	uint32_t room = region_window_room(r);
	pump_waiting(r, &room); /* the streams that ended left room */
}

struct shard *region_state_take_incoming(struct shard_slot *slot)
{
	struct shard *s = slot->incoming;
	slot->incoming = NULL;
	return s;
}

bool region_state_incoming_outlived(const struct shard_slot *slot)
{
	if (slot->incoming == NULL)
		return false;
	switch (slot->st.state) {
	case SLOT_MOVING:
	case SLOT_UNKNOWN:
	case SLOT_ASKED:
		return false;
	case SLOT_REMOTE:
		return !term_pid_equal(&slot->home_region, &slot->incoming_from);
	default:
		return true;
	}
}

void region_state_drop_incoming(struct shard_slot *slot)
{
	if (slot->incoming != NULL) {
		shard_free(slot->incoming);
		slot->incoming = NULL;
	}
}
