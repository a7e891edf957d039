/*
 * coordinator_internal.h — what the files of a coordinator (coordinator.h)
 * share. Not for other modules: they use coordinator.h.
 *
 *   coordinator.c          the protocol: registrations, allocation, moves,
 *                          rebalancing, regions gone
 *   coordinator_base.c     what the protocol asks of its state: which
 *                          regions may get shards, lookups, and the
 *                          messages it sends
 *   coordinator_claims.c   whose claim to a shard counts: epochs, hosting
 *                          reports, two regions reporting one shard
 *   coordinator_replicas.c the replica sets (state_replicas), on a view of
 *                          the regions coordinator_base.c gives
 *
 * Calls run down this list. Everything runs on the loop's thread.
 */
#ifndef SN_COORDINATOR_INTERNAL_H
#define SN_COORDINATOR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "protocol/proc.h"
#include "coordinator/coordinator.h"
#include "coordinator/coordinator_members.h"
#include "coordinator/coordinator_replicas.h"
#include "etf/shard_msg.h"

struct region_ref {
	erlang_pid pid;
	uint32_t nshards; /* shards allocated to it */
	bool reported;    /* its `hosting` report (with replicas, its replicas_held) has arrived */
	bool epochs;      /* its report stated epochs (protocol 2): it is told its claims' */
};

/* The claim a shard's home has (coordinator_claims.c). */
struct coord_claim {
	erlang_pid holder; /* the region the epoch was given to or reported by */
	uint64_t epoch;    /* 0: the holder stated none (v0.1.0) */
	bool held;         /* false: no claim known (the shard has no home) */
};

struct coordinator {
	struct coordinator_config cfg;
	struct proc *proc;
	bool active;
	struct region_ref *regions;
	size_t nregions, cap;
	int32_t *home; /* per shard: index into regions, or -1 */
	int32_t *moving_to; /* per shard: index of the region it moves to, or -1 */
	uint64_t *moving_since;
	uint32_t nmoving;
	struct coordinator_metrics metrics;
	struct coordinator_members members; /* owners, joining, draining, downed */
	erlang_pid *leaving; /* regions shutting down on nodes that stay */
	size_t nleaving, leaving_cap;
	erlang_pid *proxies; /* proxy-only regions: told of homes, never given shards */
	size_t nproxies, proxies_cap;
	struct evloop_timer rebalance_timer;
	struct coordinator_replicas replicas; /* state_replicas */
	struct coord_claim *claims; /* per shard */
	uint64_t next_epoch;        /* the last epoch given or reported */
};


/* A region on a downed node keeps its shards until its lease has run out
 * (membership.h), but it answers nothing: it gets no shard, takes part in no
 * move, and no handoff waits for its ack. */
bool coord_is_downed(const struct coordinator *c, size_t region);

/* It sent region_leaving (graceful_shutdown, or its type's host is down). */
bool coord_is_leaving(const struct coordinator *c, const erlang_pid *region);

/* Its node is leaving, or it is shutting down on a node that stays; or,
 * for a singleton's coordinator, it is on another node than this one, the
 * oldest member's, where the shard belongs. */
bool coord_is_draining(const struct coordinator *c, size_t region);

/* Not to be given shards. A region may register before its node is up
 * (while it is joining): it gets shards only once the node owns shards, as
 * in Akka, and so only after the members that hold remembered entities
 * have sent it their sets (remember_share.h). */
bool coord_unavailable(const struct coordinator *c, size_t region);

/* May keep copies of shards homed elsewhere (state_replicas): as
 * coord_unavailable, but a singleton's copies go to the other members too
 * (only its home is pinned to the oldest). */
bool coord_takes_copies(const struct coordinator *c, size_t region);

/* True when every owner's region has registered and reported. */
bool coord_all_reported(const struct coordinator *c);

int coord_find_region(const struct coordinator *c, const erlang_pid *pid);

const erlang_pid *coord_region_pid_at(void *arg, size_t k);

/* The regions as the replica sets see them (valid until the regions
 * change). */
void coord_replica_view(struct coordinator *c, struct coordinator_view *v);

void coord_send_pid_msg(struct coordinator *c, const erlang_pid *to, enum shard_msg_kind kind,
			 const erlang_pid *pid);

/* Messages that change where a region sends a shard's messages go to the
 * region's registered name with our pid as sender, so a region can tell
 * the active coordinator from one that was active before. */
void coord_send_to_region(struct coordinator *c, const erlang_pid *region, const ei_x_buff *x);

/* The epoch of `home`'s claim to the shard: a new one, greater than any
 * before, if the claim was given to or reported by another region. */
uint64_t coord_claim_epoch(struct coordinator *c, uint32_t shard, const erlang_pid *home);

/* shard_home to `to`; to the home itself, with its claim's epoch if its
 * report stated epochs (coordinator.h, "Claims and epochs"). */
void coord_send_home(struct coordinator *c, const erlang_pid *to, uint32_t shard, const erlang_pid *home);

/* Tells every region where the shard lives, its home first so it hosts the
 * shard before anything is forwarded to it. */
void coord_broadcast_home(struct coordinator *c, uint32_t shard);

/* The shard's home changed: its replica set follows and is told (before
 * the home is). */
void coord_replicas_home_set(struct coordinator *c, uint32_t shard);

/* ---- claims (coordinator_claims.c) ---- */

/* Forgets every claim, as the allocation is forgotten. */
void coord_claims_forget(struct coordinator *c);

/* {'$shardnode', hosting, ...}: what a registering region hosts becomes
 * its allocation, and a shard another region holds goes to the newer
 * claim (the loser is told the winner is the home). `sm` is decoded and
 * checked (shard_msg_decode). */
void coord_on_hosting(struct coordinator *c, const struct shard_msg *sm);

int coord_find_proxy(const struct coordinator *c, const erlang_pid *pid);

void coord_send_shard_msg(struct coordinator *c, const erlang_pid *to, enum shard_msg_kind kind,
			   uint32_t shard, const erlang_pid *pid);

#endif
