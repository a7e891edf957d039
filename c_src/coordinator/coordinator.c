/* coordinator.c — see coordinator.h. */
#include "coordinator/coordinator.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coordinator/coordinator_internal.h"
#include "coordinator/rebalance.h"
#include "replication/replica_msg.h"
#include "etf/shard_msg.h"
#include "etf/term.h"

static void drain(struct coordinator *c);

static void on_region_stopped(struct coordinator *c, const erlang_pid *region);

static void forget_all(struct coordinator *c)
{
	c->nregions = 0;
	c->nproxies = 0;
	c->nleaving = 0;
	c->nmoving = 0;
	for (uint32_t s = 0; s < c->cfg.number_of_shards; s++)
		c->home[s] = c->moving_to[s] = -1;
	coordinator_replicas_reset(&c->replicas);
	coord_claims_forget(c);
}

void coordinator_set_active(struct coordinator *c, bool active)
{
	if (c->active == active)
		return;
	c->active = active;
	forget_all(c);
	log_info(c->cfg.log, "coordinator %s: %s", c->cfg.type_name,
		 active ? "active here (oldest member hosting the type)" : "no longer active here");
}

void coordinator_set_draining(struct coordinator *c, const char *const *nodes, size_t n)
{
	if (coordinator_members_set(&c->members, CM_DRAINING, nodes, n) == 0)
		drain(c);
}

void coordinator_set_members(struct coordinator *c, const char *const *owners, size_t nowners,
			     const char *const *joining, size_t njoining)
{
	if (coordinator_members_set(&c->members, CM_OWNERS, owners, nowners) != 0 ||
	    coordinator_members_set(&c->members, CM_JOINING, joining, njoining) != 0)
		return; /* the next change tries again */
	/* A region whose node is no longer a serving member (it left or was
	 * downed) gives its shards back. Not on a mere lost connection: the
	 * node may still be running them on the other side of a partition. */
	for (size_t k = c->nregions; k-- > 0;) {
		const struct region_ref *r = &c->regions[k];
		if (!coordinator_members_keeps(&c->members, r->pid.node, r->nshards)) {
			erlang_pid gone = r->pid; /* the array shifts under it */
			on_region_stopped(c, &gone);
		}
	}
}

void coordinator_set_downed(struct coordinator *c, const char *const *nodes, size_t n)
{
	coordinator_members_set(&c->members, CM_DOWNED, nodes, n);
	for (size_t k = c->nproxies; k-- > 0;) {
		bool downed = false;
		for (size_t e = 0; e < n && !downed; e++)
			downed = strcmp(c->proxies[k].node, nodes[e]) == 0;
		if (downed) {
			log_info(c->cfg.log, "coordinator %s: proxy region on %s forgotten: its node was downed",
				 c->cfg.type_name, c->proxies[k].node);
			c->proxies[k] = c->proxies[--c->nproxies];
		}
	}
}

int coordinator_least_shards(const uint32_t *counts, size_t n, void *arg)
{
	(void)arg;
	int best = -1;
	for (size_t k = 0; k < n; k++)
		if (best < 0 || counts[k] < counts[best])
			best = (int)k;
	return best;
}

/* Once every region has reported, the replica sets are rebuilt from what
 * they keep; shards whose home is gone continue on a replica. False while
 * the sets are not known (nothing may be allocated then). */
static bool replicas_ready(struct coordinator *c)
{
	if (!coordinator_replicas_on(&c->replicas) || c->replicas.ready)
		return true;
	if (!coord_all_reported(c))
		return false;
	uint32_t *promoted = malloc(c->cfg.number_of_shards * sizeof *promoted);
	if (promoted == NULL)
		return false;
	struct coordinator_view v;
	coord_replica_view(c, &v);
	size_t n = 0;
	coordinator_replicas_rebuild(&c->replicas, &v, c->home, promoted, &n);
	for (size_t k = 0; k < n; k++) {
		c->regions[c->home[promoted[k]]].nshards++;
		coord_broadcast_home(c, promoted[k]);
	}
	free(promoted);
	return true;
}

