/*
 * region_remote.c — the entities of a type written in Erlang or Elixir,
 * run as processes on the host (region_remote.h). Each live entity's
 * record in the shard (hosted_entity.h) holds the state it last completed
 * with, its process, and its mailbox: one message at the process, the
 * others queued in order behind it (remote_mailbox.h). A message goes to
 * the host's dispatcher with the state to start from when the entity has
 * no process, else straight to the process; its completion comes back
 * here, the changed state is written (with a store) and the reply leaves
 * as a C entity's does, after the write's commit; then the next queued
 * message goes. `passivate` and `delete` wait their turn and are done here,
 * so they come after everything sent before them.
 *
 * The slot counts the entities with a message at their process
 * (region_slot.in_flight): a hand-off waits for those to complete.
 * Below delivery, above the store part in the region's order of calls.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etf/shardnode_msg.h"
#include "etf/entity_id.h"
#include "etf/phash2.h"
#include "etf/term.h"
#include "hosting/host_msg.h"
#include "hosting/hosted_entity.h"
#include "sharding/region_internal.h"
#include "sharding/region_buffer.h"
#include "sharding/region_remote.h"
#include "sharding/region_send.h"
#include "sharding/region_store.h"
#include "etf/term_encode.h"
#include "etf/term_print.h"



/* SN_ATOM_WAKE as a term without version byte (SMALL_ATOM_UTF8_EXT, its
 * length, its text): the region's own message that starts an entity's
 * process. WAKE_LEN leaves out the literal's NUL. */
static const char WAKE[] = "\x77\x0f" SN_ATOM_WAKE;
#define WAKE_LEN (sizeof WAKE - 1)
_Static_assert(sizeof SN_ATOM_WAKE - 1 == 0x0f, "WAKE's length byte is its text's length");



static struct entity *find_entity(struct shard *s, const char *id, size_t id_len)
{
	return entity_table_find(&s->entities, id, id_len, entity_table_hash(id, id_len));
}

/* The answer goes as a C entity's: after the commits queued so far with a
 * store, at once without. */
void region_remote_answer(struct region *r, uint32_t shard, const struct envelope *e, const ei_x_buff *reply)
{
	if (e->kind == ENVELOPE_WAKE)
		return; /* nobody asked */
	region_count_handled(r, e->is_call);
	if (region_store_active(r))
		region_store_answer(r, shard, e, reply);
	else
		region_answer(r, e, reply);
}

static void answer_atom(struct region *r, uint32_t shard, const struct envelope *e, const char *atom, bool error)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	int rc = error ? term_x_error_atom(&x, atom) : term_x_encode_atom(&x, atom);
	if (term_x_whole_or_enomem(&x, 0, rc) == 0)
		region_remote_answer(r, shard, e, &x);
	ei_x_free(&x);
}

/* The process is no longer the entity's (a crash report from it that is
 * still on its way is late). */
void region_remote_forget_process_only(struct hosted_entity *he)
{
	if (he->has_pid) {
		he->retired = he->pid;
		he->has_retired = true;
	}
	he->has_pid = false;
}

static void send_stop(struct region *r, struct hosted_entity *he, const char *reason)
{
	if (!he->has_pid)
		return;
	erlang_pid to;
	hosted_pid_expand(&he->pid, region_remote_host_node(r), &to);
	ei_x_buff x;
	if (ei_x_new(&x) == 0) {
		if (host_msg_encode_stop(&x, reason) == 0)
			(void)dist_node_send(r->cfg.node, &to, x.buff, (size_t)x.index);
		ei_x_free(&x);
	}
	region_remote_forget_process_only(he);
}

/* The process ended (it stopped, crashed, or was told to): its successor
 * starts from the state last completed — with a store that is the stored
 * one; without, a stop forgets it, as a C entity's passivation does. */
