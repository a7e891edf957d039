/*
 * region_coordinator.c — a region's side of the coordinator protocol
 * (shard_msg.h, docs/protocol.md): registering with the active
 * coordinator, asking for shard homes and taking its answers, and handoff
 * between regions (begin_handoff, handoff_ack, handoff, shard_stopped),
 * with what nodedown and downed members change. The states a shard goes
 * through are region_slot.h's; this file does what its steps say. The
 * entity states a handoff carries are region_handoff_state.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etf/term.h"
#include "sharding/region_internal.h"
#include "sharding/region_coordinator.h"
#include "sharding/region_deliver.h"
#include "sharding/region_buffer.h"
#include "sharding/region_handoff_state.h"
#include "sharding/region_remember.h"
#include "sharding/region_instances.h"
#include "sharding/region_send.h"
#include "sharding/region_store.h"

/* ---- shard slots ---- */

static const struct region_slot_timing *timing(const struct region *r, struct region_slot_timing *t)
{
	*t = (struct region_slot_timing){r->cfg.retry_interval_ms, r->cfg.handoff_timeout_ms};
	return t;
}

/* The shard leaves this region: stop its entities; what arrives from now
 * on waits for the new home. The coordinator hears that it may name one. */
static void stop_shard(struct region *r, uint32_t shard)
{
	struct shard_slot *slot = &r->slots[shard];
	/* A type run on a host: shard_stopped waits until the host has ended
	 * the entities' processes (host_entities.h: ops.ended sends it then). */
	bool waits = r->hosting != NULL && host_entities_end_processes(r->hosting, shard);
	if (slot->shard != NULL) {
		if (r->hosting != NULL)
			host_entities_set_stop_reason(r->hosting, "moved");
		shard_free(slot->shard);
		if (r->hosting != NULL)
			host_entities_set_stop_reason(r->hosting, NULL);
		slot->shard = NULL;
		r->nlocal--;
	}
	slot->out.destination_known = false;
	if (slot->handoff_started_ns != 0) {
		r->handoffs.count++;
		histogram_observe(&r->handoffs.duration, evloop_now_ns(r->cfg.loop) - slot->handoff_started_ns);
		slot->handoff_started_ns = 0;
	}
	region_store_drop_loads(slot);
	if (!waits)
		region_send_to_coordinator(r, SMSG_SHARD_STOPPED, shard);
	log_at_shard(r->cfg.log, LOG_DEBUG, shard, "region %s: shard %u handed off", r->cfg.name, shard);
}

/* Steps a slot (region_slot.h) and does what the step says. */
static void step(struct region *r, uint32_t shard, struct region_slot_event ev)
{
	struct shard_slot *slot = &r->slots[shard];
	struct region_slot_timing t;
	unsigned todo;
	ev.carry_state = region_state_to_carry(r, slot);
	if (region_slot_step(&slot->st, timing(r, &t), &ev, &todo) != 0)
		return;
	/* States restored ahead of a move are kept until the shard goes
	 * elsewhere (on_shard_home takes them first when it comes here). */
	if (region_state_incoming_outlived(slot))
		region_state_drop_incoming(slot);
	if (todo & SLOT_DO_ASK)
		region_send_to_coordinator(r, SMSG_GET_SHARD_HOME, shard);
	if (todo & SLOT_DO_FLUSH) {
		int rc = region_flush_slot(r, slot);
		if (rc != 0)
			region_home_unwritable(r, shard, rc);
	}
	if (todo & SLOT_DO_HAND_OFF)
		region_hand_off_when_flushed(r, shard);
	/* Messages still at a hosted type's processes (a hand-off past its
	 * deadline) follow the shard instead of completing here. */
	if ((todo & (SLOT_DO_SEND_STATE | SLOT_DO_STOP)) && r->hosting != NULL)
		host_entities_take_back(r->hosting, shard);
	if (todo & SLOT_DO_SEND_STATE)
		region_state_send_start(r, shard); /* steps again when done */
	if (todo & SLOT_DO_STOP)
		stop_shard(r, shard);
	if (todo & SLOT_DO_REPORT_STOPPED)
		region_send_to_coordinator(r, SMSG_SHARD_STOPPED, shard);
	region_step_owed(r); /* a stream that could not start */
}

