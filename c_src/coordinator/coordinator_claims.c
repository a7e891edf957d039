/*
 * coordinator_claims.c — whose claim to a shard counts (coordinator.h,
 * "Claims and epochs"): the epoch each home is given, the regions'
 * hosting reports, and what the coordinator does when two regions report
 * one shard.
 *
 * Every time the coordinator names a region a shard's home, the claim gets
 * an epoch greater than any it gave or heard of before; a region that
 * speaks protocol 2 (member_protocol.h) keeps it and states it in its
 * hosting report. Reports are how a coordinator that takes over learns the
 * allocation, so two regions can report one shard: one that kept a shard
 * through a hand-over of the coordinator while another was given it, or a
 * member that came back with shards of its own. The newer epoch keeps the
 * shard, and the other region is told the winner is the home, which makes
 * it stop its copy (region_coordinator.c): never two regions serving one
 * shard. Only claims that state no epoch (members of v0.1.0) are decided
 * by which report came first.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "etf/term.h"
#include "coordinator/coordinator_internal.h"

void coord_claims_forget(struct coordinator *c)
{
	for (uint32_t s = 0; s < c->cfg.number_of_shards; s++)
		c->claims[s].held = false;
	/* next_epoch stays: epochs only grow, whichever coordinator gives them. */
}

/* The shard is region k's, with the epoch it reported. */
static void take_claim(struct coordinator *c, uint32_t shard, int k, uint64_t epoch)
{
	c->home[shard] = k;
	c->regions[k].nshards++;
	c->claims[shard] = (struct coord_claim){.holder = c->regions[k].pid, .epoch = epoch, .held = true};
	coord_replicas_home_set(c, shard);
}

/* The epoch the kept home's claim has: the one it reported or was given,
 * 0 if none is known (it states none). */
static uint64_t kept_epoch(const struct coordinator *c, uint32_t shard)
{
	const struct coord_claim *cl = &c->claims[shard];
	if (!cl->held || !term_pid_equal(&cl->holder, &c->regions[c->home[shard]].pid))
		return 0;
	return cl->epoch;
}

/* Region k reports `shard` with `epoch` while another region is its home. */
static void decide(struct coordinator *c, uint32_t shard, int k, uint64_t epoch)
{
	int32_t kept = c->home[shard];
	uint64_t was = kept_epoch(c, shard);
	/* A move under way ends with a home named to every region anyway;
	 * the region reporting now stops its copy. */
	bool reporter_wins = c->moving_to[shard] < 0 && epoch > was;
	const erlang_pid *winner = reporter_wins ? &c->regions[k].pid : &c->regions[kept].pid;
	const erlang_pid *loser = reporter_wins ? &c->regions[kept].pid : &c->regions[k].pid;
	log_at_shard(c->cfg.log, LOG_WARN, shard,
		     "coordinator %s: shard %u claimed by %s (epoch %" PRIu64 ") and %s (epoch %" PRIu64 "): "
		     "%s keeps it, %s stops its copy", c->cfg.type_name, shard, c->regions[kept].pid.node, was,
		     c->regions[k].pid.node, epoch, winner->node, loser->node);
	if (reporter_wins) {
		c->regions[kept].nshards--;
		take_claim(c, shard, k, epoch);
	}
	coord_send_home(c, loser, shard, winner);
}

void coord_on_hosting(struct coordinator *c, const struct shard_msg *sm)
{
	int k = coord_find_region(c, &sm->pid);
	if (!c->active || k < 0)
		return;
	size_t n = sm->count;
	uint64_t *shards = malloc((n ? n : 1) * sizeof *shards);
	uint64_t *epochs = malloc((n ? n : 1) * sizeof *epochs);
	if (shards == NULL || epochs == NULL) {
		/* Not counted as reported: nothing is allocated before it is,
		 * and the region reports again when it registers again. */
		free(shards);
		free(epochs);
		return;
	}
	c->regions[k].epochs = sm->epochs != NULL;
	/* With replicas, its report is complete with replicas_held. */
	if (!coordinator_replicas_on(&c->replicas))
		c->regions[k].reported = true;
	shard_msg_hosting_read(sm, shards, epochs);
	for (size_t e = 0; e < n; e++) {
		uint64_t shard = shards[e], epoch = epochs[e];
		if (epoch > c->next_epoch)
			c->next_epoch = epoch; /* an epoch given later must be newer */
		if (shard >= c->cfg.number_of_shards)
			continue;
		if (c->home[shard] < 0)
			take_claim(c, (uint32_t)shard, k, epoch);
		else if (c->home[shard] != k)
			decide(c, (uint32_t)shard, k, epoch);
		else if (epoch > c->claims[shard].epoch)
			c->claims[shard].epoch = epoch; /* reported again */
	}
	free(shards);
	free(epochs);
}
