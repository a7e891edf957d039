/*
 * region_shutdown.c — how a region stops: graceful_shutdown (its shards are
 * handed off to the other members' regions first, docs/contract.md
 * "Region requests"), and region_shutdown, which stops it at once.
 */
#include <string.h>

#include "sharding/region_internal.h"
#include "sharding/region_buffer.h"
#include "sharding/region_handoff_state.h"
#include "sharding/region_send.h"
#include "sharding/region_shutdown.h"
#include "sharding/region_store.h"

/* How often a leaving region looks whether its shards are all gone. */
#define LEAVE_CHECK_MS 50

static void finish_leaving(struct region *r)
{
	poll_until_stop(&r->leave.poll);
	region_shutdown(r);
	if (r->cfg.on_stopped)
		r->cfg.on_stopped(r->cfg.on_stopped_arg, r);
}

/* Until every shard has been handed off (or handoff_timeout_ms passed), the
 * region goes on routing and serving what it still hosts. */
static bool no_shard_left(void *arg)
{
	const struct region *r = arg;
	return r->nlocal == 0;
}

static void on_left(void *arg, bool in_time)
{
	(void)in_time; /* past the deadline, what is left stops with the region */
	finish_leaving(arg);
}

void region_leave_poll_init(struct region *r)
{
	poll_until_init(&r->leave.poll, r->cfg.loop, no_shard_left, on_left, r);
}

/* The coordinator moves this region's shards to the others with handoffs,
 * as it does for a leaving node (region_leaving). Alone in the cluster,
 * there is nowhere to move them: the region stops at once. */
void region_begin_leaving(struct region *r)
{
	if (r->leave.under_way || r->stopped)
		return;
	const char *nodes[CLUSTER_MEMBERS_MAX];
	size_t n = r->cfg.members_hosting ? r->cfg.members_hosting(r->cfg.members_arg, r->cfg.type->name, nodes, CLUSTER_MEMBERS_MAX)
					  : 0;
	bool others = false;
	for (size_t k = 0; k < n; k++)
		others = others || strcmp(nodes[k], dist_node_name(r->cfg.node)) != 0;
	if (!others || r->nlocal == 0 || !r->coord.registered) {
		finish_leaving(r);
		return;
	}
	r->leave.under_way = true;
	region_send_to_coordinator(r, SMSG_REGION_LEAVING, 0);
	if (poll_until_start(&r->leave.poll, LEAVE_CHECK_MS, LEAVE_CHECK_MS, r->cfg.handoff_timeout_ms) != 0)
		finish_leaving(r); /* no timer to wait with: stop now, as the deadline would */
}

void region_shutdown(struct region *r)
{
	if (r->stopped)
		return;
	r->stopped = true;
	poll_until_stop(&r->leave.poll);
	evloop_timer_stop(r->cfg.loop, &r->timers.retry);
	evloop_timer_stop(r->cfg.loop, &r->timers.idle);
	region_store_stop(r); /* before the shards go: held replies name them */
	region_state_release_acks(r, UINT64_MAX);
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		struct shard_slot *slot = &r->slots[s];
		region_refuse_buffered(r, slot, "shutting_down");
		shard_free(slot->shard);
		slot->shard = NULL;
		region_state_drop_incoming(slot);
	}
	r->nlocal = 0;
	region_send_to_coordinator(r, SMSG_REGION_STOPPED, 0);
	dist_node_exit(r->cfg.node, r->proc, "normal");
	r->proc = NULL;
	log_info(r->cfg.log, "region %s stopped", r->cfg.name);
}

bool region_stopped(const struct region *r) { return r->stopped; }
