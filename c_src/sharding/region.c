/*
 * region.c — the core of a region (region.h): routing an entity message to
 * its shard, the per-shard buffers of messages waiting for a home, delivery
 * to a local shard or forwarding to the home region, the mailbox, and the
 * lease gate (entities run only while cfg.may_deliver says so). The
 * coordinator protocol, remembered entities, the inspection calls and
 * shutdown are in the other region_*.c files (region_internal.h).
 */
#include "sharding/region.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/gen_call.h"
#include "distribution/sys_msg.h"
#include "etf/entity_id.h"
#include "etf/phash2.h"
#include "etf/shardnode_msg.h"
#include "etf/term.h"
#include "sharding/region_internal.h"
#include "sharding/region_buffer.h"
#include "sharding/region_coordinator.h"
#include "sharding/region_deliver.h"
#include "sharding/region_hosting.h"
#include "sharding/region_handoff_state.h"
#include "sharding/region_remember.h"
#include "sharding/region_send.h"
#include "sharding/region_shutdown.h"
#include "sharding/region_stats.h"
#include "sharding/region_store.h"
#include "etf/term_encode.h"


/* ---- what cannot be routed ---- */

/* A message this region cannot route or keep (`reason`, a label for the
 * metrics; `why`, for people): a dead letter, through the outlet as all
 * that leaves the region (protocol/outlet.h): counted, and on a running
 * node the first of each reason logged with the message itself, the next
 * ones summed up each interval (drop_log.h): a peer sending garbage is
 * seen, and cannot flood the log. `term` may be NULL. */
static void drop(struct region *r, const char *reason, const char *why, const char *term)
{
	outlet_dead_letter(&r->cfg.out, &r->drops.log, reason, why, term);
}

/* ---- the store's outcomes ---- */

/* What waited in a hosted slot for a load or a claim goes on; a handoff
 * that waited for it goes too. */
static void resume_slot(struct region *r, uint32_t shard)
{
	struct shard_slot *slot = &r->slots[shard];
	if (slot->shard == NULL || !region_slot_hosted(&slot->st))
		return;
	region_flush_slot(r, slot);
	if (region_slot_handoff_ready(&slot->st))
		region_hand_off_when_flushed(r, shard);
}

/* resume_slot as host_entities_handle's `settled`. */
static void resume_slot_of(void *region, uint32_t shard) { resume_slot(region, shard); }

/* Held replies, state chunks' acknowledgements and loads that waited for
 * writes to be durable go on, as far as they are now. */
static void after_durable(struct region *r)
{
	region_state_on_committed(r);
	region_step_owed(r); /* streams that could not go on */
	if (!r->slots_awaiting_commit)
		return;
	r->slots_awaiting_commit = false;
	for (uint32_t s = 0; region_store_next_load_ready(r, &s); s++)
		resume_slot(r, s); /* its load starts now */
}

/* Writes durable up to `upto`: held replies go (region_store.c), state
 * chunks written meanwhile are acknowledged (region_handoff_state.c), and
 * the slots whose load waited for those commits go on. */
static void on_store_written(void *arg, uint64_t upto, int status)
{
	struct region *r = arg;
	region_store_on_written(r, upto, status);
	after_durable(r);
}

static void on_store_loaded(void *arg, uint64_t token, int found, const char *state, size_t len)
{
	struct region *r = arg;
	uint32_t shard;
	if (region_store_on_loaded(r, token, found, state, len, &shard))
		resume_slot(r, shard);
}

static void on_store_claimed(void *arg, uint32_t shard)
{
	struct region *r = arg;
	if (region_store_on_claimed(r, shard))
		resume_slot(r, shard);
}

static void on_store_scanned(void *arg, uint64_t token, int status, const char *chunk, size_t len, bool more,
			     const char *last_key, size_t last_key_len)
{
	struct region *r = arg;
	region_state_on_scanned(r, token, status, chunk, len, more, last_key, last_key_len);
	region_step_owed(r); /* a stream that could not go on */
}

