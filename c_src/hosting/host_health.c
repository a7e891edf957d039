/*
 * host_health.c — the host's state, for a region's hosted entities
 * (host_entities.h): the processes of a shard that left ended through the
 * host's dispatcher before the coordinator may name a new home; the
 * host's nodedown, which ends every process of the type's entities; and
 * the coordinator told to move the region's shards away while the host
 * is down and to give it shards again once it is back. Above
 * host_entities.c in the order of calls (host_entities_internal.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hosting/host_entities_internal.h"
#include "hosting/host_msg.h"

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
	struct hosted_entity *he = host_entities_record(ent);
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
	host_entities_forget_process_only(he);
}

bool host_entities_end_processes(struct host_entities *h, uint32_t shard)
{
	struct shard *s = h->cfg.ops.shard_at(h->cfg.ops.arg, shard);
	erlang_pid dispatcher;
	if (s == NULL || !h->cfg.host->dispatcher(h->cfg.host->arg, &dispatcher))
		return false; /* no host: none of its processes runs */
	struct ending w = {.host = host_entities_node(h)};
	entity_table_each(&s->entities, collect_process, &w);
	bool waits = false;
	ei_x_buff x;
	if (!w.failed && w.n > 0 && ei_x_new(&x) == 0) {
		/* After whatever the turn's batch holds for these processes. */
		if (h->cfg.host->batch_send != NULL)
			h->cfg.host->batch_send(h->cfg.host->arg);
		if (host_msg_encode_end(&x, &h->cfg.region, shard, w.pids, w.n) == 0 &&
		    h->cfg.ops.send(h->cfg.ops.arg, &dispatcher, x.buff, (size_t)x.index) == 0) {
			waits = true;
			h->ending_since[shard] = evloop_now_ms(h->cfg.loop);
			if (h->ending_since[shard] == 0)
				h->ending_since[shard] = 1;
			h->slots_ending = true;
		}
		ei_x_free(&x);
	}
	free(w.pids);
	return waits;
}

void host_entities_tick(struct host_entities *h)
{
	if (!h->slots_ending)
		return;
	uint64_t now = evloop_now_ms(h->cfg.loop);
	bool still = false;
	for (uint32_t s = 0; s < h->cfg.number_of_shards; s++) {
		uint64_t since = h->ending_since[s];
		if (since != 0 && now - since >= h->cfg.handoff_timeout_ms) {
			log_warn(h->cfg.log, "region %s: the host did not confirm that shard %u's entities ended",
				 h->cfg.name, s);
			host_entities_end_waited(h, s);
		}
		still = still || h->ending_since[s] != 0;
	}
	h->slots_ending = still;
}

/* ---- the host goes down and comes back ---- */

static void tell_coordinator(struct host_entities *h, bool ready, bool always);

struct host_lost {
	struct host_entities *h;
	uint32_t shard;
	struct take_back *t;
	uint32_t busy; /* entities that had a message at their process */
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
	(void)host_entities_crashed(hl->h, hl->shard, host_entities_record(ent), NOCONNECTION, sizeof NOCONNECTION,
				    &had);
	hl->busy += had;
	host_entities_take_entity_back(ent, hl->t); /* what was queued behind */
}

static void lose_host(struct host_entities *h)
{
	uint32_t lost = 0;
	for (uint32_t s = 0; s < h->cfg.number_of_shards; s++) {
		struct shard *sh = h->cfg.ops.shard_at(h->cfg.ops.arg, s);
		if (sh == NULL)
			continue; /* every process of its entities is gone, busy or not */
		struct take_back t = {0};
		struct host_lost hl = {.h = h, .shard = s, .t = &t};
		entity_table_each(&sh->entities, lose_process, &hl);
		lost += hl.busy;
		h->cfg.ops.in_flight(h->cfg.ops.arg, s, HOST_FLIGHT_ALL_BACK);
		if (t.n > 0)
			h->cfg.ops.give_back(h->cfg.ops.arg, s, t.head, t.n);
	}
	if (lost > 0)
		log_warn(h->cfg.log, "region %s: the host %s went down with %u entities' messages at their processes",
			 h->cfg.name, h->cfg.host->node, lost);
}

bool host_entities_on_nodedown(struct host_entities *h, const char *peer)
{
	if (h->cfg.host->node == NULL || strcmp(peer, h->cfg.host->node) != 0)
		return false;
	lose_host(h);
	if (h->slots_ending) {
		for (uint32_t s = 0; s < h->cfg.number_of_shards; s++)
			host_entities_end_waited(h, s);
		h->slots_ending = false;
	}
	tell_coordinator(h, false, false);
	return true;
}

/* region_leaving or region_back, if `ready` (the host's) is news to the
 * coordinator, or, `always`, in any case. */
static void tell_coordinator(struct host_entities *h, bool ready, bool always)
{
	if (!h->cfg.ops.may_tell(h->cfg.ops.arg))
		return;
	if (!always && ready == !h->away)
		return;
	if (!always)
		log_at(h->cfg.log, ready && !h->answered_once ? LOG_DEBUG : LOG_INFO,
		       ready ? "region %s: the host answered: taking shards again"
			     : "region %s: the host has not answered or is down: its shards go to members whose host is up",
		       h->cfg.name);
	h->answered_once |= ready;
	h->away = !ready;
	h->cfg.ops.tell(h->cfg.ops.arg, ready);
}

void host_entities_check_host(struct host_entities *h, bool registered_anew)
{
	/* Registered anew: a coordinator that forgot this region answers a
	 * register as one it knew, and may still count it as leaving from
	 * before; region_back to one that does not is nothing. */
	tell_coordinator(h, h->cfg.host->ready(h->cfg.host->arg), registered_anew);
}

bool host_entities_host_down(const struct host_entities *h) { return !h->cfg.host->ready(h->cfg.host->arg); }
