/* region.c — see region.h. */
#include "sharding/region.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etf/entity_id.h"
#include "dist/gen_call.h"
#include "etf/phash2.h"
#include "sharding/remember_replica.h"
#include "base/scratch.h"
#include "sharding/shard.h"
#include "sharding/shard_msg.h"
#include "etf/term.h"

/* How soon an unregistered region tries again. */
#define REGISTER_RETRY_MS 100

/* A message waiting for its shard's home. Owns copies of everything. */
struct pending {
	struct pending *next;
	bool is_call;
	bool has_from;
	erlang_pid from;
	uint32_t tag_len, id_len, msg_len;
	char data[]; /* tag, canonical id, msg */
};

/* HOME_HANDOFF: the shard is moving; its messages wait here, in order, until
 * the coordinator names the new home. */
enum shard_home { HOME_UNKNOWN, HOME_REQUESTED, HOME_LOCAL, HOME_REMOTE, HOME_HANDOFF };

struct shard_slot {
	enum shard_home home;
	erlang_pid home_region; /* HOME_REMOTE */
	struct shard *shard;    /* HOME_LOCAL */
	struct pending *head, *tail;
	uint32_t nbuffered;
	uint64_t requested_at;   /* also: when a handoff began */
	/* On the shard's home while it hands the shard off: */
	bool handing_off;
	/* Its remembered entities wait for a quorum lease (start_remembered). */
	bool remembered_pending;
	uint32_t acks_needed, acks;
	uint64_t handoff_deadline;
};

struct region {
	struct region_config cfg;
	struct proc *proc;
	erlang_pid self;
	bool registered;  /* the coordinator acknowledged us */
	char coordinator_node[256]; /* where the active coordinator runs; "" if none */
	char (*downed)[256];        /* region_set_downed */
	size_t ndowned;
	struct remember_replica *replica; /* NULL: remember_entities is off */
	bool remembered_pending;          /* some slot's remembered_pending is set */
	char coordinator_name[256]; /* its registered name */
	erlang_pid coordinator;     /* its pid, once it acknowledged us */
	bool stopped;
	struct shard_slot *slots;
	uint32_t buffered;
	uint32_t nlocal;
	uint64_t delivered, dropped, forwarded;
	struct ev_timer retry_timer;
	struct ev_timer idle_timer;
	struct stats_request *stats_requests;
	uint32_t next_stats_id;
	/* graceful_shutdown under way: shards are being handed off */
	bool leaving;
	uint64_t leave_deadline;
	struct ev_timer leave_timer;
	/* Reused encode buffers, one per nesting level (scratch.h): route's
	 * canonical id, then deliver_local's reply, then send_tell_reply's
	 * {Type, Id, Reply}. */
	struct scratch canon_buf, reply_buf, tell_buf;
	/* The type's name as an encoded atom, for the head of every tell
	 * reply: encoding it per reply (a Latin-1 to UTF-8 conversion, twice
	 * in ei_x_encode_atom) cost more than the rest of the reply. Length 0
	 * if ei refuses the name; no tell reply can then be sent. */
	char type_atom[3 + 2 * MAXATOMLEN];
	size_t type_atom_len;
};

/* A get_cluster_sharding_stats call waiting for the other members' regions. */
struct stats_request {
	struct stats_request *next;
	struct region *region;
	uint32_t id;
	erlang_pid caller;
	char *tag;
	size_t tag_len;
	uint32_t waiting;  /* answers still to come */
	uint32_t entries;  /* Node => Map pairs in `pairs` */
	ei_x_buff pairs;   /* raw Node atom, raw map, ... */
	struct ev_timer timer;
};

/* How long a cluster-wide stats call waits for the other members. */
#define STATS_TIMEOUT_MS 2000

struct shard_msg;
static void on_get_stats(struct region *r, uint32_t id, const erlang_pid *asker);
static void on_stats(struct region *r, const struct shard_msg *sm);

/* The message being routed; pointers borrowed from the caller. */
struct envelope {
	bool is_call;
	const erlang_pid *from; /* NULL: a tell with no known sender */
	const char *tag;
	size_t tag_len;
	const char *id; /* canonical */
	size_t id_len;
	const char *msg;
	size_t msg_len;
};

static uint32_t now32(const struct region *r) { return (uint32_t)evloop_now_ms(r->cfg.loop); }

/* ---- replies ---- */

static void send_call_reply(struct region *r, const erlang_pid *to, const char *tag, size_t tag_len,
			    const ei_x_buff *reply)
{
	dist_node_reply_to(r->cfg.node, to, tag, tag_len, reply->buff, (size_t)reply->index);
}

/* {Type, EntityId, Reply} to the sender of a tell. */
static void send_tell_reply(struct region *r, const erlang_pid *to, const char *id, size_t id_len,
			    const ei_x_buff *reply)
{
	ei_x_buff spare, *x = scratch_get(&r->tell_buf, &spare);
	if (x == NULL)
		return;
	if (ei_x_encode_version(x) == 0 && ei_x_encode_tuple_header(x, 3) == 0 &&
	    r->type_atom_len > 0 && term_x_append_raw(x, r->type_atom, r->type_atom_len) == 0 &&
	    term_x_append_raw(x, id, id_len) == 0 &&
	    term_x_append_raw(x, reply->buff, (size_t)reply->index) == 0)
		dist_node_send(r->cfg.node, to, x->buff, (size_t)x->index);
	scratch_put(&r->tell_buf, x);
}

static void answer(struct region *r, const struct envelope *e, const ei_x_buff *reply)
{
	if (e->is_call)
		send_call_reply(r, e->from, e->tag, e->tag_len, reply);
	else if (e->from != NULL)
		send_tell_reply(r, e->from, e->id, e->id_len, reply);
}