/* A region's graceful_shutdown on a node that stays, or a region whose
 * type's host is down: hand its shards off. */
static void on_region_leaving(struct coordinator *c, const erlang_pid *region)
{
	if (!c->active || coord_find_region(c, region) < 0 || coord_is_leaving(c, region))
		return;
	if (c->nleaving == c->leaving_cap) {
		size_t cap = c->leaving_cap ? c->leaving_cap * 2 : 4;
		erlang_pid *p = realloc(c->leaving, cap * sizeof *p);
		if (p == NULL)
			return; /* its handoff deadline lets it stop anyway */
		c->leaving = p;
		c->leaving_cap = cap;
	}
	c->leaving[c->nleaving++] = *region;
	drain(c);
}

/* The host of a region that was leaving for it is back: the region may
 * be given shards again; the rebalance ticks even them out. */
static void on_region_back(struct coordinator *c, const erlang_pid *region)
{
	for (size_t d = 0; d < c->nleaving; d++) {
		if (term_pid_equal(&c->leaving[d], region)) {
			c->leaving[d] = c->leaving[--c->nleaving];
			/* The region said why (its host answered): a debug line here. */
			log_debug(c->cfg.log, "coordinator %s: region %s takes shards again", c->cfg.type_name,
				  region->node);
			return;
		}
	}
}

static void on_register_proxy(struct coordinator *c, const erlang_pid *proxy)
{
	if (!c->active || coordinator_members_unknown_region(&c->members, proxy->node) == CM_IGNORE)
		return;
	for (size_t k = 0; k < c->nproxies; k++) {
		/* One proxy region per node: another pid of that node is of
		 * its earlier incarnation, gone (a proxy node started again
		 * at once is never downed), and a move must not wait for its
		 * ack. */
		if (strcmp(c->proxies[k].node, proxy->node) == 0 && !term_pid_equal(&c->proxies[k], proxy)) {
			c->proxies[k] = *proxy;
			log_info(c->cfg.log, "coordinator %s: proxy region %s registered again (its node was started again)",
				 c->cfg.type_name, proxy->node);
		}
	}
	if (coord_find_proxy(c, proxy) < 0) {
		if (c->nproxies == c->proxies_cap) {
			size_t cap = c->proxies_cap ? c->proxies_cap * 2 : 4;
			erlang_pid *p = realloc(c->proxies, cap * sizeof *p);
			if (p == NULL)
				return; /* it retries */
			c->proxies = p;
			c->proxies_cap = cap;
		}
		c->proxies[c->nproxies++] = *proxy;
		log_info(c->cfg.log, "coordinator %s: proxy region %s registered", c->cfg.type_name, proxy->node);
	}
	coord_send_pid_msg(c, proxy, SMSG_REGISTERED, &c->proc->pid);
}

/* Gives `shard` (which has no home) to the region the allocation strategy
 * picks among the available ones, and counts it there. Returns the
 * region's index, or -1 (no region available, no memory, or a pick the
 * strategy should not have made): the shard stays without a home. */
static int32_t allocate_home(struct coordinator *c, uint32_t shard)
{
	if (c->nregions == 0)
		return -1;
	uint32_t *counts = malloc(c->nregions * sizeof *counts);
	if (counts == NULL)
		return -1;
	for (size_t k = 0; k < c->nregions; k++)
		counts[k] = coord_unavailable(c, k) ? UINT32_MAX : c->regions[k].nshards;
	int pick = c->cfg.allocate(counts, c->nregions, c->cfg.allocate_arg);
	free(counts);
	if (pick < 0 || (size_t)pick >= c->nregions || coord_unavailable(c, (size_t)pick))
		return -1;
	c->home[shard] = pick;
	c->regions[pick].nshards++;
	coord_replicas_home_set(c, shard);
	return pick;
}

/* Allocates a shard whose home is gone, and says so to every region. */
static void reallocate(struct coordinator *c, uint32_t shard)
{
	if (allocate_home(c, shard) >= 0)
		coord_broadcast_home(c, shard);
}