static void on_store_fenced(void *arg, uint32_t shard)
{
	struct region *r = arg;
	if (region_store_on_fenced(r, shard,
				   "another member claimed it (in a shared store, or as the home a newer replica set names)"))
		region_step(r, shard, SLOT_FENCED);
}

/* ---- routing ---- */

/* The message waits at the end of its shard's buffer, or, the buffers
 * full (buffer_size), a call is answered {error, overloaded} and a tell
 * dropped. */
static void wait_for_home(struct region *r, struct shard_slot *slot, const struct envelope *e)
{
	if (region_buffer_append(r, slot, e))
		return;
	if (e->is_call)
		region_answer_error(r, e, "overloaded");
	else
		drop(r, "buffer_full", "a tell, with buffer_size messages waiting for their shards' homes", e->msg);
}

/* Routes one entity message. `raw_id` is the id as the sender encoded it.
 * A message that finds its shard's buffer non-empty waits behind it, so
 * the order of one sender's messages holds. */
static void route(struct region *r, struct envelope *e, const char *raw_id, size_t raw_id_len)
{
	e->t0_ns = evloop_now_ns(r->cfg.loop);
	e->arrived_ns = e->t0_ns > r->incoming_age_ns ? e->t0_ns - r->incoming_age_ns : 1;
	e->kind = (uint8_t)region_msg_kind(e->msg, e->from, e->is_call);
	ei_x_buff spare, *canon = scratch_get(&r->bufs.canon, &spare);
	if (canon == NULL)
		return;
	int rc = entity_id_canonical(raw_id, raw_id_len, canon);
	uint32_t shard = 0;
	if (rc == 0)
		rc = phash2_range(canon->buff, (size_t)canon->index, r->cfg.number_of_shards, &shard);
	if (rc) {
		e->id = raw_id;
		e->id_len = raw_id_len;
		ei_x_buff x;
		if (ei_x_new(&x) == 0) {
			term_x_error_tagged_raw(&x, "bad_entity_id", raw_id, raw_id_len);
			region_answer(r, e, &x);
			ei_x_free(&x);
		}
		scratch_put(&r->bufs.canon, canon);
		return;
	}
	e->id = canon->buff;
	e->id_len = (size_t)canon->index;
	struct shard_slot *slot = &r->slots[shard];
	enum region_slot_hold hold = region_slot_hold(&slot->st, r->held.written_upto);
	if (hold == SLOT_HOLD_NONE && region_slot_hosted(&slot->st) && region_may_deliver(r) &&
	    !region_entities_must_wait(r, shard, e)) {
		r->entities->deliver(r, slot->shard, e);
	} else if (hold == SLOT_HOLD_NONE && slot->st.state == SLOT_REMOTE) {
		/* Not written to the home's node (no connection up): it waits
		 * in the buffer, first, for a connection or another home. */
		int fw = region_forward(r, &slot->home_region, e);
		if (fw != 0) {
			wait_for_home(r, slot, e);
			region_home_unwritable(r, shard, fw);
		}
	} else {
		wait_for_home(r, slot, e);
		/* Even when this message could not wait, the home is asked for,
		 * so the next one finds it. */
		region_need_home(r, shard);
	}
	scratch_put(&r->bufs.canon, canon);
}

/* ---- the lease gate ---- */

void region_resume(struct region *r)
{
	/* A stopped region has freed its shards: nothing of it may resume
	 * (remembered entities waiting for the lease would start in a shard
	 * that is gone). The glue calls this on every membership change. */
	if (r->stopped)
		return;
	if (r->hosting != NULL)
		host_entities_check_host(r->hosting, false); /* the host may have answered */
	if (!region_may_deliver(r))
		return;
	region_remember_resume(r);
	for (uint32_t s = 0; s < r->cfg.number_of_shards && region_may_deliver(r); s++) {
		struct shard_slot *slot = &r->slots[s];
		if (region_slot_hosted(&slot->st) && slot->head != NULL)
			region_flush_slot(r, slot);
		if (region_slot_handoff_ready(&slot->st))
			region_hand_off_when_flushed(r, s); /* it waited for the flush */
	}
}