static struct region_slot_event event(const struct region *r, enum region_slot_event_kind kind)
{
	return (struct region_slot_event){.kind = kind, .now = evloop_now_ms(r->cfg.loop)};
}

void region_step(struct region *r, uint32_t shard, enum region_slot_event_kind kind)
{
	step(r, shard, event(r, kind));
}

void region_step_owed(struct region *r)
{
	if (r->owed.stepping)
		return;
	r->owed.stepping = true;
	while (r->owed.slots) {
		r->owed.slots = false;
		for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
			uint8_t owed = r->slots[s].owed;
			r->slots[s].owed = 0;
			if (owed & SLOT_OWES_STATE_CHUNK)
				step(r, s, event(r, SLOT_STATE_CHUNK));
			if (owed & SLOT_OWES_STATE_SENT)
				step(r, s, event(r, SLOT_STATE_SENT));
		}
	}
	r->owed.stepping = false;
}

/* Unregistered, the request goes out when the coordinator acknowledges
 * the registration (SLOT_REGISTERED). */
void region_need_home(struct region *r, uint32_t shard)
{
	step(r, shard, event(r, SLOT_NEED_HOME));
}

void region_home_unwritable(struct region *r, uint32_t shard, int rc)
{
	/* A connection being set up: region_on_reach goes on when it ends. */
	if (rc == -ENOTCONN)
		return;
	struct shard_slot *slot = &r->slots[shard];
	if (slot->st.state != SLOT_REMOTE) {
		/* Stepped meanwhile: the failed write closed the connection
		 * (nodedown), maybe before the message joined the buffer. */
		region_need_home(r, shard);
		return;
	}
	log_at_shard(r->cfg.log, LOG_DEBUG, shard, "region %s: shard %u's home on %s cannot be reached (%s): "
		     "its messages wait, and the coordinator is asked again", r->cfg.name, shard,
		     slot->home_region.node, strerror(-rc));
	step(r, shard, event(r, SLOT_HOME_UNREACHABLE));
}

/* What waits for a connection to a remote home goes now, as far as it can
 * be written. */
static void flush_remote(struct region *r, uint32_t shard)
{
	int rc = region_flush_slot(r, &r->slots[shard]);
	if (rc != 0)
		region_home_unwritable(r, shard, rc);
}

void region_on_reach(void *arg, const char *peer, bool up)
{
	struct region *r = arg;
	if (r->stopped)
		return;
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		struct shard_slot *slot = &r->slots[s];
		if (slot->st.state != SLOT_REMOTE || slot->head == NULL || strcmp(slot->home_region.node, peer) != 0)
			continue;
		if (up)
			flush_remote(r, s);
		else
			step(r, s, event(r, SLOT_HOME_UNREACHABLE));
	}
	region_step_owed(r);
}

/* ---- registration ---- */

int region_coordinator_send(struct region *r, const char *buf, size_t len)
{
	return outlet_reg_send(&r->cfg.out, &r->pid, r->coord.name, r->coord.node, buf, len);
}

/* replicas_held: with a replicated store, the copies it keeps
 * (replicated_store.h), so a coordinator that just took over rebuilds the
 * replica sets. */