/* Starts the move of `shard` (or of one like it) to region `to`. Returns
 * whether a move started. Said per shard at debug: its caller says how
 * many, once. */
static bool start_move(struct coordinator *c, uint32_t shard, int32_t to)
{
	/* With replicas, a shard of the same home that `to` keeps a complete
	 * copy of goes instead, if there is one: its records are there, so
	 * nothing is streamed (the counts come out the same). */
	shard = coordinator_replicas_prefer(&c->replicas, shard, to, c->home, c->moving_to);
	if (c->moving_to[shard] >= 0)
		return false; /* taken instead of an earlier move's shard */
	const erlang_pid *from = &c->regions[c->home[shard]].pid;
	c->moving_to[shard] = to;
	c->moving_since[shard] = evloop_now_ms(c->cfg.loop);
	c->nmoving++;
	c->metrics.rebalances++;
	log_at_shard(c->cfg.log, LOG_DEBUG, shard, "coordinator %s: moving shard %u from %s to %s", c->cfg.type_name, shard,
		 from->node, c->regions[to].pid.node);
	uint32_t acks = (uint32_t)c->nproxies;
	for (size_t k = 0; k < c->nregions; k++) {
		if ((int32_t)k == c->home[shard] || coord_is_downed(c, k))
			continue;
		coord_send_shard_msg(c, &c->regions[k].pid, SMSG_BEGIN_HANDOFF, shard, from);
		acks++;
	}
	for (size_t k = 0; k < c->nproxies; k++)
		coord_send_shard_msg(c, &c->proxies[k], SMSG_BEGIN_HANDOFF, shard, from);
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return true; /* under way: abandoned after handoff_timeout_ms */
	if (shard_msg_encode_handoff(&x, shard, acks, &c->regions[to].pid) == 0)
		coord_send_to_region(c, from, &x);
	ei_x_free(&x);
	return true;
}

/* The old home has stopped the shard: it now lives at its new home. */
static void on_shard_stopped(struct coordinator *c, uint32_t shard, const erlang_pid *from)
{
	if (shard >= c->cfg.number_of_shards || c->moving_to[shard] < 0)
		return;
	int32_t old = c->home[shard];
	if (old < 0 || !term_pid_equal(&c->regions[old].pid, from))
		return;
	c->regions[old].nshards--;
	c->home[shard] = c->moving_to[shard];
	c->regions[c->home[shard]].nshards++;
	c->moving_to[shard] = -1;
	c->nmoving--;
	coord_replicas_home_set(c, shard);
	coord_broadcast_home(c, shard);
}

/* The allocation as rebalance.h sees it. takes and drains (caller-freed)
 * are allocated here. Returns 0, or -ENOMEM with nothing to free. */
static int rebalance_state_of(const struct coordinator *c, struct rebalance_state *st, bool **takes, bool **drains)
{
	*takes = malloc((c->nregions ? c->nregions : 1) * sizeof **takes);
	*drains = malloc((c->nregions ? c->nregions : 1) * sizeof **drains);
	if (*takes == NULL || *drains == NULL) {
		free(*takes);
		free(*drains);
		return -ENOMEM;
	}
	for (size_t k = 0; k < c->nregions; k++) {
		(*takes)[k] = !coord_unavailable(c, k);
		/* A downed region's shards stay until its lease has run out. */
		(*drains)[k] = coord_is_draining(c, k) && !coord_is_downed(c, k);
	}
	*st = (struct rebalance_state){
		.nshards = c->cfg.number_of_shards,
		.home = c->home,
		.moving_to = c->moving_to,
		.nregions = c->nregions,
		.takes = *takes,
		.drains = *drains,
	};
	return 0;
}

/* Moves every shard of a leaving region off, all at once: a leaving node
 * waits for this, not for the rebalance ticks (rebalance_drain). */