/* The retry timer: the coordinator protocol's retries and deadlines, the
 * messages held for a lease that came back unnoticed, the store's replies
 * past their timeout. */
static void on_retry(struct evloop *loop, void *arg)
{
	struct region *r = arg;
	region_coordinator_tick(r);
	region_resume(r);
	region_store_tick(r);
	if (r->hosting != NULL)
		host_entities_tick(r->hosting);
	drop_log_tick(&r->drops.log, evloop_now_ms(loop));
	/* Unregistered, retry soon: a coordinator that has just taken over may
	 * have ignored our first try, sent while it was not active yet. */
	uint32_t next = r->cfg.retry_interval_ms;
	if (!r->coord.registered && next > REGION_REGISTER_RETRY_MS)
		next = REGION_REGISTER_RETRY_MS;
	evloop_timer_start(loop, &r->timers.retry, next);
}

static void on_idle_sweep(struct evloop *loop, void *arg)
{
	struct region *r = arg;
	uint32_t now = region_now32(r);
	/* Without a lease, entity code must not run (their stop callbacks), and
	 * held messages make entities look idle. A singleton is never idle: it
	 * runs as long as its member is the oldest. A shard sending its states
	 * to its new home is frozen: not hosted, so left alone. */
	for (uint32_t s = 0; s < r->cfg.number_of_shards && region_may_deliver(r) && !r->cfg.singleton; s++)
		if (r->slots[s].shard != NULL && region_slot_hosted(&r->slots[s].st))
			shard_passivate_idle(r->slots[s].shard, now, r->cfg.passivate_idle_after_ms);
	uint32_t every = r->cfg.passivate_idle_after_ms / 4;
	evloop_timer_start(loop, &r->timers.idle, every < 10 ? 10 : every);
}

/* ---- the mailbox ---- */

static void on_call(struct region *r, const struct gen_call *call)
{
	const char *req = call->request;
	size_t i = 0;
	struct envelope e = {.is_call = true, .from = &call->from, .tag = call->tag, .tag_len = call->tag_len};
	if (r->cfg.singleton) {
		e.msg = req;
		e.msg_len = call->request_len;
		route(r, &e, r->ident.type_atom, r->ident.type_atom_len);
		return;
	}
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
	int rc;
	if (term_is_atom(req, 0, "get_shard_region_state")) {
		rc = region_encode_state(r, &x);
	} else if (term_is_atom(req, 0, "get_cluster_sharding_stats")) {
		ei_x_free(&x);
		region_stats_start(r, call); /* answers when the members have */
		return;
	} else if (term_is_atom(req, 0, "get_region_stats")) {
		rc = region_encode_stats(r, &x);
	} else if (term_is_atom(req, 0, "graceful_shutdown")) {
		rc = term_x_encode_atom(&x, "ok");
		shutdown = rc == 0;
	} else {
		rc = term_x_error_tagged_raw(&x, "bad_request", call->request, call->request_len);
	}
	if (term_x_whole_or_enomem(&x, 0, rc) == 0)
		region_send_call_reply(r, &call->from, call->tag, call->tag_len, &x);
	ei_x_free(&x);
	if (shutdown)
		region_begin_leaving(r);
}

/* sys:get_state/get_status and the other system messages (sys_msg.h),
 * answered at once. */
static void on_system(struct region *r, const struct gen_call *call)
{
	ei_x_buff state;
	if (ei_x_new(&state) < 0)
		return;
	int rc = region_encode_sys_state(r, &state);
	(void)sys_msg_answer(&r->cfg.out, &r->pid, call, "shardnode_region", &state, rc);
	ei_x_free(&state);
}