void region_remote_forget_process(struct region *r, struct hosted_entity *he, bool keep_state)
{
	region_remote_forget_process_only(he);
	if (!keep_state && !region_store_active(r))
		(void)hosted_entity_set_state(he, NULL, 0);
}

/* Sends message p (in flight now) to the entity's process, or to the
 * dispatcher to start one. Returns 0, or -EHOSTUNREACH (no host to send
 * to) or -ENOMEM: p is then still in flight, for the caller to fail. */
static int send_in_flight(struct region *r, const char *id, size_t id_len, struct hosted_entity *he,
			  struct pending *p)
{
	struct envelope e;
	region_envelope_of(p, &e);
	erlang_pid to;
	if (he->has_pid)
		hosted_pid_expand(&he->pid, region_remote_host_node(r), &to);
	else if (!r->cfg.host->dispatcher(r->cfg.host->arg, &to))
		return -EHOSTUNREACH;
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return -ENOMEM;
	int rc = he->has_pid ? host_msg_encode_entity(&x, p->in_mailbox.seq, e.msg, e.msg_len)
			     : host_msg_encode_start(&x, &r->pid, r->cfg.type->name, id, id_len, he->state,
						     he->state_len, p->in_mailbox.seq, e.msg, e.msg_len);
	if (rc == 0)
		rc = dist_node_send(r->cfg.node, &to, x.buff, (size_t)x.index) == 0 ? 0 : -EHOSTUNREACH;
	ei_x_free(&x);
	p->sent_ns = evloop_now_ns(r->cfg.loop);
	return rc;
}

/* `passivate` or `delete` reached the front of the entity's mailbox: done
 * here. Returns true if the entity left the shard (nothing was queued
 * behind: `ent` is gone). */
static bool do_local(struct region *r, struct shard *s, struct entity *ent, struct pending *p, bool delete)
{
	struct hosted_entity *he = region_remote_hosted(ent);
	struct envelope e;
	region_envelope_of(p, &e);
	const char *result = "ok";
	bool error = false;
	if (delete && region_store_active(r) && region_store_write(r, s->id, e.id, e.id_len, NULL) != 0) {
		result = "store_unavailable";
		error = true;
	}
	struct remote_mailbox_item *next = NULL;
	(void)remote_mailbox_complete(&he->mb, p->in_mailbox.seq, &next);
	answer_atom(r, s->id, &e, result, error);
	free(p);
	if (next == NULL) {
		/* Nothing behind it: the entity stops for good (the observer
		 * hears it; its process is told). */
		region_slot_came_back(&r->slots[s->id].st);
		region_remote_set_stop_reason(r, delete ? "delete" : NULL);
		shard_stop_entity(s, e.id, e.id_len);
		region_remote_set_stop_reason(r, NULL);
		return true;
	}
	/* Messages wait behind it: a new incarnation takes them. */
	send_stop(r, he, delete ? "delete" : "passivate");
	region_remote_forget_process(r, he, false);
	if (delete)
		(void)hosted_entity_set_state(he, NULL, 0);
	return false;
}

/* Sends what is in flight for the entity now, doing `passivate` and
 * `delete` here as they come, until a message is at the process or the
 * mailbox is empty. A message that cannot be sent is answered
 * {error, host_unavailable} and the next one tried. */
static void pump(struct region *r, struct shard *s, struct entity *ent)
{
	for (;;) {
		struct hosted_entity *he = region_remote_hosted(ent);
		struct remote_mailbox_item *it = he->mb.in_flight;
		if (it == NULL)
			return;
		struct pending *p = REGION_REMOTE_PENDING_OF(it);
		struct envelope e;
		region_envelope_of(p, &e);
		bool passivate = e.kind == ENVELOPE_PASSIVATE, delete = e.kind == ENVELOPE_DELETE;
		if (passivate || delete) {
			if (do_local(r, s, ent, p, delete))
				return;
			continue;
		}
		int rc = send_in_flight(r, entity_id(ent), ent->id_len, he, p);
		if (rc == 0)
			return;
		struct remote_mailbox_item *next = NULL;
		(void)remote_mailbox_complete(&he->mb, it->seq, &next);
		answer_atom(r, s->id, &e, rc == -ENOMEM ? "enomem" : "host_unavailable", true);
		free(p);
		if (next == NULL)
			region_slot_came_back(&r->slots[s->id].st);
	}
}