static void drain(struct coordinator *c)
{
	if (!c->active || (coordinator_members_count(&c->members, CM_DRAINING) == 0 && c->nleaving == 0 && !c->cfg.pinned) ||
	    !coord_all_reported(c))
		return;
	struct rebalance_state st;
	bool *takes, *drains;
	if (rebalance_state_of(c, &st, &takes, &drains) != 0)
		return;
	struct rebalance_move *moves = malloc((c->cfg.number_of_shards ? c->cfg.number_of_shards : 1) * sizeof *moves);
	size_t n = 0;
	size_t started = 0;
	if (moves != NULL && rebalance_drain(&st, moves, &n) == 0)
		for (size_t k = 0; k < n; k++)
			started += start_move(c, moves[k].shard, (int32_t)moves[k].to);
	if (started > 0)
		log_info(c->cfg.log, "coordinator %s: moving %zu shards off leaving regions", c->cfg.type_name, started);
	free(moves);
	free(takes);
	free(drains);
}

/* Gives up moves that took too long, drains leaving regions, then evens
 * out the rest (rebalance_even_out): from the region with the most to the
 * one with the fewest, counting moves under way as done. */
static void on_rebalance_tick(struct evloop *loop, void *arg)
{
	struct coordinator *c = arg;
	evloop_timer_start(loop, &c->rebalance_timer, c->cfg.rebalance_interval_ms);
	uint64_t now = evloop_now_ms(loop);
	for (uint32_t s = 0; s < c->cfg.number_of_shards; s++) {
		if (c->moving_to[s] >= 0 && rebalance_overdue(c->moving_since[s], now, c->cfg.handoff_timeout_ms)) {
			log_at_shard(c->cfg.log, LOG_WARN, s, "coordinator %s: move of shard %u abandoned after %u ms",
				 c->cfg.type_name, s, c->cfg.handoff_timeout_ms);
			c->moving_to[s] = -1;
			c->nmoving--;
			c->metrics.rebalances_abandoned++;
			coord_broadcast_home(c, s); /* back where it was */
		}
	}
	if (!c->active || !coord_all_reported(c) || !replicas_ready(c))
		return;
	struct coordinator_view v;
	coord_replica_view(c, &v);
	coordinator_replicas_tick(&c->replicas, &v); /* replicas still missing */
	if (c->nregions < 2)
		return;
	drain(c);
	uint32_t max = c->cfg.max_simultaneous_rebalance;
	uint32_t room = c->nmoving < max ? max - c->nmoving : 0; /* drain may have started more */
	struct rebalance_state st;
	bool *takes, *drains;
	if (rebalance_state_of(c, &st, &takes, &drains) != 0)
		return;
	size_t cap = room < c->cfg.number_of_shards ? room : c->cfg.number_of_shards;
	struct rebalance_move *moves = malloc((cap ? cap : 1) * sizeof *moves);
	size_t n = 0;
	size_t started = 0;
	if (moves != NULL && rebalance_even_out(&st, c->cfg.rebalance_threshold, room, moves, &n) == 0)
		for (size_t k = 0; k < n; k++)
			started += start_move(c, moves[k].shard, (int32_t)moves[k].to);
	if (started > 0)
		log_info(c->cfg.log, "coordinator %s: moving %zu shards to even out the regions (%u under way)",
			 c->cfg.type_name, started, c->nmoving);
	free(moves);
	free(takes);
	free(drains);
}