/* The Erlang client's {'$shardnode_calls', From, [{Tag, EntityId, Msg}]}
 * (docs/protocol.md "Batched calls"): each element is the call
 * {'$gen_call', {From, Tag}, {EntityId, Msg}}, in order. Its Tag asks for
 * batched replies (reply_batch.h), so the turn's replies to From leave as
 * one message. An element that is not such a triple cannot be answered:
 * dropped and counted. */
static void on_calls(struct region *r, const char *t, size_t len)
{
	size_t i = 0;
	(void)term_get_tuple(t, &i); /* {'$shardnode_calls', ...}: shardnode_msg_classify said so */
	term_skip(t, &i);
	erlang_pid from;
	int count = 0, idx;
	if (term_get_pid(t, &i, &from) != 0 || (idx = (int)i, ei_decode_list_header(t, &idx, &count)) < 0) {
		drop(r, "bad_batch", "a batch of calls without a pid and a list", t);
		return;
	}
	i = (size_t)idx;
	for (int k = 0; k < count && i < len; k++) {
		size_t at = i;
		term_skip(t, &i);
		size_t j = at;
		if (term_get_tuple(t, &j) != 3) {
			drop(r, "bad_batch", "a call of a batch that is not {Tag, EntityId, Msg}", t + at);
			continue;
		}
		struct envelope e = {.is_call = true, .from = &from, .tag = t + j};
		term_skip(t, &j);
		e.tag_len = (size_t)(t + j - e.tag);
		const char *raw_id = t + j;
		term_skip(t, &j);
		size_t raw_id_len = (size_t)(t + j - raw_id);
		e.msg = t + j;
		e.msg_len = (size_t)(t + i - e.msg);
		if (r->cfg.singleton)
			route(r, &e, r->ident.type_atom, r->ident.type_atom_len);
		else
			route(r, &e, raw_id, raw_id_len);
	}
}

/* gen_server:cast/2's {'$gen_cast', Request}: Request is a tell — {Id,
 * Msg}, or a singleton's message — whose reply nobody waits for, so none
 * is sent. */
static void on_cast(struct region *r, const char *req, size_t len)
{
	struct envelope e = {.from = NULL, .msg = req, .msg_len = len};
	if (r->cfg.singleton) {
		route(r, &e, r->ident.type_atom, r->ident.type_atom_len);
		return;
	}
	size_t i = 0;
	if (term_get_tuple(req, &i) != 2) {
		drop(r, "bad_cast", "a cast that is not {EntityId, Msg}", req);
		return;
	}
	const char *raw_id = req + i;
	term_skip(req, &i);
	e.msg = req + i;
	e.msg_len = len - i;
	route(r, &e, raw_id, (size_t)(req + i - raw_id));
}

static void on_internal(struct region *r, const struct shard_msg *sm, const erlang_pid *from)
{
	/* Stats messages carry a request id where the others carry a shard. */
	if (sm->kind == SMSG_GET_STATS) {
		region_stats_on_get(r, sm->shard, &sm->pid);
		return;
	}
	if (sm->kind == SMSG_STATS) {
		region_stats_on_answer(r, sm);
		return;
	}
	if (sm->shard >= r->cfg.number_of_shards)
		return;
	if (sm->kind == SMSG_TELL) {
		struct envelope e = {.from = sm->has_pid ? &sm->pid : NULL, .msg = sm->msg, .msg_len = sm->msg_len};
		route(r, &e, sm->id, sm->id_len);
		return;
	}
	region_on_coordinator_msg(r, sm, from);
}

/* A replica set, a home's writes, a replica's replies: the replicated
 * store's (replicated_store.h), whose outcomes come back through the
 * store's callbacks above. Only the registered coordinator's sets count. */
static void on_replica(struct region *r, const struct replica_msg *m, const erlang_pid *from)
{
	if (r->replication == NULL)
		return;
	bool from_coordinator = from != NULL && r->coord.registered && term_pid_equal(from, &r->coord.pid);
	replicated_store_handle(r->replication, m, from_coordinator);
}

static void region_handle(void *ctx, struct proc *self, const struct proc_msg *m);