static struct pending *copy_in(uint32_t shard, const struct envelope *e)
{
	struct pending *p = region_pending_new(e);
	if (p != NULL)
		p->shard = shard;
	return p;
}

void region_remote_deliver(struct region *r, struct shard *s, const struct envelope *e)
{
	struct entity *ent = find_entity(s, e->id, e->id_len);
	if (ent != NULL && e->kind == ENVELOPE_WAKE && (region_remote_hosted(ent)->has_pid || region_remote_hosted(ent)->mb.in_flight != NULL))
		return; /* its process runs, or is being started */
	if (ent == NULL) {
		/* Not live: passivate has nothing to stop, delete only the
		 * stored state; anything else starts the entity (its stored
		 * state, if any, was loaded first: region_store_must_wait). */
		bool delete = e->kind == ENVELOPE_DELETE;
		if (e->kind == ENVELOPE_PASSIVATE || delete) {
			bool failed = delete && region_store_active(r) &&
				      region_store_write(r, s->id, e->id, e->id_len, NULL) != 0;
			answer_atom(r, s->id, e, failed ? "store_unavailable" : "ok", failed);
			return;
		}
		if (shard_start_entity(s, e->id, e->id_len, region_now32(r)) != 0 ||
		    (ent = find_entity(s, e->id, e->id_len)) == NULL) {
			answer_atom(r, s->id, e, "enomem", true);
			return;
		}
	}
	struct hosted_entity *he = region_remote_hosted(ent);
	he->ops = &r->remote.ops;
	/* The most recent now; the limit may passivate another (an idle one:
	 * region.c's may_evict). */
	shard_touch_entity(s, ent, region_now32(r));
	struct pending *p = copy_in(s->id, e);
	if (p == NULL) {
		answer_atom(r, s->id, e, "enomem", true);
		return;
	}
	if (remote_mailbox_offer(&he->mb, &p->in_mailbox)) {
		region_slot_sent_away(&r->slots[s->id].st);
		pump(r, s, ent);
	}
}

int region_remote_wake(struct region *r, uint32_t shard, const char *id, size_t id_len)
{
	struct shard_slot *slot = &r->slots[shard];
	struct envelope e = {.kind = ENVELOPE_WAKE, .id = id, .id_len = id_len, .msg = WAKE, .msg_len = WAKE_LEN};
	/* With a store its state's load starts now, as a C type's remembered
	 * entities' loads do, all of a shard's at once; the wake waits for it
	 * in the buffer (a failed start is tried again when the wake comes). */
	if (region_store_active(r) && (slot->shard == NULL || !shard_entity_live(slot->shard, id, id_len)))
		(void)region_start_entity(r, shard, id, id_len);
	/* As route() does with a message for a shard hosted here. */
	if (slot->shard != NULL && region_slot_hold(&slot->st, r->held.written_upto) == SLOT_HOLD_NONE &&
	    region_slot_hosted(&slot->st) && region_may_deliver(r) &&
	    !(region_store_active(r) && region_store_must_wait(r, shard, &e))) {
		region_remote_deliver(r, slot->shard, &e);
		return 0;
	}
	return region_buffer_append(r, slot, &e) ? 0 : -ENOBUFS;
}

/* ---- what the host sends ---- */

/* The entity a completion or crash report names, in a shard hosted here;
 * NULL if there is none (the shard moved on, the entity stopped). */