static void on_register(struct coordinator *c, const erlang_pid *region)
{
	if (!c->active)
		return; /* the region finds the active one through membership */
	if (coord_find_region(c, region) < 0 && coordinator_members_unknown_region(&c->members, region->node) == CM_IGNORE)
		return; /* its node stops once it hears; its report would only mislead */
	if (coord_find_region(c, region) < 0) {
		/* A region of the same node under another pid is one of an earlier
		 * incarnation of the node (it crashed and came back faster than it
		 * was found unreachable): its shards are gone with it. */
		for (size_t k = c->nregions; k-- > 0;) {
			if (strcmp(c->regions[k].pid.node, region->node) == 0) {
				erlang_pid old = c->regions[k].pid;
				log_info(c->cfg.log, "coordinator %s: region on %s restarted; its old shards are free",
					 c->cfg.type_name, region->node);
				on_region_stopped(c, &old);
			}
		}
		if (c->nregions == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 4;
			struct region_ref *r = realloc(c->regions, cap * sizeof *r);
			if (r == NULL)
				return; /* the region retries */
			c->regions = r;
			c->cap = cap;
		}
		c->regions[c->nregions++] = (struct region_ref){.pid = *region};
		/* Members coming and going are membership's lines to say. */
		log_debug(c->cfg.log, "coordinator %s: region %s registered (%zu regions)", c->cfg.type_name,
			 region->node, c->nregions);
	}
	coord_send_pid_msg(c, region, SMSG_REGISTERED, &c->proc->pid);
}

static void on_get_home(struct coordinator *c, uint32_t shard, const erlang_pid *requester)
{
	if (!c->active || shard >= c->cfg.number_of_shards)
		return;
	if (coord_find_region(c, requester) < 0 && coord_find_proxy(c, requester) < 0) {
		/* It believes it is registered with us, but we forgot it (or it
		 * registered before a hand-over that went and came back): it
		 * would ask forever. It registers, reports, then asks again.
		 * Not a region of a downed node: that one is never answered. */
		if (coordinator_members_unknown_region(&c->members, requester->node) == CM_IGNORE)
			return;
		log_debug(c->cfg.log, "coordinator %s: region %s is not registered here: asked to register again",
			  c->cfg.type_name, requester->node);
		coord_send_pid_msg(c, requester, SMSG_REGISTER_AGAIN, &c->proc->pid);
		return;
	}
	if (c->home[shard] < 0 && (!coord_all_reported(c) || !replicas_ready(c)))
		return; /* allocating now could give away a shard a region still hosts */
	if (c->home[shard] < 0 && coordinator_replicas_waiting(&c->replicas, shard)) {
		/* Never started empty: it waits for a member of its last set,
		 * and the region answers what waits for it meanwhile. */
		coord_send_shard_msg(c, requester, SMSG_SHARD_WAITS, shard, &c->proc->pid);
		return;
	}
	if (c->home[shard] < 0 && coordinator_members_count(&c->members, CM_OWNERS) < c->cfg.min_nr_of_members)
		return; /* min_nr_of_members: the region asks again */
	if (c->moving_to[shard] >= 0) {
		/* A move is under way: the old home stops the shard, and every
		 * region hears the new home when it has (on_shard_stopped, or
		 * the old home again if the move is abandoned). Naming the old
		 * home now would undo the begin_handoff a region got before
		 * this request arrived — the new home itself would then take
		 * the shard for remote and drop the states streamed to it, and
		 * forward to the old home what should wait for the new one.
		 * The region asks again meanwhile. */
		return;
	}
	int32_t h = c->home[shard];
	if (h < 0) {
		int32_t pick = allocate_home(c, shard);
		if (pick < 0)
			return;
		h = pick;
		log_at_shard(c->cfg.log, LOG_DEBUG, shard, "coordinator %s: shard %u allocated to %s", c->cfg.type_name, shard,
			  c->regions[pick].pid.node);
		/* The home hears first, so it hosts the shard before anyone
		 * forwards messages to it. */
		if (!term_pid_equal(&c->regions[pick].pid, requester))
			coord_send_home(c, &c->regions[pick].pid, shard, &c->regions[pick].pid);
	}
	coord_send_home(c, requester, shard, &c->regions[h].pid);
}