/* A message of another member, {'$shardnode', Kind, ...}: a forwarded
 * message that waited (aged), remembered entities, replicated state, or
 * the region and coordinator protocol. Returns 1 if handled, 0 if it is
 * none of them (an unknown kind), -1 if it is malformed. */
static int on_member_msg(struct region *r, struct proc *self, const struct proc_msg *m)
{
	struct proc_msg inner;
	uint64_t age_ns;
	if (r->incoming_age_ns == 0 && region_unwrap_aged(m, &inner, &age_ns)) {
		r->incoming_age_ns = age_ns ? age_ns : 1;
		region_handle(r, self, &inner);
		r->incoming_age_ns = 0;
		return 1;
	}
	if (region_remember_handle(r, m->term, m->len, m->via))
		return 1;
	struct replica_msg rm;
	if (replica_msg_decode(m->term, m->len, &rm) == 1) {
		on_replica(r, &rm, m->from);
		return 1;
	}
	struct shard_msg sm;
	int rc = shard_msg_decode(m->term, m->len, &sm);
	if (rc == 1)
		on_internal(r, &sm, m->from);
	return rc < 0 ? -1 : rc;
}

/* A message no part claims: to a singleton, the message itself for its
 * one entity; else {EntityId, Msg} for its entity, or dropped. */
static void on_plain(struct region *r, const struct proc_msg *m)
{
	if (r->cfg.singleton) {
		struct envelope e = {.from = m->from, .msg = m->term, .msg_len = m->len};
		route(r, &e, r->ident.type_atom, r->ident.type_atom_len);
		return;
	}
	size_t i = 0;
	if (term_get_tuple(m->term, &i) == 2) {
		const char *raw_id = m->term + i;
		term_skip(m->term, &i);
		struct envelope e = {.from = m->from, .msg = m->term + i, .msg_len = m->len - i};
		route(r, &e, raw_id, (size_t)(m->term + i - raw_id));
		return;
	}
	drop(r, "not_entity_message", "a message that is not {EntityId, Msg}", m->term);
}

/* Every message to the region: its head read once (shardnode_msg.h), and
 * the part it is for called. */
static void region_handle(void *ctx, struct proc *self, const struct proc_msg *m)
{
	struct region *r = ctx;
	struct gen_call call;
	switch (shardnode_msg_classify(m->term)) {
	case SN_CLASS_PAIR:
	case SN_CLASS_OTHER:
		break;
	case SN_CLASS_GEN_CALL:
		if (gen_call_parse(m->term, m->len, &call) == 1)
			on_call(r, &call);
		else
			drop(r, "malformed_call", "a '$gen_call' whose From is not {Pid, Tag}, so no reply can be sent",
			     m->term);
		return;
	case SN_CLASS_GEN_CAST: {
		size_t ci = 0;
		(void)term_get_tuple(m->term, &ci);
		term_skip(m->term, &ci);
		on_cast(r, m->term + ci, m->len - ci);
		return;
	}
	case SN_CLASS_CALLS:
		on_calls(r, m->term, m->len);
		return;
	case SN_CLASS_SYSTEM:
		if (gen_call_parse_system(m->term, m->len, &call) == 1) {
			on_system(r, &call);
			return;
		}
		break;
	case SN_CLASS_FROM_HOST:
		/* A hand-off may have waited for a completion. */
		if (r->hosting != NULL && host_entities_handle(r->hosting, m->term, m->len, resume_slot_of, r))
			return;
		break;
	case SN_CLASS_MEMBER: {
		int rc = on_member_msg(r, self, m);
		if (rc > 0)
			return;
		if (rc < 0) {
			drop(r, "not_entity_message", "a message that is not {EntityId, Msg}", m->term);
			return;
		}
		break;
	}
	}
	on_plain(r, m);
}

/* ---- life ---- */

