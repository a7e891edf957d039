/* coordinator_base.c — see coordinator_internal.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "etf/term.h"
#include "coordinator/coordinator_internal.h"

/* A region on a downed node keeps its shards until its lease has run out
 * (membership.h), but it answers nothing: it gets no shard, takes part in no
 * move, and no handoff waits for its ack. */
bool coord_is_downed(const struct coordinator *c, size_t region)
{
	return coordinator_members_in(&c->members, CM_DOWNED, c->regions[region].pid.node);
}

/* It sent region_leaving (graceful_shutdown, or its type's host is down). */
bool coord_is_leaving(const struct coordinator *c, const erlang_pid *region)
{
	for (size_t d = 0; d < c->nleaving; d++)
		if (term_pid_equal(&c->leaving[d], region))
			return true;
	return false;
}

/* Its node is leaving, or it is shutting down on a node that stays; or,
 * for a singleton's coordinator, it is on another node than this one, the
 * oldest member's, where the shard belongs. */
bool coord_is_draining(const struct coordinator *c, size_t region)
{
	if (c->cfg.pinned && strcmp(c->regions[region].pid.node, dist_node_name(c->cfg.node)) != 0)
		return true;
	if (coordinator_members_in(&c->members, CM_DRAINING, c->regions[region].pid.node))
		return true;
	return coord_is_leaving(c, &c->regions[region].pid);
}

/* Not to be given shards. A region may register before its node is up
 * (while it is joining): it gets shards only once the node owns shards, as
 * in Akka, and so only after the members that hold remembered entities
 * have sent it their sets (remember_share.h). */
bool coord_unavailable(const struct coordinator *c, size_t region)
{
	return coord_is_draining(c, region) || !coordinator_members_may_get_shards(&c->members, c->regions[region].pid.node);
}

/* May keep copies of shards homed elsewhere (state_replicas): as
 * coord_unavailable, but a singleton's copies go to the other members too
 * (only its home is pinned to the oldest). */
bool coord_takes_copies(const struct coordinator *c, size_t region)
{
	const char *node = c->regions[region].pid.node;
	return !coord_is_downed(c, region) && !coord_is_leaving(c, &c->regions[region].pid) &&
	       !coordinator_members_in(&c->members, CM_DRAINING, node) &&
	       coordinator_members_may_get_shards(&c->members, node);
}

/* True when every owner's region has registered and reported. */
bool coord_all_reported(const struct coordinator *c)
{
	const char **reported = malloc((c->nregions ? c->nregions : 1) * sizeof *reported);
	if (reported == NULL)
		return false; /* the region asks again */
	size_t n = 0;
	for (size_t k = 0; k < c->nregions; k++)
		if (c->regions[k].reported)
			reported[n++] = c->regions[k].pid.node;
	bool all = coordinator_members_all_reported(&c->members, reported, n);
	free(reported);
	return all;
}

int coord_find_region(const struct coordinator *c, const erlang_pid *pid)
{
	for (size_t k = 0; k < c->nregions; k++)
		if (term_pid_equal(&c->regions[k].pid, pid))
			return (int)k;
	return -1;
}

const erlang_pid *coord_region_pid_at(void *arg, size_t k)
{
	const struct coordinator *c = arg;
	return &c->regions[k].pid;
}

static bool takes_copies_at(void *arg, size_t k)
{
	return coord_takes_copies(arg, k);
}

static bool reported_at(void *arg, size_t k)
{
	const struct coordinator *c = arg;
	return k < c->nregions && c->regions[k].reported;
}

void coord_replica_view(struct coordinator *c, struct coordinator_view *v)
{
	*v = (struct coordinator_view){
		.node = c->cfg.node,
		.log = c->cfg.log,
		.type_name = c->cfg.type_name,
		.self = &c->proc->pid,
		.region_name = c->cfg.type_name,
		.nregions = c->nregions,
		.region_pid = coord_region_pid_at,
		.takes = takes_copies_at,
		.reported = reported_at,
		.arg = c,
	};
}

void coord_send_pid_msg(struct coordinator *c, const erlang_pid *to, enum shard_msg_kind kind,
			 const erlang_pid *pid)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (shard_msg_encode_pid(&x, kind, pid) == 0)
		dist_node_send(c->cfg.node, to, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

/* Messages that change where a region sends a shard's messages go to the
 * region's registered name with our pid as sender, so a region can tell
 * the active coordinator from one that was active before. */
void coord_send_to_region(struct coordinator *c, const erlang_pid *region, const ei_x_buff *x)
{
	dist_node_reg_send(c->cfg.node, &c->proc->pid, c->cfg.type_name, region->node, x->buff, (size_t)x->index);
}

uint64_t coord_claim_epoch(struct coordinator *c, uint32_t shard, const erlang_pid *home)
{
	struct coord_claim *cl = &c->claims[shard];
	if (!cl->held || !term_pid_equal(&cl->holder, home)) {
		cl->holder = *home;
		cl->epoch = ++c->next_epoch;
		cl->held = true;
	}
	return cl->epoch;
}

void coord_send_home(struct coordinator *c, const erlang_pid *to, uint32_t shard, const erlang_pid *home)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	/* Naming the home itself gives its claim an epoch (later claims must
	 * be newer, whether it keeps epochs or not), which it hears if it
	 * keeps them. */
	int k = term_pid_equal(to, home) ? coord_find_region(c, home) : -1;
	uint64_t epoch = k >= 0 ? coord_claim_epoch(c, shard, home) : 0;
	int rc = k >= 0 && c->regions[k].epochs ? shard_msg_encode_home_epoch(&x, shard, home, epoch)
						: shard_msg_encode_shard(&x, SMSG_SHARD_HOME, shard, home);
	if (rc == 0)
		coord_send_to_region(c, to, &x);
	ei_x_free(&x);
}

void coord_replicas_home_set(struct coordinator *c, uint32_t shard)
{
	struct coordinator_view v;
	coord_replica_view(c, &v);
	coordinator_replicas_home_set(&c->replicas, &v, shard, c->home[shard]);
}

/* Tells every region where the shard lives, its home first so it hosts the
 * shard before anything is forwarded to it. */
void coord_broadcast_home(struct coordinator *c, uint32_t shard)
{
	const erlang_pid *home = &c->regions[c->home[shard]].pid;
	coord_send_home(c, home, shard, home);
	for (size_t k = 0; k < c->nregions; k++)
		if ((int32_t)k != c->home[shard])
			coord_send_home(c, &c->regions[k].pid, shard, home);
	for (size_t k = 0; k < c->nproxies; k++)
		coord_send_home(c, &c->proxies[k], shard, home);
}

int coord_find_proxy(const struct coordinator *c, const erlang_pid *pid)
{
	for (size_t k = 0; k < c->nproxies; k++)
		if (term_pid_equal(&c->proxies[k], pid))
			return (int)k;
	return -1;
}

void coord_send_shard_msg(struct coordinator *c, const erlang_pid *to, enum shard_msg_kind kind,
			   uint32_t shard, const erlang_pid *pid)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (shard_msg_encode_shard(&x, kind, shard, pid) == 0)
		coord_send_to_region(c, to, &x);
	ei_x_free(&x);
}
