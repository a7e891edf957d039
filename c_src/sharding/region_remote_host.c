/*
 * region_remote_host.c — a type written in Erlang or Elixir and the state
 * of its host (region_remote_host.h): the processes of a shard that left
 * ended through the host's dispatcher before the coordinator may name a
 * new home; the host's nodedown, which ends every process of the type's
 * entities; and the coordinator told to move the region's shards away
 * while the host is down and to give it shards again once it is back.
 * Above region_remote.c in the region's order of calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hosting/host_msg.h"
#include "hosting/hosted_entity.h"
#include "sharding/region_internal.h"
#include "sharding/region_buffer.h"
#include "sharding/region_remote.h"
#include "sharding/region_remote_host.h"
#include "sharding/region_send.h"

/* ---- a shard's processes end ---- */

struct ending {
	const char *host;
	erlang_pid *pids;
	size_t n, cap;
	bool failed;
};

static void collect_process(struct entity *ent, void *arg)
{
	struct ending *w = arg;
	struct hosted_entity *he = region_remote_hosted(ent);
	if (!he->has_pid)
		return;
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		erlang_pid *p = realloc(w->pids, cap * sizeof *p);
		if (p == NULL) {
			w->failed = true;
			return;
		}
		w->pids = p;
		w->cap = cap;
	}
	hosted_pid_expand(&he->pid, w->host, &w->pids[w->n++]);
	/* The dispatcher ends it: shard_free has nothing to tell it. */
	region_remote_forget_process_only(he);
}

bool region_remote_end_processes(struct region *r, uint32_t shard)
{
	struct shard_slot *slot = &r->slots[shard];
	erlang_pid dispatcher;
	if (!region_remote_active(r) || slot->shard == NULL || !r->cfg.host->dispatcher(r->cfg.host->arg, &dispatcher))
		return false; /* no host: none of its processes runs */
	struct ending w = {.host = region_remote_host_node(r)};
	entity_table_each(&slot->shard->entities, collect_process, &w);
	bool waits = false;
	ei_x_buff x;
	if (!w.failed && w.n > 0 && ei_x_new(&x) == 0) {
		if (host_msg_encode_end(&x, &r->pid, shard, w.pids, w.n) == 0 &&
		    dist_node_send(r->cfg.node, &dispatcher, x.buff, (size_t)x.index) == 0) {
			waits = true;
			slot->ending_since = evloop_now_ms(r->cfg.loop);
			if (slot->ending_since == 0)
				slot->ending_since = 1;
			r->remote.slots_ending = true;
			snprintf(r->remote.host_node, sizeof r->remote.host_node, "%s", dispatcher.node);
		}
		ei_x_free(&x);
	}
	free(w.pids);
	return waits;
}

void region_remote_tick(struct region *r)
{
	if (!r->remote.slots_ending)
		return;
	uint64_t now = evloop_now_ms(r->cfg.loop);
	bool still = false;
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		uint64_t since = r->slots[s].ending_since;
		if (since != 0 && now - since >= r->cfg.handoff_timeout_ms) {
			log_warn(r->cfg.log, "region %s: the host did not confirm that shard %u's entities ended", r->cfg.name,
				 s);
			region_remote_end_waited(r, s);
		}
		still = still || r->slots[s].ending_since != 0;
	}
	r->remote.slots_ending = still;
}

/* ---- the host goes down and comes back ---- */

static void tell_coordinator(struct region *r, bool ready, bool always);

struct host_lost {
	struct region *r;
	struct shard_slot *slot;
	struct take_back *t;
};

/* The host went down with the entity's process: what it was handling is
 * answered as a crash's, the rest waits in the buffer. */
static void lose_process(struct entity *ent, void *arg)
{
	/* noconnection (SMALL_ATOM_UTF8_EXT): what a monitor of the process
	 * says when its node is gone. */
	static const char NOCONNECTION[] = {'\x77', 12, 'n', 'o', 'c', 'o', 'n', 'n', 'e', 'c', 't', 'i', 'o', 'n'};
	struct host_lost *hl = arg;
	bool had = false;
	(void)region_remote_crashed(hl->r, hl->slot->shard->id, region_remote_hosted(ent), NOCONNECTION,
				    sizeof NOCONNECTION, &had);
	region_remote_take_entity_back(ent, hl->t); /* what was queued behind */
}

static void lose_host(struct region *r)
{
	uint32_t lost = 0;
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		struct shard_slot *slot = &r->slots[s];
		if (slot->shard == NULL)
			continue; /* every process of its entities is gone, busy or not */
		lost += slot->st.in_flight;
		struct take_back t = {0};
		struct host_lost hl = {.r = r, .slot = slot, .t = &t};
		entity_table_each(&slot->shard->entities, lose_process, &hl);
		slot->st.in_flight = 0;
		region_buffer_push_front(r, slot, t.head, t.tail, t.n);
	}
	if (lost > 0)
		log_warn(r->cfg.log, "region %s: the host %s went down with %u entities' messages at their processes",
			 r->cfg.name, r->cfg.host->node, lost);
}

bool region_remote_on_nodedown(struct region *r, const char *peer)
{
	if (!region_remote_active(r) || r->cfg.host->node == NULL || strcmp(peer, r->cfg.host->node) != 0)
		return false;
	lose_host(r);
	if (r->remote.slots_ending) {
		for (uint32_t s = 0; s < r->cfg.number_of_shards; s++)
			region_remote_end_waited(r, s);
		r->remote.slots_ending = false;
	}
	tell_coordinator(r, false, false);
	return true;
}

/* region_leaving or region_back, if `ready` (the host's) is news to the
 * coordinator, or, `always`, in any case. */
static void tell_coordinator(struct region *r, bool ready, bool always)
{
	if (r->cfg.proxy_only || r->stopped || r->leave.under_way || !r->coord.registered)
		return;
	if (!always && ready == !r->remote.away)
		return;
	if (!always)
		log_at(r->cfg.log, ready && !r->remote.answered_once ? LOG_DEBUG : LOG_INFO,
		       ready ? "region %s: the host answered: taking shards again"
			     : "region %s: the host has not answered or is down: its shards go to members whose host is up",
		       r->cfg.name);
	r->remote.answered_once |= ready;
	r->remote.away = !ready;
	region_send_to_coordinator(r, ready ? SMSG_REGION_BACK : SMSG_REGION_LEAVING, 0);
}

void region_remote_check_host(struct region *r, bool registered_anew)
{
	/* Registered anew: a coordinator that forgot this region answers a
	 * register as one it knew, and may still count it as leaving from
	 * before; region_back to one that does not is nothing. */
	if (region_remote_active(r))
		tell_coordinator(r, r->cfg.host->ready(r->cfg.host->arg), registered_anew);
}