static void send_replicas_held(struct region *r)
{
	ei_x_buff x;
	if (r->replication == NULL || ei_x_new(&x) < 0)
		return;
	/* Set homes named only to a coordinator that reads them
	 * (member_protocol.h). */
	if (replicated_store_encode_report(r->replication, &x, r->coord.protocol >= 2) == 0)
		(void)region_coordinator_send(r, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

/* register, then hosting: what this region already hosts, so a coordinator
 * that just took over learns the allocation instead of inventing one. */
static void send_registration(struct region *r)
{
	if (r->coord.node[0] == '\0' || r->stopped)
		return;
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	enum shard_msg_kind kind = r->cfg.proxy_only ? SMSG_REGISTER_PROXY : SMSG_REGISTER;
	if (shard_msg_encode_pid(&x, kind, &r->pid) == 0)
		(void)region_coordinator_send(r, x.buff, (size_t)x.index);
	if (r->cfg.proxy_only) {
		ei_x_free(&x);
		return; /* hosts nothing: no report */
	}
	size_t cap = r->cfg.number_of_shards ? r->cfg.number_of_shards : 1;
	uint32_t *hosted = malloc(cap * sizeof *hosted);
	uint64_t *epochs = malloc(cap * sizeof *epochs);
	size_t n = 0;
	for (uint32_t s = 0; hosted != NULL && epochs != NULL && s < r->cfg.number_of_shards; s++) {
		if (region_slot_hosted(&r->slots[s].st)) {
			epochs[n] = r->slots[s].claim_epoch;
			hosted[n++] = s;
		}
	}
	x.index = 0;
	/* Epochs only to a coordinator that reads them (member_protocol.h). */
	int rc = hosted == NULL || epochs == NULL
			 ? -ENOMEM
			 : shard_msg_encode_hosting(&x, &r->pid, hosted, r->coord.protocol >= 2 ? epochs : NULL, n);
	if (rc == 0)
		(void)region_coordinator_send(r, x.buff, (size_t)x.index);
	free(hosted);
	free(epochs);
	ei_x_free(&x);
	send_replicas_held(r); /* with replicas, the copies it keeps end the report */
}

void region_set_coordinator_node(struct region *r, const char *node, uint32_t protocol)
{
	const char *now = node ? node : "";
	r->coord.protocol = protocol;
	if (strcmp(now, r->coord.node) == 0)
		return;
	/* The first is the start's: a move of the coordinator is news. */
	log_at(r->cfg.log, r->coord.node[0] == '\0' && node != NULL ? LOG_DEBUG : LOG_INFO,
	       "region %s: coordinator now on %s", r->cfg.name, node ? node : "(none)");
	snprintf(r->coord.node, sizeof r->coord.node, "%s", now);
	r->coord.registered = false;
	send_registration(r);
	if (!r->stopped)
		evloop_timer_start(r->cfg.loop, &r->timers.retry, REGION_REGISTER_RETRY_MS);
}

static void on_registered(struct region *r, const erlang_pid *coordinator)
{
	/* A late answer from the coordinator that was active before the last
	 * membership change is not a registration with the current one. */
	if (strcmp(coordinator->node, r->coord.node) != 0)
		return;
	bool first = !r->coord.registered;
	r->coord.registered = true;
	r->coord.pid = *coordinator;
	if (first)
		log_debug(r->cfg.log, "region %s: registered with coordinator on %s", r->cfg.name,
			  coordinator->node);
	if (r->hosting != NULL)
		host_entities_check_host(r->hosting, first);
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		struct region_slot_event ev = event(r, SLOT_REGISTERED);
		/* Only an unknown home is asked for on this account. */
		ev.remembered = r->slots[s].st.state == SLOT_UNKNOWN && region_remember_wants_home(r, s);
		step(r, s, ev);
	}
}

/* The coordinator we are registered with has forgotten us (coordinator.h):
 * register again at once, and keep trying until it acknowledges. Only its
 * own word counts: anyone else's is a late message from an earlier one. */
static void on_register_again(struct region *r, const erlang_pid *coordinator)
{
	if (!r->coord.registered || !term_pid_equal(coordinator, &r->coord.pid))
		return;
	r->coord.registered = false;
	log_info(r->cfg.log, "region %s: the coordinator on %s does not know this region: registering again",
		 r->cfg.name, coordinator->node);
	send_registration(r);
	evloop_timer_start(r->cfg.loop, &r->timers.retry, REGION_REGISTER_RETRY_MS);
}

/* ---- nodes gone ---- */

/* A node is gone: shards homed there are unknown again, and if the
 * coordinator was there, we are no longer registered. */
void region_on_nodedown(void *arg, const char *peer)
{
	struct region *r = arg;
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		struct shard_slot *slot = &r->slots[s];
		if (slot->st.state == SLOT_REMOTE && strcmp(slot->home_region.node, peer) == 0)
			step(r, s, event(r, SLOT_HOME_LOST));
	}
	if (r->coord.registered && strcmp(r->coord.pid.node, peer) == 0)
		r->coord.registered = false;
	region_state_on_nodedown(r, peer);
	if (r->hosting != NULL && host_entities_on_nodedown(r->hosting, peer)) {
		/* Their processes are gone with the host: a hand-off that waited
		 * for them goes on, its buffer following the shard. */
		for (uint32_t s = 0; s < r->cfg.number_of_shards; s++)
			if (region_slot_handoff_ready(&r->slots[s].st))
				region_hand_off_when_flushed(r, s);
	}
	region_step_owed(r);
}