static void answer_error_atom(struct region *r, const struct envelope *e, const char *reason)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	term_x_error_atom(&x, reason);
	answer(r, e, &x);
	ei_x_free(&x);
}

/* ---- delivery ---- */

static void deliver_local(struct region *r, struct shard *s, const struct envelope *e)
{
	ei_x_buff spare, *reply = scratch_get(&r->reply_buf, &spare);
	if (reply == NULL)
		return;
	shard_deliver(s, e->id, e->id_len, e->msg, e->msg_len, now32(r), reply);
	r->delivered++;
	answer(r, e, reply);
	scratch_put(&r->reply_buf, reply);
}

/* Sends the message on to the region that hosts its shard. A call goes as
 * the original '$gen_call', so the home answers the caller itself. */
static void forward(struct region *r, const erlang_pid *home, const struct envelope *e)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	int rc;
	if (e->is_call) {
		rc = ei_x_encode_version(&x) | ei_x_encode_tuple_header(&x, 3) |
		     ei_x_encode_atom(&x, "$gen_call") | ei_x_encode_tuple_header(&x, 2) |
		     ei_x_encode_pid(&x, e->from);
		rc = rc < 0 ? -ENOMEM : term_x_append_raw(&x, e->tag, e->tag_len);
		if (rc == 0)
			rc = ei_x_encode_tuple_header(&x, 2) < 0 ? -ENOMEM : 0;
		if (rc == 0)
			rc = term_x_append_raw(&x, e->id, e->id_len);
		if (rc == 0)
			rc = term_x_append_raw(&x, e->msg, e->msg_len);
	} else {
		rc = shard_msg_encode_tell(&x, e->from, e->id, e->id_len, e->msg, e->msg_len);
	}
	if (rc == 0 && dist_node_send(r->cfg.node, home, x.buff, (size_t)x.index) == 0)
		r->forwarded++;
	ei_x_free(&x);
}

static void envelope_of(const struct pending *p, struct envelope *e)
{
	*e = (struct envelope){
		.is_call = p->is_call,
		.from = p->has_from ? &p->from : NULL,
		.tag = p->data,
		.tag_len = p->tag_len,
		.id = p->data + p->tag_len,
		.id_len = p->id_len,
		.msg = p->data + p->tag_len + p->id_len,
		.msg_len = p->msg_len,
	};
}

static bool may_deliver(const struct region *r)
{
	return r->cfg.may_deliver == NULL || r->cfg.may_deliver(r->cfg.may_deliver_arg);
}

/* Delivers or forwards every buffered message of a shard whose home is now
 * known, in arrival order. */
static void flush_slot(struct region *r, struct shard_slot *slot)
{
	while (slot->head) {
		/* Per message: a lease can run out in the middle of a long flush. */
		if (slot->home == HOME_LOCAL && !may_deliver(r))
			return; /* region_resume comes back for the rest */
		struct pending *p = slot->head;
		slot->head = p->next;
		struct envelope e;
		envelope_of(p, &e);
		if (slot->home == HOME_LOCAL)
			deliver_local(r, slot->shard, &e);
		else
			forward(r, &slot->home_region, &e);
		free(p);
		slot->nbuffered--;
		r->buffered--;
	}
	slot->tail = NULL;
}