/* shard_limit.may_evict: a shard hosted here, not one whose states are
 * being sent away (frozen, as the idle sweep leaves it) nor one arriving
 * (its slot's incoming); of a type run on a host, an entity with no
 * message at its process or waiting for it — one stopped then would have
 * its messages start a second process while the first still runs. */
static bool may_evict(void *arg, const struct shard *s, const struct entity *e)
{
	const struct region *r = arg;
	const struct shard_slot *slot = &r->slots[s->id];
	return slot->shard == s && region_slot_hosted(&slot->st) && (r->hosting == NULL || host_entities_idle(e));
}

/* ---- the store ---- */

/* What a replicated store asks of its region (replicated_store.h). */
static int replication_to_coordinator(void *arg, const char *buf, size_t len)
{
	struct region *r = arg;
	if (!r->coord.registered)
		return -ENOTCONN;
	return region_coordinator_send(r, buf, len);
}

/* The type's store, its outcomes to `cb`: with state_replicas and a
 * store of this node's own, a replicated store over it; else the node's
 * store as it is. Returns 0 (also without a store) or the store's error. */
static int open_store(struct region *r, const struct state_store_callbacks *cb)
{
	if (!region_store_wanted(r))
		return 0;
	int err = 0;
	struct state_store_type *t;
	if (r->cfg.state_replicas > 0 && !r->cfg.store->shared) {
		const struct replication_env env = {
			.loop = r->cfg.loop,
			.log = r->cfg.log,
			.name = r->cfg.name,
			.number_of_shards = r->cfg.number_of_shards,
			.store_timeout_ms = r->cfg.store_timeout_ms,
			.self = r->pid,
			.send = region_send_encoded,
			.to_coordinator = replication_to_coordinator,
			.serves = region_serves,
			.arg = r,
		};
		r->replication = replicated_store_open(r->cfg.store, r->cfg.name, cb, &env, &err);
		t = r->replication != NULL ? replicated_store_type(r->replication) : NULL;
	} else {
		t = state_store_type_open(r->cfg.store, r->cfg.name, cb, &err);
	}
	if (t == NULL)
		return err;
	region_store_start(r, t);
	return 0;
}