static struct entity *entity_of(struct region *r, const char *raw_id, size_t raw_id_len, uint32_t *shard)
{
	ei_x_buff spare, *canon = scratch_get(&r->bufs.canon, &spare);
	if (canon == NULL)
		return NULL;
	struct entity *ent = NULL;
	if (entity_id_canonical(raw_id, raw_id_len, canon) == 0 &&
	    phash2_range(canon->buff, (size_t)canon->index, r->cfg.number_of_shards, shard) == 0) {
		struct shard_slot *slot = &r->slots[*shard];
		if (slot->shard != NULL && region_slot_hosted(&slot->st))
			ent = find_entity(slot->shard, canon->buff, (size_t)canon->index);
	}
	scratch_put(&r->bufs.canon, canon);
	return ent;
}

/* Whether `pid` is not the entity's process now (another, or the one it
 * ended, or one not on the host): what it sends is late. Before the first
 * completion any process of the host but the ended one is taken: the
 * dispatcher starts it. */
static bool from_another_process(const struct region *r, const struct hosted_entity *he, const erlang_pid *pid)
{
	const char *host = region_remote_host_node(r);
	if (he->has_pid)
		return !hosted_pid_is(&he->pid, pid, host);
	return strcmp(pid->node, host) != 0 || (he->has_retired && hosted_pid_is(&he->retired, pid, host));
}

/* The changed state (with a store, written: the reply waits for its
 * commit). Returns 0, or -ENOMEM / the store's error: the change is not
 * kept, so the process that has it must end. */
static int keep_state(struct region *r, uint32_t shard, const char *id, size_t id_len, struct hosted_entity *he,
		      const struct host_msg *hm)
{
	if (hm->state == NULL)
		return 0;
	int rc = 0;
	if (region_store_active(r)) {
		ei_x_buff spare, *x = scratch_get(&r->bufs.state, &spare);
		if (x == NULL)
			return -ENOMEM;
		rc = ei_x_encode_version(x) < 0 ? -ENOMEM : term_x_append_raw(x, hm->state, hm->state_len);
		if (rc == 0)
			rc = region_store_write(r, shard, id, id_len, x);
		scratch_put(&r->bufs.state, x);
	}
	if (rc == 0)
		rc = hosted_entity_set_state(he, hm->state, hm->state_len);
	return rc;
}

/* A completion: the state kept, the reply sent, the next message on. */
static void on_done(struct region *r, uint32_t shard, struct entity *ent, const struct host_msg *hm)
{
	struct shard *s = r->slots[shard].shard;
	struct hosted_entity *he = region_remote_hosted(ent);
	if (from_another_process(r, he, &hm->pid))
		return; /* from a process this entity no longer has */
	if (hm->seq == 0) {
		/* Its own doing (handle_info): a changed state, or a stop. */
		if (he->has_pid && keep_state(r, shard, entity_id(ent), ent->id_len, he, hm) != 0)
			send_stop(r, he, "store_unavailable");
		if (hm->stop) {
			region_remote_forget_process(r, he, false);
			/* A message sent to it meanwhile was never handled: the
			 * next incarnation takes it. */
			if (he->mb.in_flight != NULL)
				pump(r, s, ent);
			else
				shard_stop_entity(s, entity_id(ent), ent->id_len);
		}
		return;
	}
	struct remote_mailbox_item *next = NULL;
	struct remote_mailbox_item *it = remote_mailbox_complete(&he->mb, hm->seq, &next);
	if (it == NULL)
		return; /* late, or made up */
	if (!he->has_pid) {
		hosted_pid_keep(&he->pid, &hm->pid);
		he->has_pid = true;
	}
	ent->last_active = region_now32(r);
	struct pending *p = REGION_REMOTE_PENDING_OF(it);
	if (r->cfg.metrics) {
		uint64_t now = evloop_now_ns(r->cfg.loop);
		histogram_observe(&r->remote.process_latency, now > p->sent_ns ? now - p->sent_ns : 0);
	}
	struct envelope e;
	region_envelope_of(p, &e);
	ei_x_buff spare, *reply = scratch_get(&r->bufs.reply, &spare);
	if (reply != NULL) {
		int rc = keep_state(r, shard, e.id, e.id_len, he, hm);
		if (rc != 0) {
			/* The change cannot be kept: the process that has it ends,
			 * and the next message starts from the last kept state. */
			send_stop(r, he, "store_unavailable");
			(void)term_x_whole_or_enomem(
				reply, 0, term_x_error_atom(reply, rc == -ENOMEM ? "enomem" : "store_unavailable"));
		} else {
			(void)term_x_whole_or_enomem(reply, 0, term_x_append_raw(reply, hm->reply, hm->reply_len));
		}
		region_remote_answer(r, shard, &e, reply);
		scratch_put(&r->bufs.reply, reply);
	}
	free(p);
	if (hm->stop)
		region_remote_forget_process(r, he, false);
	if (next != NULL) {
		pump(r, s, ent);
		return;
	}
	region_slot_came_back(&r->slots[shard].st);
	if (hm->stop)
		shard_stop_entity(s, e.id, e.id_len); /* the process is gone already */
}