static void send_to_coordinator(struct region *r, enum shard_msg_kind kind, uint32_t shard)
{
	if (!r->registered)
		return;
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	bool with_shard = kind == SMSG_GET_SHARD_HOME || kind == SMSG_SHARD_STOPPED;
	int rc = with_shard ? shard_msg_encode_shard(&x, kind, shard, &r->self) : shard_msg_encode_pid(&x, kind, &r->self);
	if (rc == 0)
		dist_node_send(r->cfg.node, &r->coordinator, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

/* register, then hosting: what this region already hosts, so a coordinator
 * that just took over learns the allocation instead of inventing one. */
static void send_registration(struct region *r)
{
	if (r->coordinator_node[0] == '\0' || r->stopped)
		return;
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	enum shard_msg_kind kind = r->cfg.proxy_only ? SMSG_REGISTER_PROXY : SMSG_REGISTER;
	if (shard_msg_encode_pid(&x, kind, &r->self) == 0)
		dist_node_reg_send(r->cfg.node, &r->self, r->coordinator_name, r->coordinator_node, x.buff,
				   (size_t)x.index);
	if (r->cfg.proxy_only) {
		ei_x_free(&x);
		return; /* hosts nothing: no report */
	}
	uint32_t *hosted = malloc(r->cfg.nshards * sizeof *hosted);
	size_t n = 0;
	for (uint32_t s = 0; hosted != NULL && s < r->cfg.nshards; s++)
		if (r->slots[s].home == HOME_LOCAL)
			hosted[n++] = s;
	x.index = 0;
	if (hosted != NULL && shard_msg_encode_hosting(&x, &r->self, hosted, n) == 0)
		dist_node_reg_send(r->cfg.node, &r->self, r->coordinator_name, r->coordinator_node, x.buff,
				   (size_t)x.index);
	free(hosted);
	ei_x_free(&x);
}

void region_set_coordinator_node(struct region *r, const char *node)
{
	const char *now = node ? node : "";
	if (strcmp(now, r->coordinator_node) == 0)
		return;
	snprintf(r->coordinator_node, sizeof r->coordinator_node, "%s", now);
	r->registered = false;
	log_info(r->cfg.log, "region %s: coordinator now on %s", r->cfg.type->name, node ? node : "(none)");
	send_registration(r);
	if (!r->stopped)
		evloop_timer_start(r->cfg.loop, &r->retry_timer, REGISTER_RETRY_MS);
}

/* A node is gone: shards homed there are unknown again, and if the
 * coordinator was there, we are no longer registered. */
static void region_nodedown(void *arg, const char *peer)
{
	struct region *r = arg;
	for (uint32_t s = 0; s < r->cfg.nshards; s++) {
		struct shard_slot *slot = &r->slots[s];
		if (slot->home == HOME_REMOTE && strcmp(slot->home_region.node, peer) == 0)
			slot->home = HOME_UNKNOWN;
	}
	if (r->registered && strcmp(r->coordinator.node, peer) == 0)
		r->registered = false;
}

static void request_home(struct region *r, uint32_t shard)
{
	struct shard_slot *slot = &r->slots[shard];
	slot->home = HOME_REQUESTED;
	slot->requested_at = evloop_now_ms(r->cfg.loop);
	if (r->registered)
		send_to_coordinator(r, SMSG_GET_SHARD_HOME, shard);
	/* else: asked for when the coordinator acknowledges registration */
}

static bool buffer(struct region *r, struct shard_slot *slot, const struct envelope *e)
{
	if (r->buffered >= r->cfg.buffer_size)
		return false;
	size_t n = e->tag_len + e->id_len + e->msg_len;
	struct pending *p = malloc(sizeof *p + n);
	if (p == NULL)
		return false;
	p->next = NULL;
	p->is_call = e->is_call;
	p->has_from = e->from != NULL;
	if (e->from)
		p->from = *e->from;
	p->tag_len = (uint32_t)e->tag_len;
	p->id_len = (uint32_t)e->id_len;
	p->msg_len = (uint32_t)e->msg_len;
	memcpy(p->data, e->tag, e->tag_len);
	memcpy(p->data + e->tag_len, e->id, e->id_len);
	memcpy(p->data + e->tag_len + e->id_len, e->msg, e->msg_len);
	if (slot->tail)
		slot->tail->next = p;
	else
		slot->head = p;
	slot->tail = p;
	slot->nbuffered++;
	r->buffered++;
	return true;
}

/* Routes one entity message. `raw_id` is the id as the sender encoded it. */
static void route(struct region *r, struct envelope *e, const char *raw_id, size_t raw_id_len)
{
	ei_x_buff spare, *canon = scratch_get(&r->canon_buf, &spare);
	if (canon == NULL)
		return;
	int rc = entity_id_canonical(raw_id, raw_id_len, canon);
	uint32_t shard = 0;
	if (rc == 0)
		rc = phash2_range(canon->buff, (size_t)canon->index, r->cfg.nshards, &shard);
	if (rc) {
		e->id = raw_id;
		e->id_len = raw_id_len;
		ei_x_buff x;
		if (ei_x_new(&x) == 0) {
			term_x_error_tagged_raw(&x, "bad_entity_id", raw_id, raw_id_len);
			answer(r, e, &x);
			ei_x_free(&x);
		}
		scratch_put(&r->canon_buf, canon);
		return;
	}
	e->id = canon->buff;
	e->id_len = (size_t)canon->index;
	struct shard_slot *slot = &r->slots[shard];
	if (slot->head == NULL && slot->home == HOME_LOCAL && may_deliver(r)) {
		deliver_local(r, slot->shard, e);
	} else if (slot->head == NULL && slot->home == HOME_REMOTE) {
		forward(r, &slot->home_region, e);
	} else {
		if (!buffer(r, slot, e)) {
			if (e->is_call) {
				answer_error_atom(r, e, "overloaded");
			} else if (r->dropped++ % 10000 == 0) {
				log_warn(r->cfg.log, "region %s: buffer full (%u messages): tell dropped (%llu so far)",
					 r->cfg.type->name, r->buffered, (unsigned long long)r->dropped);
			}
		}
		/* Even when this message could not wait, the home is asked for,
		 * so the next one finds it. */
		if (slot->home == HOME_UNKNOWN)
			request_home(r, shard);
	}
	scratch_put(&r->canon_buf, canon);
}

/* ---- coordinator protocol ---- */

static void on_registered(struct region *r, const erlang_pid *coordinator)
{
	/* A late answer from the coordinator that was active before the last
	 * membership change is not a registration with the current one. */
	if (strcmp(coordinator->node, r->coordinator_node) != 0)
		return;
	bool first = !r->registered;
	r->registered = true;
	r->coordinator = *coordinator;
	if (first)
		log_debug(r->cfg.log, "region %s: registered with coordinator on %s", r->cfg.type->name,
			  coordinator->node);
	for (uint32_t s = 0; s < r->cfg.nshards; s++) {
		/* Shards with remembered entities get a home without waiting for
		 * a message, so their entities run again (after a restart). */
		if (r->slots[s].home == HOME_UNKNOWN && r->cfg.remember != NULL && !r->cfg.proxy_only &&
		    remember_count(r->cfg.remember, s) > 0)
			request_home(r, s);
		else if (r->slots[s].home == HOME_REQUESTED)
			send_to_coordinator(r, SMSG_GET_SHARD_HOME, s);
	}
}

/* The coordinator we are registered with has forgotten us (coordinator.h):
 * register again at once, and keep trying until it acknowledges. Only its
 * own word counts: anyone else's is a late message from an earlier one. */
static void on_register_again(struct region *r, const erlang_pid *coordinator)
{
	if (!r->registered || !term_pid_equal(coordinator, &r->coordinator))
		return;
	r->registered = false;
	log_info(r->cfg.log, "region %s: the coordinator on %s does not know this region: registering again",
		 r->cfg.type->name, coordinator->node);
	send_registration(r);
	evloop_timer_start(r->cfg.loop, &r->retry_timer, REGISTER_RETRY_MS);
}

/* See region_set_downed. */
static bool is_downed(const struct region *r, const char *node)
{
	for (size_t k = 0; k < r->ndowned; k++)
		if (strcmp(r->downed[k], node) == 0)
			return true;
	return false;
}

/* ---- remembered entities ---- */

struct start_ctx {
	struct region *r;
	struct shard *shard;
	size_t failed;
};

static void start_one(void *arg, const char *id, size_t len)
{
	struct start_ctx *c = arg;
	if (shard_start_entity(c->shard, id, len, now32(c->r)) != 0)
		c->failed++;
}

/* A shard that just came here: watch its entities and start the ones
 * remembered for it. Not while this node lacks a quorum lease (they could
 * be running elsewhere): region_resume starts them when it has one. */
static void start_remembered(struct region *r, struct shard *s)
{
	if (r->replica == NULL)
		return;
	s->observer = (struct shard_observer){remember_replica_started, remember_replica_stopped, r->replica};
	r->slots[s->id].remembered_pending = false;
	if (remember_count(r->cfg.remember, s->id) == 0)
		return;
	if (!may_deliver(r)) {
		r->slots[s->id].remembered_pending = true; /* region_resume */
		r->remembered_pending = true;
		return;
	}
	struct start_ctx c = {r, s, 0};
	remember_each(r->cfg.remember, s->id, start_one, &c);
	log_debug(r->cfg.log, "region %s: shard %u started %zu remembered entities", r->cfg.type->name, s->id,
		  remember_count(r->cfg.remember, s->id) - c.failed);
	if (c.failed)
		log_warn(r->cfg.log, "region %s: shard %u: %zu remembered entities failed to start", r->cfg.type->name,
			 s->id, c.failed);
}

/* Another member reports an entity started: if its shard is here now (the
 * report crossed a handoff), start it here. */
static void on_remembered_live(void *arg, uint32_t shard, const char *id, size_t len)
{
	struct region *r = arg;
	if (shard >= r->cfg.nshards || r->slots[shard].home != HOME_LOCAL)
		return;
	if (!may_deliver(r)) {
		r->slots[shard].remembered_pending = true; /* region_resume starts it */
		r->remembered_pending = true;
		return;
	}
	shard_start_entity(r->slots[shard].shard, id, len, now32(r));
}

/* Whose sets a member that joins is sent by this region: the shards hosted
 * here, and those with no live home in sight (unknown, moving, or on a
 * downed node), whose sets would otherwise reach it from nobody. Every
 * region holds every set, so duplicates are harmless. */
static bool sends_snapshot_of(const struct region *r, const struct shard_slot *slot)
{
	if (slot->home == HOME_LOCAL)
		return true;
	if (slot->home == HOME_REMOTE)
		return is_downed(r, slot->home_region.node);
	return true;
}

static void reannounce(void *arg, uint32_t shard, const char *id, size_t len)
{
	struct region *r = arg;
	remember_replica_announce(r->replica, shard, id, len);
}

static bool hosts_shard(void *arg, uint32_t shard)
{
	const struct region *r = arg;
	return shard < r->cfg.nshards && r->slots[shard].home == HOME_LOCAL;
}

void region_members_changed(struct region *r)
{
	if (r->replica == NULL || r->stopped)
		return;
	uint32_t *hosted = malloc(r->cfg.nshards * sizeof *hosted);
	if (hosted == NULL)
		return;
	size_t n = 0;
	for (uint32_t s = 0; s < r->cfg.nshards; s++)
		if (sends_snapshot_of(r, &r->slots[s]))
			hosted[n++] = s;
	remember_replica_sync(r->replica, hosted, n);
	free(hosted);
}

static void on_shard_home(struct region *r, uint32_t shard, const erlang_pid *home)
{
	if (shard >= r->cfg.nshards)
		return;
	struct shard_slot *slot = &r->slots[shard];
	if (!term_pid_equal(home, &r->self) && is_downed(r, home->node))
		return; /* its lease may not have run out: ask again later */
	slot->acks = 0;
	slot->handing_off = false;
	if (term_pid_equal(home, &r->self) && r->cfg.proxy_only) {
		return; /* never happens with a correct coordinator: a proxy hosts nothing */
	} else if (term_pid_equal(home, &r->self)) {
		if (slot->shard == NULL) {
			slot->shard = shard_new(shard, r->cfg.type);
			if (slot->shard == NULL)
				return; /* retried: the home request stays outstanding */
			r->nlocal++;
			start_remembered(r, slot->shard);
		}
		slot->home = HOME_LOCAL;
	} else {
		slot->home = HOME_REMOTE;
		slot->home_region = *home;
	}
	flush_slot(r, slot);
}

/* The home has heard from every region (or waited long enough): whatever
 * they forwarded before acknowledging has been delivered. Stop the entities;
 * what arrives from now on waits for the new home. */
static void finish_handoff(struct region *r, uint32_t shard)
{
	struct shard_slot *slot = &r->slots[shard];
	slot->handing_off = false;
	if (slot->shard != NULL) {
		shard_free(slot->shard);
		slot->shard = NULL;
		r->nlocal--;
	}
	slot->home = HOME_HANDOFF;
	slot->requested_at = evloop_now_ms(r->cfg.loop);
	send_to_coordinator(r, SMSG_SHARD_STOPPED, shard);
	log_debug(r->cfg.log, "region %s: shard %u handed off", r->cfg.type->name, shard);
}

static void send_shard_msg(struct region *r, const erlang_pid *to, enum shard_msg_kind kind, uint32_t shard)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (shard_msg_encode_shard(&x, kind, shard, &r->self) == 0)
		dist_node_send(r->cfg.node, to, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

/* Another region is handing this shard off: stop sending it anything, and
 * say so to that region, on the same path as what was sent before, so the
 * acknowledgement arrives after every message forwarded to it. */
static void on_begin_handoff(struct region *r, uint32_t shard, const erlang_pid *from)
{
	struct shard_slot *slot = &r->slots[shard];
	if (slot->home != HOME_LOCAL) {
		slot->home = HOME_HANDOFF;
		slot->requested_at = evloop_now_ms(r->cfg.loop);
	}
	send_shard_msg(r, from, SMSG_HANDOFF_ACK, shard);
}

/* Every ack is in. Messages held here for want of a quorum lease were sent
 * before the ones the other regions now hold for the new home; handed on
 * now, they would reach the new home after those later messages. So the
 * handoff waits for the lease (region_resume delivers them here first) or
 * for its deadline (on_retry). */
static void finish_handoff_when_flushed(struct region *r, uint32_t shard)
{
	struct shard_slot *slot = &r->slots[shard];
	if (slot->home == HOME_LOCAL && slot->head != NULL)
		flush_slot(r, slot); /* stops early if the lease is gone */
	if (slot->home == HOME_LOCAL && slot->head != NULL)
		return;
	finish_handoff(r, shard);
}

static void on_handoff(struct region *r, uint32_t shard, uint32_t acks_needed)
{
	struct shard_slot *slot = &r->slots[shard];
	if (slot->home != HOME_LOCAL) {
		send_to_coordinator(r, SMSG_SHARD_STOPPED, shard); /* nothing here to stop */
		return;
	}
	slot->handing_off = true;
	slot->acks_needed = acks_needed;
	slot->handoff_deadline = evloop_now_ms(r->cfg.loop) + r->cfg.handoff_timeout_ms;
	if (slot->acks >= slot->acks_needed)
		finish_handoff_when_flushed(r, shard);
}

static void on_handoff_ack(struct region *r, uint32_t shard)
{
	struct shard_slot *slot = &r->slots[shard];
	/* Acks may come before the coordinator's handoff message: count them. */
	slot->acks++;
	if (slot->handing_off && slot->acks >= slot->acks_needed)
		finish_handoff_when_flushed(r, shard);
}

/* True if `from` is the coordinator this region is registered with: orders
 * from one that was active before (a hand-over in progress) are ignored,
 * or two regions could come to host one shard. */
static bool from_coordinator(const struct region *r, const erlang_pid *from)
{
	return from != NULL && r->registered && term_pid_equal(from, &r->coordinator);
}

static void on_internal(struct region *r, const struct shard_msg *sm, const erlang_pid *from)
{
	/* Stats messages carry a request id where the others carry a shard. */
	if (sm->kind == SMSG_GET_STATS) {
		on_get_stats(r, sm->shard, &sm->pid);
		return;
	}
	if (sm->kind == SMSG_STATS) {
		on_stats(r, sm);
		return;
	}
	if (sm->shard >= r->cfg.nshards)
		return;
	bool coordinator_order = sm->kind == SMSG_SHARD_HOME || sm->kind == SMSG_BEGIN_HANDOFF ||
				 sm->kind == SMSG_HANDOFF;
	if (coordinator_order && !from_coordinator(r, from)) {
		log_debug(r->cfg.log, "region %s: order from a coordinator we are not registered with ignored",
			  r->cfg.type->name);
		return;
	}
	switch (sm->kind) {
	case SMSG_REGISTERED:
		on_registered(r, &sm->pid);
		break;
	case SMSG_REGISTER_AGAIN:
		on_register_again(r, &sm->pid);
		break;
	case SMSG_SHARD_HOME:
		on_shard_home(r, sm->shard, &sm->pid);
		break;
	case SMSG_BEGIN_HANDOFF:
		on_begin_handoff(r, sm->shard, &sm->pid);
		break;
	case SMSG_HANDOFF:
		on_handoff(r, sm->shard, sm->count);
		break;
	case SMSG_HANDOFF_ACK:
		on_handoff_ack(r, sm->shard);
		break;
	case SMSG_TELL: {
		struct envelope e = {.from = sm->has_pid ? &sm->pid : NULL, .msg = sm->msg, .msg_len = sm->msg_len};
		route(r, &e, sm->id, sm->id_len);
		break;
	}
	default:
		break;
	}
}

static void on_retry(struct evloop *loop, void *arg)
{
	struct region *r = arg;
	if (!r->registered) {
		send_registration(r);
	} else {
		uint64_t now = evloop_now_ms(loop);
		for (uint32_t s = 0; s < r->cfg.nshards; s++) {
			struct shard_slot *slot = &r->slots[s];
			if (slot->home == HOME_REQUESTED && now - slot->requested_at >= r->cfg.retry_interval_ms)
				request_home(r, s);
			else if (slot->handing_off && now >= slot->handoff_deadline)
				finish_handoff(r, s); /* a region never answered: go on without it */
			else if (slot->home == HOME_HANDOFF && now - slot->requested_at >= r->cfg.handoff_timeout_ms)
				request_home(r, s); /* the move was abandoned: ask where it lives */
		}
	}
	/* Messages held for a lease that came back unnoticed go now. */
	region_resume(r);
	/* Unregistered, retry soon: a coordinator that has just taken over may
	 * have ignored our first try, sent while it was not active yet. */
	uint32_t next = r->cfg.retry_interval_ms;
	if (!r->registered && next > REGISTER_RETRY_MS)
		next = REGISTER_RETRY_MS;
	evloop_timer_start(loop, &r->retry_timer, next);
}

static void on_idle_sweep(struct evloop *loop, void *arg)
{
	struct region *r = arg;
	uint32_t now = now32(r);
	/* Without a lease, entity code must not run (their stop callbacks), and
	 * held messages make entities look idle. */
	for (uint32_t s = 0; s < r->cfg.nshards && may_deliver(r); s++)
		if (r->slots[s].shard != NULL)
			shard_passivate_idle(r->slots[s].shard, now, r->cfg.passivate_idle_ms);
	uint32_t every = r->cfg.passivate_idle_ms / 4;
	evloop_timer_start(loop, &r->idle_timer, every < 10 ? 10 : every);
}

/* ---- inspection requests ---- */

struct id_list_ctx {
	ei_x_buff *x;
};

static void append_id(struct entity *e, void *arg)
{
	struct id_list_ctx *c = arg;
	ei_x_encode_list_header(c->x, 1);
	term_x_append_raw(c->x, entity_id(e), e->id_len);
}

/* {ok, #{ShardId => [EntityId]}} */
static void encode_region_state(struct region *r, ei_x_buff *x)
{
	ei_x_encode_tuple_header(x, 2);
	ei_x_encode_atom(x, "ok");
	ei_x_encode_map_header(x, r->nlocal);
	for (uint32_t s = 0; s < r->cfg.nshards; s++) {
		struct shard *sh = r->slots[s].shard;
		if (sh == NULL)
			continue;
		ei_x_encode_ulong(x, s);
		/* One cons cell per id keeps the encoding a single pass. */
		struct id_list_ctx c = {.x = x};
		entity_table_each(&sh->entities, append_id, &c);
		ei_x_encode_empty_list(x);
	}
}

/* #{ShardId => EntityCount} for this region. */
static void encode_local_counts(struct region *r, ei_x_buff *x)
{
	ei_x_encode_map_header(x, r->nlocal);
	for (uint32_t s = 0; s < r->cfg.nshards; s++) {
		struct shard *sh = r->slots[s].shard;
		if (sh == NULL)
			continue;
		ei_x_encode_ulong(x, s);
		ei_x_encode_ulong(x, sh->entities.count);
	}
}

/* Answers a stats call with {ok, #{Node => Map}} from what has arrived,
 * and forgets it. */
static void finish_stats(struct stats_request *q)
{
	struct region *r = q->region;
	ei_x_buff x;
	if (ei_x_new(&x) == 0) {
		ei_x_encode_tuple_header(&x, 2);
		ei_x_encode_atom(&x, "ok");
		ei_x_encode_map_header(&x, q->entries);
		term_x_append_raw(&x, q->pairs.buff, (size_t)q->pairs.index);
		send_call_reply(r, &q->caller, q->tag, q->tag_len, &x);
		ei_x_free(&x);
	}
	for (struct stats_request **pq = &r->stats_requests; *pq; pq = &(*pq)->next) {
		if (*pq == q) {
			*pq = q->next;
			break;
		}
	}
	evloop_timer_stop(r->cfg.loop, &q->timer);
	ei_x_free(&q->pairs);
	free(q->tag);
	free(q);
}

static void on_stats_timeout(struct evloop *loop, void *arg)
{
	(void)loop;
	finish_stats(arg); /* a member that did not answer in time is left out */
}

/* get_cluster_sharding_stats: this region's counts, and those of the
 * regions of every other member hosting the type, asked for now. */
static void start_cluster_stats(struct region *r, const struct gen_call *call)
{
	const char *nodes[256];
	size_t n = r->cfg.members_hosting ? r->cfg.members_hosting(r->cfg.members_arg, r->cfg.type->name, nodes, 256)
					  : 0;
	struct stats_request *q = calloc(1, sizeof *q);
	if (q == NULL || ei_x_new(&q->pairs) < 0 || (q->tag = malloc(call->tag_len)) == NULL) {
		if (q != NULL) {
			ei_x_free(&q->pairs);
			free(q);
		}
		return;
	}
	q->region = r;
	q->id = r->next_stats_id++;
	q->caller = call->from;
	memcpy(q->tag, call->tag, call->tag_len);
	q->tag_len = call->tag_len;
	ev_timer_init(&q->timer, on_stats_timeout, q);
	ei_x_encode_atom(&q->pairs, dist_node_name(r->cfg.node));
	encode_local_counts(r, &q->pairs);
	q->entries = 1;
	q->next = r->stats_requests;
	r->stats_requests = q;
	for (size_t k = 0; k < n; k++) {
		if (strcmp(nodes[k], dist_node_name(r->cfg.node)) == 0)
			continue;
		ei_x_buff x;
		if (ei_x_new(&x) < 0)
			continue;
		if (shard_msg_encode_shard(&x, SMSG_GET_STATS, q->id, &r->self) == 0 &&
		    dist_node_reg_send(r->cfg.node, &r->self, r->cfg.type->name, nodes[k], x.buff, (size_t)x.index) == 0)
			q->waiting++;
		ei_x_free(&x);
	}
	if (q->waiting == 0)
		finish_stats(q);
	else
		evloop_timer_start(r->cfg.loop, &q->timer, STATS_TIMEOUT_MS);
}

/* Another member's region asks for this region's counts. */
static void on_get_stats(struct region *r, uint32_t id, const erlang_pid *asker)
{
	ei_x_buff counts, x;
	if (ei_x_new(&counts) < 0)
		return;
	encode_local_counts(r, &counts);
	if (ei_x_new(&x) == 0) {
		if (shard_msg_encode_stats(&x, id, dist_node_name(r->cfg.node), counts.buff, (size_t)counts.index) == 0)
			dist_node_send(r->cfg.node, asker, x.buff, (size_t)x.index);
		ei_x_free(&x);
	}
	ei_x_free(&counts);
}

static void on_stats(struct region *r, const struct shard_msg *sm)
{
	for (struct stats_request *q = r->stats_requests; q; q = q->next) {
		if (q->id != sm->shard)
			continue;
		term_x_append_raw(&q->pairs, sm->id, sm->id_len);
		term_x_append_raw(&q->pairs, sm->msg, sm->msg_len);
		q->entries++;
		if (--q->waiting == 0)
			finish_stats(q);
		return;
	}
}

static void encode_region_stats(struct region *r, ei_x_buff *x)
{
	struct region_stats st;
	region_get_stats(r, &st);
	ei_x_encode_tuple_header(x, 2);
	ei_x_encode_atom(x, "ok");
	ei_x_encode_map_header(x, 6);
	ei_x_encode_atom(x, "entities");
	ei_x_encode_ulonglong(x, st.entities);
	ei_x_encode_atom(x, "shards");
	ei_x_encode_ulong(x, st.shards);
	ei_x_encode_atom(x, "buffered");
	ei_x_encode_ulong(x, st.buffered);
	ei_x_encode_atom(x, "delivered");
	ei_x_encode_ulonglong(x, st.delivered);
	ei_x_encode_atom(x, "dropped");
	ei_x_encode_ulonglong(x, st.dropped);
	ei_x_encode_atom(x, "forwarded");
	ei_x_encode_ulonglong(x, st.forwarded);
}

static void finish_leaving(struct region *r)
{
	evloop_timer_stop(r->cfg.loop, &r->leave_timer);
	region_shutdown(r);
	if (r->cfg.on_stopped)
		r->cfg.on_stopped(r->cfg.on_stopped_arg, r);
}

/* Until every shard has been handed off (or handoff_timeout_ms passed), the
 * region goes on routing and serving what it still hosts. */
static void on_leave_check(struct evloop *loop, void *arg)
{
	struct region *r = arg;
	if (r->nlocal == 0 || evloop_now_ms(loop) >= r->leave_deadline) {
		finish_leaving(r);
		return;
	}
	evloop_timer_start(loop, &r->leave_timer, 50);
}

/* graceful_shutdown: ask the coordinator to move this region's shards to
 * the others, then stop. Alone in the cluster, there is nowhere to move
 * them: stop at once. */
static void begin_leaving(struct region *r)
{
	if (r->leaving || r->stopped)
		return;
	const char *nodes[256];
	size_t n = r->cfg.members_hosting ? r->cfg.members_hosting(r->cfg.members_arg, r->cfg.type->name, nodes, 256)
					  : 0;
	bool others = false;
	for (size_t k = 0; k < n; k++)
		others = others || strcmp(nodes[k], dist_node_name(r->cfg.node)) != 0;
	if (!others || r->nlocal == 0 || !r->registered) {
		finish_leaving(r);
		return;
	}
	r->leaving = true;
	r->leave_deadline = evloop_now_ms(r->cfg.loop) + r->cfg.handoff_timeout_ms;
	send_to_coordinator(r, SMSG_REGION_LEAVING, 0);
	evloop_timer_start(r->cfg.loop, &r->leave_timer, 50);
}

static void on_call(struct region *r, const struct gen_call *call)
{
	const char *req = call->request;
	size_t i = 0;
	struct envelope e = {.is_call = true, .from = &call->from, .tag = call->tag, .tag_len = call->tag_len};
	if (term_get_tuple(req, &i) == 2) {
		const char *raw_id = req + i;
		term_skip(req, &i);
		size_t raw_id_len = (size_t)(req + i - raw_id);
		e.msg = req + i;
		term_skip(req, &i);
		e.msg_len = (size_t)(req + i - e.msg);
		route(r, &e, raw_id, raw_id_len);
		return;
	}
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	bool shutdown = false;
	if (term_is_atom(req, 0, "get_shard_region_state"))
		encode_region_state(r, &x);
	else if (term_is_atom(req, 0, "get_cluster_sharding_stats")) {
		ei_x_free(&x);
		start_cluster_stats(r, call); /* answers when the members have */
		return;
	}
	else if (term_is_atom(req, 0, "get_region_stats"))
		encode_region_stats(r, &x);
	else if (term_is_atom(req, 0, "graceful_shutdown"))
		shutdown = ei_x_encode_atom(&x, "ok") == 0;
	else
		term_x_error_tagged_raw(&x, "bad_request", call->request, call->request_len);
	send_call_reply(r, &call->from, call->tag, call->tag_len, &x);
	ei_x_free(&x);
	if (shutdown)
		begin_leaving(r);
}

static void region_handle(void *ctx, struct proc *self, const struct proc_msg *m)
{
	(void)self;
	struct region *r = ctx;
	struct gen_call call;
	int rc = gen_call_parse(m->term, m->len, &call);
	if (rc == 1) {
		on_call(r, &call);
		return;
	}
	if (rc < 0) {
		log_debug(r->cfg.log, "region %s: malformed call ignored", r->cfg.type->name);
		return;
	}
	if (r->replica != NULL) {
		const struct remember_msg_hooks hooks = {on_remembered_live, hosts_shard, reannounce, r};
		if (remember_replica_handle(r->replica, m->term, m->len, &hooks) != 0)
			return;
	}
	struct shard_msg sm;
	rc = shard_msg_decode(m->term, m->len, &sm);
	if (rc == 1) {
		on_internal(r, &sm, m->from);
		return;
	}
	size_t i = 0;
	if (rc == 0 && term_get_tuple(m->term, &i) == 2) {
		const char *raw_id = m->term + i;
		term_skip(m->term, &i);
		struct envelope e = {.from = m->from, .msg = m->term + i, .msg_len = m->len - i};
		route(r, &e, raw_id, (size_t)(m->term + i - raw_id));
		return;
	}
	r->dropped++;
	log_debug(r->cfg.log, "region %s: message that is not {EntityId, Msg} dropped", r->cfg.type->name);
}

/* ---- life ---- */

struct region *region_start(const struct region_config *cfg, int *err)
{
	struct region *r = calloc(1, sizeof *r);
	if (r == NULL || (r->slots = calloc(cfg->nshards, sizeof *r->slots)) == NULL) {
		free(r);
		*err = -ENOMEM;
		return NULL;
	}
	r->cfg = *cfg;
	snprintf(r->coordinator_name, sizeof r->coordinator_name, "%s", cfg->coordinator_name);
	r->cfg.coordinator_name = r->coordinator_name;
	int type_atom_len = 0;
	/* As ei_x_encode_atom did per reply: a name of MAXATOMLEN bytes or
	 * more is refused before anything is written (ei_encode_atom would
	 * cut it short and send another atom). */
	size_t name_len = strnlen(cfg->type->name, MAXATOMLEN);
	if (name_len < MAXATOMLEN && ei_encode_atom_len_as(r->type_atom, &type_atom_len, cfg->type->name,
							   (int)name_len, ERLANG_LATIN1, ERLANG_UTF8) == 0)
		r->type_atom_len = (size_t)type_atom_len;
	ev_timer_init(&r->retry_timer, on_retry, r);
	ev_timer_init(&r->idle_timer, on_idle_sweep, r);
	ev_timer_init(&r->leave_timer, on_leave_check, r);
	scratch_init(&r->canon_buf);
	scratch_init(&r->reply_buf);
	scratch_init(&r->tell_buf);
	r->proc = dist_node_spawn(cfg->node, cfg->type->name, region_handle, r, err);
	if (r->proc == NULL) {
		free(r->slots);
		free(r);
		return NULL;
	}
	r->self = r->proc->pid;
	if (cfg->remember != NULL) {
		struct remember_replica_config rcfg = {
			.node = cfg->node, .loop = cfg->loop, .log = cfg->log, .store = cfg->remember,
			.type_name = cfg->type->name, .from = r->self,
			.members_hosting = cfg->members_hosting, .members_arg = cfg->members_arg,
		};
		if (cfg->members_hosting == NULL)
			*err = -EINVAL; /* remembered entities go to the members hosting the type */
		else
			r->replica = remember_replica_new(&rcfg, err);
		if (r->replica == NULL) {
			dist_node_exit(cfg->node, r->proc, "normal");
			free(r->slots);
			free(r);
			return NULL;
		}
	}
	dist_node_on_nodedown(cfg->node, region_nodedown, r);
	evloop_timer_start(cfg->loop, &r->retry_timer, cfg->retry_interval_ms);
	if (cfg->passivate_idle_ms > 0)
		on_idle_sweep(cfg->loop, r);
	return r;
}

void region_shutdown(struct region *r)
{
	if (r->stopped)
		return;
	r->stopped = true;
	evloop_timer_stop(r->cfg.loop, &r->leave_timer);
	evloop_timer_stop(r->cfg.loop, &r->retry_timer);
	evloop_timer_stop(r->cfg.loop, &r->idle_timer);
	for (uint32_t s = 0; s < r->cfg.nshards; s++) {
		struct shard_slot *slot = &r->slots[s];
		/* Buffered calls learn why they will get no entity reply. */
		while (slot->head) {
			struct pending *p = slot->head;
			slot->head = p->next;
			struct envelope e;
			envelope_of(p, &e);
			if (e.is_call)
				answer_error_atom(r, &e, "shutting_down");
			free(p);
		}
		slot->tail = NULL;
		slot->nbuffered = 0;
		shard_free(slot->shard);
		slot->shard = NULL;
	}
	r->buffered = 0;
	r->nlocal = 0;
	send_to_coordinator(r, SMSG_REGION_STOPPED, 0);
	dist_node_exit(r->cfg.node, r->proc, "normal");
	r->proc = NULL;
	log_info(r->cfg.log, "region %s stopped", r->cfg.type->name);
}

bool region_stopped(const struct region *r) { return r->stopped; }

int region_set_downed(struct region *r, const char *const *nodes, size_t n)
{
	char (*copy)[256] = NULL;
	if (n > 0 && (copy = malloc(n * sizeof *copy)) == NULL)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++)
		snprintf(copy[k], sizeof copy[k], "%s", nodes[k]);
	free(r->downed);
	r->downed = copy;
	r->ndowned = n;
	for (uint32_t s = 0; s < r->cfg.nshards; s++) {
		struct shard_slot *slot = &r->slots[s];
		if (slot->home == HOME_REMOTE && is_downed(r, slot->home_region.node))
			slot->home = HOME_UNKNOWN;
	}
	return 0;
}

void region_resume(struct region *r)
{
	if (!may_deliver(r))
		return;
	if (r->remembered_pending) {
		r->remembered_pending = false;
		for (uint32_t s = 0; s < r->cfg.nshards; s++)
			if (r->slots[s].home == HOME_LOCAL && r->slots[s].remembered_pending)
				start_remembered(r, r->slots[s].shard);
	}
	for (uint32_t s = 0; s < r->cfg.nshards && may_deliver(r); s++) {
		struct shard_slot *slot = &r->slots[s];
		if (slot->home == HOME_LOCAL && slot->head != NULL)
			flush_slot(r, slot);
		if (slot->home == HOME_LOCAL && slot->handing_off && slot->acks >= slot->acks_needed)
			finish_handoff_when_flushed(r, s); /* it waited for the flush */
	}
}

void region_free(struct region *r)
{
	if (r == NULL)
		return;
	region_shutdown(r);
	while (r->stats_requests) {
		struct stats_request *q = r->stats_requests;
		r->stats_requests = q->next;
		evloop_timer_stop(r->cfg.loop, &q->timer);
		ei_x_free(&q->pairs);
		free(q->tag);
		free(q);
	}
	dist_node_off_nodedown(r->cfg.node, region_nodedown, r);
	remember_replica_free(r->replica);
	free(r->downed);
	free(r->slots);
	scratch_free(&r->canon_buf);
	scratch_free(&r->reply_buf);
	scratch_free(&r->tell_buf);
	free(r);
}

void region_get_stats(const struct region *r, struct region_stats *out)
{
	memset(out, 0, sizeof *out);
	for (uint32_t s = 0; s < r->cfg.nshards; s++)
		if (r->slots[s].shard)
			out->entities += r->slots[s].shard->entities.count;
	out->shards = r->nlocal;
	out->buffered = r->buffered;
	out->delivered = r->delivered;
	out->dropped = r->dropped;
	out->forwarded = r->forwarded;
}