static void on_region_stopped(struct coordinator *c, const erlang_pid *region)
{
	int proxy = coord_find_proxy(c, region);
	if (proxy >= 0) {
		c->proxies[proxy] = c->proxies[--c->nproxies];
		return;
	}
	for (size_t d = 0; d < c->nleaving; d++) {
		if (term_pid_equal(&c->leaving[d], region)) {
			c->leaving[d] = c->leaving[--c->nleaving];
			break;
		}
	}
	int k = coord_find_region(c, region);
	if (k < 0)
		return;
	log_info(c->cfg.log, "coordinator %s: region %s stopped (%zu regions left)", c->cfg.type_name,
		 region->node, c->nregions - 1);
	uint32_t *orphans = malloc(c->cfg.number_of_shards * sizeof *orphans);
	size_t norphans = 0;
	/* With replicas, a shard it homed continues on a complete replica,
	 * or waits for it to come back (never started empty): either way
	 * not allocated afresh, and a move of it is off. */
	if (orphans != NULL)
		coordinator_replicas_region_lost(&c->replicas, k, c->home, orphans, &norphans);
	for (size_t o = 0; o < norphans; o++) {
		uint32_t s = orphans[o];
		c->regions[c->home[s]].nshards++;
		if (c->moving_to[s] >= 0) {
			c->moving_to[s] = -1;
			c->nmoving--;
		}
	}
	for (uint32_t s = 0; s < c->cfg.number_of_shards; s++) {
		if (c->moving_to[s] >= 0 && c->home[s] < 0 && coordinator_replicas_waiting(&c->replicas, s)) {
			c->moving_to[s] = -1;
			c->nmoving--;
		}
	}
	for (uint32_t s = 0; s < c->cfg.number_of_shards; s++) {
		if (c->moving_to[s] == k) {
			/* Its new home is gone: the move is off, the shard stays. */
			c->moving_to[s] = -1;
			c->nmoving--;
			if (orphans)
				orphans[norphans++] = s; /* re-announced below, after the shift */
		}
		if (c->home[s] == k) {
			if (c->moving_to[s] >= 0) {
				/* It was leaving anyway: its new home takes it as it is. */
				c->home[s] = c->moving_to[s];
				c->moving_to[s] = -1;
				c->nmoving--;
			} else {
				c->home[s] = -1;
			}
			if (orphans)
				orphans[norphans++] = s;
		}
	}
	for (uint32_t s = 0; s < c->cfg.number_of_shards; s++)
		if (c->home[s] > k)
			c->home[s]--;
	for (uint32_t s = 0; s < c->cfg.number_of_shards; s++)
		if (c->moving_to[s] > k)
			c->moving_to[s]--;
	memmove(&c->regions[k], &c->regions[k + 1], (c->nregions - (size_t)k - 1) * sizeof *c->regions);
	c->nregions--;
	struct coordinator_view v;
	coord_replica_view(c, &v);
	coordinator_replicas_region_removed(&c->replicas, &v, k); /* the sets told before the homes */
	for (size_t o = 0; o < norphans; o++) {
		uint32_t s = orphans[o];
		if (c->home[s] < 0)
			reallocate(c, s);
		else
			coord_broadcast_home(c, s);
	}
	free(orphans);
}

/* replicas_held (a region's report, with replicas the end of it) and
 * replica_filled. */
static void on_replica_msg(struct coordinator *c, const struct replica_msg *m)
{
	int k = c->active ? coord_find_region(c, &m->pid) : -1;
	if (k < 0)
		return;
	struct coordinator_view v;
	coord_replica_view(c, &v);
	if (m->kind == RMSG_HELD) {
		c->regions[k].reported = true;
		uint32_t *promoted = malloc(c->cfg.number_of_shards * sizeof *promoted);
		size_t n = 0;
		if (promoted != NULL)
			coordinator_replicas_on_report(&c->replicas, &v, k, m, c->home, promoted, &n);
		for (size_t e = 0; e < n; e++) {
			c->regions[k].nshards++;
			coord_broadcast_home(c, promoted[e]);
		}
		free(promoted);
		if (replicas_ready(c))
			drain(c); /* the last report may be what a leaving region's shards waited for */
		return;
	}
	if (m->kind == RMSG_FILLED)
		coordinator_replicas_on_filled(&c->replicas, &v, m->shard, k);
}