/* The one record of the crash (the host writes none): the id and reason
 * as the BEAM prints them, an exception's stack in the reason. */
static void log_crash(struct region *r, const struct host_msg *hm)
{
	char *id = NULL, *why = NULL;
	size_t i = 0, j = 0;
	(void)term_print(hm->id, &i, 200, &id);
	(void)term_print(hm->reply, &j, 1000, &why);
	log_warn(r->cfg.log, "entity %s of %s crashed: %s", id ? id : "?", r->cfg.name, why ? why : "?");
	free(id);
	free(why);
}

struct remote_mailbox_item *region_remote_crashed(struct region *r, uint32_t shard, struct hosted_entity *he,
					       const char *reason, size_t reason_len, bool *had)
{
	region_remote_forget_process(r, he, true);
	struct remote_mailbox_item *next = NULL;
	struct remote_mailbox_item *it = remote_mailbox_fail(&he->mb, &next);
	*had = it != NULL;
	if (it == NULL)
		return NULL; /* it ended between messages: the next one restarts it */
	struct pending *p = REGION_REMOTE_PENDING_OF(it);
	struct envelope e;
	region_envelope_of(p, &e);
	ei_x_buff x;
	if (ei_x_new(&x) == 0) {
		int rc = term_x_error_tagged_raw(&x, "entity_crashed", reason, reason_len);
		if (term_x_whole_or_enomem(&x, 0, rc) == 0)
			region_remote_answer(r, shard, &e, &x);
		ei_x_free(&x);
	}
	free(p);
	return next;
}

/* The entity's process ended abnormally: the message it had is answered
 * {error, {entity_crashed, Reason}}, the next one starts it again from the
 * state last completed. */
static void on_crashed(struct region *r, uint32_t shard, struct entity *ent, const struct host_msg *hm)
{
	struct hosted_entity *he = region_remote_hosted(ent);
	if (hm->has_pid && from_another_process(r, he, &hm->pid))
		return; /* an older process's */
	if (!hm->has_pid && he->has_pid)
		return; /* a start that failed, but this entity's process runs */
	log_crash(r, hm);
	bool had = false;
	struct remote_mailbox_item *next = region_remote_crashed(r, shard, he, hm->reply, hm->reply_len, &had);
	if (!had)
		return;
	if (next != NULL)
		pump(r, r->slots[shard].shard, ent);
	else
		region_slot_came_back(&r->slots[shard].st);
}

/* The shard's processes have ended (or are waited for no more): the
 * coordinator may name its new home. */
void region_remote_end_waited(struct region *r, uint32_t shard)
{
	struct shard_slot *slot = &r->slots[shard];
	if (slot->ending_since == 0)
		return;
	slot->ending_since = 0;
	region_send_to_coordinator(r, SMSG_SHARD_STOPPED, shard);
}