int region_set_downed(struct region *r, const char *const *nodes, size_t n)
{
	int rc = node_set_assign(&r->downed, nodes, n);
	if (rc)
		return rc;
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		struct shard_slot *slot = &r->slots[s];
		if (slot->st.state == SLOT_REMOTE && region_is_downed(r, slot->home_region.node))
			step(r, s, event(r, SLOT_HOME_LOST));
		/* A downed new home cannot take the shard's states. */
		if (slot->st.state == SLOT_SENDING_STATE && region_is_downed(r, slot->home_region.node))
			step(r, s, event(r, SLOT_STATE_SENT));
	}
	return 0;
}

/* ---- homes and handoff ---- */

/* `sm` is a shard_home: the shard's home, and for the home itself the
 * claim's epoch, if the coordinator gave one. */
static void on_shard_home(struct region *r, const struct shard_msg *sm)
{
	uint32_t shard = sm->shard;
	const erlang_pid *home = &sm->pid;
	if (shard >= r->cfg.number_of_shards)
		return;
	struct shard_slot *slot = &r->slots[shard];
	bool here = term_pid_equal(home, &r->pid);
	if (!here && region_is_downed(r, home->node))
		return; /* its lease may not have run out: ask again later */
	if (here && r->cfg.proxy_only)
		return; /* never happens with a correct coordinator: a proxy hosts nothing */
	if (here && slot->shard == NULL) {
		/* The entities restored from the states the old home sent, or,
		 * with none, a fresh shard. */
		slot->shard = region_state_take_incoming(slot);
		if (slot->shard == NULL)
			slot->shard = region_new_shard(r, shard);
		if (slot->shard == NULL)
			return; /* retried: the home request stays outstanding */
		r->nlocal++;
		region_instances_watch(r, slot->shard);
		region_store_claim(r, shard); /* before anything of it is loaded */
		region_start_remembered(r, slot->shard);
	}
	if (here)
		slot->claim_epoch = sm->has_epoch ? sm->epoch : 0;
	if (!here)
		slot->home_region = *home;
	if (!here && region_slot_hosted(&slot->st))
		log_at_shard(r->cfg.log, LOG_WARN, shard, "region %s: shard %u is %s's by a newer claim: its entities "
			     "here stop, and its messages go there", r->cfg.name, shard, home->node);
	slot->waits = false;
	step(r, shard, event(r, here ? SLOT_HOME_HERE : SLOT_HOME_THERE));
}

/* No member of the shard's last replica set with a copy is in the
 * cluster: it is not started empty, and what waits for it is answered
 * {error, store_unavailable} once it has waited store_timeout_ms
 * (region_coordinator_tick). The region keeps asking. */
static void on_shard_waits(struct region *r, uint32_t shard)
{
	struct shard_slot *slot = &r->slots[shard];
	if (region_slot_hosted(&slot->st) || slot->waits)
		return;
	slot->waits = true;
	log_at_shard(r->cfg.log, LOG_WARN, shard, "region %s: shard %u waits for a member of its last replica set to "
		     "come back: its messages are answered {error, store_unavailable} after store_timeout_ms",
		     r->cfg.name, shard);
}