static void coordinator_handle(void *ctx, struct proc *self, const struct proc_msg *m)
{
	(void)self;
	struct coordinator *c = ctx;
	struct replica_msg rm;
	if (replica_msg_decode(m->term, m->len, &rm) == 1) {
		on_replica_msg(c, &rm);
		return;
	}
	struct shard_msg sm;
	if (shard_msg_decode(m->term, m->len, &sm) != 1) {
		log_debug(c->cfg.log, "coordinator %s: unexpected message ignored", c->cfg.type_name);
		return;
	}
	switch (sm.kind) {
	case SMSG_REGISTER: on_register(c, &sm.pid); break;
	case SMSG_REGISTER_PROXY: on_register_proxy(c, &sm.pid); break;
	case SMSG_REGION_LEAVING: on_region_leaving(c, &sm.pid); break;
	case SMSG_REGION_BACK: on_region_back(c, &sm.pid); break;
	case SMSG_GET_SHARD_HOME: on_get_home(c, sm.shard, &sm.pid); break;
	case SMSG_REGION_STOPPED: on_region_stopped(c, &sm.pid); break;
	case SMSG_HOSTING:
		coord_on_hosting(c, &sm);
		drain(c); /* the last report may be what a leaving region's shards waited for */
		break;
	case SMSG_SHARD_STOPPED: on_shard_stopped(c, sm.shard, &sm.pid); break;
	default: break;
	}
}

/* Frees what coordinator_start allocated (NULL fields are fine). */
static void free_parts(struct coordinator *c)
{
	coordinator_replicas_free(&c->replicas);
	free(c->home);
	free(c->moving_to);
	free(c->moving_since);
	free(c->claims);
	free(c);
}

struct coordinator *coordinator_start(const struct coordinator_config *cfg, int *err)
{
	struct coordinator *c = calloc(1, sizeof *c);
	if (c == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	c->cfg = *cfg;
	size_t n = cfg->number_of_shards ? cfg->number_of_shards : 1;
	c->home = malloc(n * sizeof *c->home);
	c->moving_to = malloc(n * sizeof *c->moving_to);
	c->moving_since = calloc(n, sizeof *c->moving_since);
	c->claims = calloc(n, sizeof *c->claims);
	if (c->home == NULL || c->moving_to == NULL || c->moving_since == NULL || c->claims == NULL ||
	    coordinator_replicas_init(&c->replicas, cfg->number_of_shards, cfg->state_replicas) != 0) {
		free_parts(c);
		*err = -ENOMEM;
		return NULL;
	}
	if (c->cfg.allocate == NULL)
		c->cfg.allocate = coordinator_least_shards;
	for (uint32_t s = 0; s < cfg->number_of_shards; s++)
		c->home[s] = c->moving_to[s] = -1;
	evloop_timer_init(&c->rebalance_timer, on_rebalance_tick, c);
	c->proc = dist_node_spawn(cfg->node, cfg->name, coordinator_handle, c, err);
	if (c->proc == NULL) {
		free_parts(c);
		return NULL;
	}
	if (cfg->loop != NULL && cfg->rebalance_interval_ms > 0)
		evloop_timer_start(cfg->loop, &c->rebalance_timer, cfg->rebalance_interval_ms);
	return c;
}

const erlang_pid *coordinator_pid(const struct coordinator *c) { return &c->proc->pid; }

void coordinator_free(struct coordinator *c)
{
	if (c == NULL)
		return;
	if (c->cfg.loop != NULL)
		evloop_timer_stop(c->cfg.loop, &c->rebalance_timer);
	dist_node_exit(c->cfg.node, c->proc, "shutdown");
	free(c->regions);
	coordinator_members_free(&c->members);
	free(c->leaving);
	free(c->proxies);
	free_parts(c);
}

void coordinator_get_metrics(const struct coordinator *c, struct coordinator_metrics *out)
{
	*out = c->metrics;
	out->active = c->active;
	out->moving = c->nmoving;
	if (c->active)
		coordinator_replicas_count(&c->replicas, &out->replicas_missing, &out->shards_waiting);
}