bool region_remote_handle(struct region *r, const char *term, size_t len, uint32_t *shard)
{
	struct host_msg hm;
	*shard = UINT32_MAX;
	int rc = host_msg_decode(term, len, &hm);
	if (rc == 0)
		return false;
	if (rc == 1 && hm.kind == HOST_MSG_ENDED) {
		if (hm.seq < r->cfg.number_of_shards)
			region_remote_end_waited(r, (uint32_t)hm.seq);
		return true;
	}
	if (rc < 0 || (hm.kind != HOST_MSG_DONE && hm.kind != HOST_MSG_CRASHED)) {
		log_debug(r->cfg.log, "region %s: a malformed message from the host dropped", r->cfg.name);
		return true;
	}
	uint32_t s = 0;
	struct entity *ent = entity_of(r, hm.id, hm.id_len, &s);
	if (ent == NULL)
		return true; /* the shard or the entity is gone: late */
	if (hm.kind == HOST_MSG_DONE)
		on_done(r, s, ent, &hm);
	else
		on_crashed(r, s, ent, &hm);
	*shard = s;
	return true;
}

/* ---- a shard that leaves ---- */

/* Appends the drained mailbox `it` (remote_mailbox_drain's list) to t. */
static void take_drained(struct take_back *t, struct remote_mailbox_item *it)
{
	while (it != NULL) {
		struct remote_mailbox_item *following = it->next;
		struct pending *p = REGION_REMOTE_PENDING_OF(it);
		p->next = NULL;
		if (t->tail)
			t->tail->next = p;
		else
			t->head = p;
		t->tail = p;
		t->n++;
		it = following;
	}
}

void region_remote_take_entity_back(struct entity *ent, void *take_back)
{
	take_drained(take_back, remote_mailbox_drain(&region_remote_hosted(ent)->mb));
}

void region_remote_take_back(struct region *r, struct shard_slot *slot)
{
	if (!region_remote_active(r) || slot->shard == NULL)
		return;
	struct take_back t = {0};
	entity_table_each(&slot->shard->entities, region_remote_take_entity_back, &t);
	slot->st.in_flight = 0;
	region_buffer_push_front(r, slot, t.head, t.tail, t.n);
}

void region_remote_set_stop_reason(struct region *r, const char *reason) { r->remote.stop_reason = reason; }

bool region_remote_idle(const struct entity *e)
{
	const struct hosted_entity *he = (const struct hosted_entity *)(const void *)e->data;
	return !remote_mailbox_busy(&he->mb) && he->mb.head == NULL;
}

/* hosted_entity_ops.stopped: the entity leaves its shard. Its process is
 * told to end; messages still in its mailbox (an idle sweep that came
 * while one was out, a shard that stops) go back to the front of the
 * slot's buffer to start a new incarnation, or, once the region stopped,
 * are refused as the buffer's are. */
static void entity_stopped(void *arg, struct hosted_entity *he)
{
	struct region *r = arg;
	const char *reason = r->stopped ? "shutdown" : r->remote.stop_reason ? r->remote.stop_reason : "passivate";
	send_stop(r, he, reason);
	bool busy = remote_mailbox_busy(&he->mb);
	struct remote_mailbox_item *it = remote_mailbox_drain(&he->mb);
	if (it == NULL)
		return;
	struct pending *first = REGION_REMOTE_PENDING_OF(it);
	struct shard_slot *slot = &r->slots[first->shard];
	if (busy)
		region_slot_came_back(&slot->st);
	struct take_back t = {0};
	take_drained(&t, it);
	region_buffer_push_front(r, slot, t.head, t.tail, t.n);
	if (r->stopped)
		region_refuse_buffered(r, slot, "shutting_down");
}

void region_remote_init(struct region *r)
{
	r->remote.ops = (struct hosted_entity_ops){.stopped = entity_stopped, .arg = r};
	r->remote.stop_reason = NULL;
}