struct region *region_start(const struct region_config *cfg, int *err)
{
	struct region *r = calloc(1, sizeof *r);
	if (r == NULL || (r->slots = calloc(cfg->number_of_shards, sizeof *r->slots)) == NULL) {
		free(r);
		*err = -ENOMEM;
		return NULL;
	}
	r->cfg = *cfg;
	if (r->cfg.out.ops == NULL)
		r->cfg.out = dist_node_outlet(cfg->node);
	snprintf(r->coord.name, sizeof r->coord.name, "%s", cfg->coordinator_name);
	r->cfg.coordinator_name = r->coord.name;
	snprintf(r->ident.name, sizeof r->ident.name, "%s", cfg->name ? cfg->name : cfg->type->name);
	r->cfg.name = r->ident.name;
	int type_atom_len = 0;
	/* As ei_x_encode_atom did per reply: a name of MAXATOMLEN bytes or
	 * more is refused (ei_encode_atom would cut it short and send another
	 * atom). */
	size_t name_len = strnlen(r->ident.name, MAXATOMLEN);
	if (name_len >= MAXATOMLEN || ei_encode_atom_len_as(r->ident.type_atom, &type_atom_len, r->ident.name, (int)name_len,
							    ERLANG_LATIN1, ERLANG_UTF8) != 0 ||
	    (cfg->singleton && cfg->number_of_shards != 1)) {
		free(r->slots);
		free(r);
		*err = -EINVAL;
		return NULL;
	}
	r->ident.type_atom_len = (size_t)type_atom_len;
	snprintf(r->drops.who, sizeof r->drops.who, "region %s", r->ident.name);
	drop_log_init(&r->drops.log, cfg->log, r->drops.who, LOG_WARN);
	evloop_timer_init(&r->timers.retry, on_retry, r);
	evloop_timer_init(&r->timers.idle, on_idle_sweep, r);
	region_leave_poll_init(r);
	scratch_init(&r->bufs.canon);
	scratch_init(&r->bufs.reply);
	scratch_init(&r->bufs.tell);
	scratch_init(&r->bufs.state);
	r->proc = dist_node_spawn(cfg->node, r->ident.name, region_handle, r, err);
	if (r->proc == NULL) {
		free(r->slots);
		free(r);
		return NULL;
	}
	r->pid = r->proc->pid;
	int rc = region_hosting_start(r);
	if (rc == 0)
		rc = region_remember_start(r);
	if (rc != 0) {
		*err = rc;
		host_entities_free(r->hosting);
		dist_node_exit(cfg->node, r->proc, "normal");
		free(r->slots);
		free(r);
		return NULL;
	}
	/* The store's outcomes come back here, the region's hub, which hands
	 * each to its part and then goes on with the slot. */
	const struct state_store_callbacks store_cb = {
		.written = on_store_written,
		.loaded = on_store_loaded,
		.scanned = on_store_scanned,
		.claimed = on_store_claimed,
		.fenced = on_store_fenced,
		.arg = r,
	};
	/* Without nodedown a region would wait for ever on a home that died;
	 * without reach, on a connection to a home that never comes up. */
	if ((rc = open_store(r, &store_cb)) != 0 || (rc = dist_node_on_nodedown(cfg->node, region_on_nodedown, r)) != 0 ||
	    (rc = dist_node_on_reach(cfg->node, region_on_reach, r)) != 0) {
		*err = rc;
		dist_node_off_nodedown(cfg->node, region_on_nodedown, r);
		region_store_stop(r);
		region_state_release_acks(r, UINT64_MAX);
		remember_share_free(r->remember.share);
		host_entities_free(r->hosting);
		dist_node_exit(cfg->node, r->proc, "normal");
		free(r->slots);
		free(r);
		return NULL;
	}
	region_deliver_choose(r);
	evloop_timer_start(cfg->loop, &r->timers.retry, cfg->retry_interval_ms);
	if (cfg->max_active_entities > 0 && cfg->remember == NULL) {
		/* Last, as it cannot fail: without memory for the frequencies,
		 * the least recently used alone. */
		/* By frequency with a store only: a newcomer not let in loses
		 * nothing there, where without one it would start afresh on its
		 * next message. */
		/* Not for a type run on a host either: the newcomer turned away
		 * would be the one whose message is on its way to its process. */
		bool by_frequency = cfg->limit_by_frequency && r->store != NULL && cfg->host == NULL;
		if (shard_limit_init(&r->limit.lru, cfg->max_active_entities, by_frequency) != 0) {
			log_warn(cfg->log, "region %s: no memory for the entities' frequencies: max_active_entities "
				 "passivates the least recently used", r->cfg.name);
			(void)shard_limit_init(&r->limit.lru, cfg->max_active_entities, false);
		}
		r->limit.lru.may_evict = may_evict;
		r->limit.lru.may_evict_arg = r;
		r->limit.on = true;
	}
	if (cfg->passivate_idle_after_ms > 0)
		on_idle_sweep(cfg->loop, r);
	return r;
}

void region_flush_batches(struct region *r)
{
	if (r != NULL)
		replicated_store_flush(r->replication);
}

void region_free(struct region *r)
{
	if (r == NULL)
		return;
	region_shutdown(r);
	host_entities_free(r->hosting); /* after the shards: their entities' stop hooks are its */
	region_stats_free(r);
	dist_node_off_nodedown(r->cfg.node, region_on_nodedown, r);
	dist_node_off_reach(r->cfg.node, region_on_reach, r);
	remember_share_free(r->remember.share);
	node_set_free(&r->downed);
	free(r->slots);
	scratch_free(&r->bufs.canon);
	scratch_free(&r->bufs.reply);
	scratch_free(&r->bufs.tell);
	scratch_free(&r->bufs.state);
	if (r->limit.on)
		shard_limit_free(&r->limit.lru);
	free(r);
}