static void send_shard_msg(struct region *r, const erlang_pid *to, enum shard_msg_kind kind, uint32_t shard)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (shard_msg_encode_shard(&x, kind, shard, &r->pid) == 0)
		outlet_send(&r->cfg.out, to, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

/* Another region is handing this shard off: stop sending it anything, and
 * say so to that region, on the same path as what was sent before, so the
 * acknowledgement arrives after every message forwarded to it. */
static void on_begin_handoff(struct region *r, uint32_t shard, const erlang_pid *from)
{
	step(r, shard, event(r, SLOT_BEGIN_HANDOFF));
	send_shard_msg(r, from, SMSG_HANDOFF_ACK, shard);
}

/* Every ack is in. Messages held here for want of a quorum lease were sent
 * before the ones the other regions now hold for the new home; handed on
 * now, they would reach the new home after those later messages. So the
 * handoff waits for the lease (region_resume delivers them here first) or
 * for its deadline (the retry timer, region_coordinator_tick). */
void region_hand_off_when_flushed(struct region *r, uint32_t shard)
{
	struct shard_slot *slot = &r->slots[shard];
	if (region_slot_hosted(&slot->st) && slot->head != NULL)
		region_flush_slot(r, slot); /* stops early if the lease is gone */
	/* Entities still loading their stored state (region_store.c) would
	 * miss the states sent to the new home: the load's end comes back. */
	/* Nor may it go while a hosted type's processes have messages to
	 * complete: their completion comes back to the hub. */
	/* With the host down nothing buffered can be delivered here: it
	 * follows the shard. */
	bool buffer_waits = slot->st.buffered > 0 && !(r->hosting != NULL && host_entities_host_down(r->hosting));
	if (region_slot_hosted(&slot->st) && (buffer_waits || slot->st.loads > 0 || slot->st.in_flight > 0))
		return;
	step(r, shard, event(r, SLOT_HANDED_OFF));
}

static void on_handoff(struct region *r, uint32_t shard, uint32_t acks_needed, const erlang_pid *to)
{
	struct shard_slot *slot = &r->slots[shard];
	/* Only a hosted slot goes anywhere; a remote one's home_region is its
	 * home and must stay so. */
	if (region_slot_hosted(&slot->st)) {
		slot->home_region = *to;
		slot->out.destination_known = true;
		if (slot->handoff_started_ns == 0)
			slot->handoff_started_ns = evloop_now_ns(r->cfg.loop);
	}
	struct region_slot_event ev = event(r, SLOT_HANDOFF);
	ev.acks_needed = acks_needed;
	step(r, shard, ev);
}

/* True if `from` is the coordinator this region is registered with: orders
 * from one that was active before (a hand-over in progress) are ignored,
 * or two regions could come to host one shard. */
static bool from_coordinator(const struct region *r, const erlang_pid *from)
{
	return from != NULL && r->coord.registered && term_pid_equal(from, &r->coord.pid);
}

void region_on_coordinator_msg(struct region *r, const struct shard_msg *sm, const erlang_pid *from)
{
	bool coordinator_order = sm->kind == SMSG_SHARD_HOME || sm->kind == SMSG_BEGIN_HANDOFF ||
				 sm->kind == SMSG_HANDOFF || sm->kind == SMSG_SHARD_WAITS;
	if (coordinator_order && !from_coordinator(r, from)) {
		log_debug(r->cfg.log, "region %s: order from a coordinator we are not registered with ignored",
			  r->cfg.name);
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
		on_shard_home(r, sm);
		break;
	case SMSG_SHARD_WAITS:
		on_shard_waits(r, sm->shard);
		break;
	case SMSG_BEGIN_HANDOFF:
		on_begin_handoff(r, sm->shard, &sm->pid);
		break;
	case SMSG_HANDOFF:
		on_handoff(r, sm->shard, sm->count, &sm->pid);
		break;
	case SMSG_HANDOFF_ACK:
		/* Acks may come before the coordinator's handoff message. */
		step(r, sm->shard, event(r, SLOT_HANDOFF_ACK));
		break;
	case SMSG_SHARD_STATE:
	case SMSG_SHARD_STATE_ACK:
		region_state_on_msg(r, sm);
		region_step_owed(r);
		break;
	default:
		break;
	}
}

void region_coordinator_tick(struct region *r)
{
	if (!r->coord.registered) {
		send_registration(r);
		return;
	}
	/* Unanswered requests, handoffs past their deadline, moves that never
	 * ended (region_slot.h). */
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++)
		step(r, s, event(r, SLOT_TICK));
	/* Messages that wait for a connection to their remote home: an
	 * accepted connection that never came up tells no reach listener, so
	 * they try again here (a new attempt, or the home unreachable). */
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++)
		if (r->slots[s].st.state == SLOT_REMOTE && r->slots[s].head != NULL)
			flush_remote(r, s);
	/* Shards that wait for a member of their last replica set: what
	 * waited for them long enough is answered. */
	uint64_t now_ns = evloop_now_ns(r->cfg.loop);
	uint64_t limit_ns = (uint64_t)r->cfg.store_timeout_ms * 1000000u;
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		struct shard_slot *slot = &r->slots[s];
		if (slot->waits && !region_slot_hosted(&slot->st) && region_buffer_waited(slot, now_ns, limit_ns))
			region_refuse_buffered(r, slot, "store_unavailable");
	}
}
