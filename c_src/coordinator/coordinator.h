/*
 * coordinator.h — the shard coordinator of one entity type: knows the
 * regions of the type, decides where each shard lives (least-shard
 * allocation), and tells regions the homes of shards.
 *
 * Every node hosting the type runs one, registered as
 * shardnode_coordinator_<type>, but only the one on the oldest up member
 * hosting the type is active (a cluster singleton): the others ignore what
 * they are sent. An active coordinator starts empty and rebuilds its
 * allocation from what the regions report when they register (`hosting`);
 * it allocates nothing until every expected region has reported. A region
 * it does not know that asks it for a shard's home (it was forgotten, or
 * registered with this coordinator before an earlier hand-over) is told to
 * register again (`register_again`), so no region waits on an answer that
 * cannot come.
 *
 * Claims and epochs (coordinator_claims.c): each time a region is named a
 * shard's home, its claim gets an epoch greater than any before; the
 * region states it when it reports what it hosts. When two regions report
 * one shard, the newer epoch keeps it, and the other region is told where
 * the shard lives, which makes it stop its copy. Only claims of members
 * that state no epoch (v0.1.0) are decided by which report came first.
 *
 * Rebalancing: every rebalance_interval_ms the active coordinator moves
 * shards from the region with the most to the one with the fewest while the
 * difference exceeds rebalance_threshold, at most max_simultaneous_rebalance
 * at once. A move is a handoff (docs/protocol.md): begin_handoff to every
 * other region (they hold the shard's messages and acknowledge to its home),
 * handoff to the home (it stops the entities once every region has
 * acknowledged), shard_stopped back, then shard_home to all: the new home
 * first, then the regions that held messages, which send them on in order.
 */
#ifndef SN_COORDINATOR_H
#define SN_COORDINATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "distribution/dist_node.h"
#include "base/evloop.h"
#include "base/log.h"

struct coordinator;

/* Chooses the region for an unallocated shard: given each region's current
 * shard count, returns the index of the region to use, or -1 for none.
 * The default is coordinator_least_shards. */
typedef int (*allocation_strategy_fn)(const uint32_t *shard_counts, size_t nregions, void *arg);

/* Least-shard allocation: the region with the fewest shards; ties go to the
 * earliest registered. */
int coordinator_least_shards(const uint32_t *shard_counts, size_t nregions, void *arg);

struct coordinator_config {
	struct dist_node *node;
	const struct logger *log;
	const char *type_name;
	const char *name;       /* registered name */
	uint32_t number_of_shards;
	allocation_strategy_fn allocate; /* NULL: least shards */
	void *allocate_arg;
	struct evloop *loop;
	uint32_t rebalance_interval_ms;
	uint32_t rebalance_threshold;    /* move while most - least > this */
	uint32_t max_simultaneous_rebalance;
	uint32_t handoff_timeout_ms;     /* a move not finished by then is abandoned */
	uint32_t min_nr_of_members;            /* allocate nothing before this many members host the type */
	/* A cluster singleton's coordinator (docs/contract.md "Cluster
	 * singletons"): shards go only to the region on this node, the oldest
	 * member's; a region elsewhere that holds one (the oldest before, now
	 * leaving) is drained to it, and nothing is evened out. */
	bool pinned;
	/* state_replicas (docs/contract.md, "Replicated state"): replicas
	 * per shard besides its home, named to the regions with an epoch
	 * (coordinator_replicas.h). 0: none (no store of each node's own). */
	uint32_t state_replicas;
};

/* Spawns the coordinator proc. Returns it, or NULL with *err. */
struct coordinator *coordinator_start(const struct coordinator_config *cfg, int *err);
const erlang_pid *coordinator_pid(const struct coordinator *c);

/* Makes this coordinator the active one (true) or not. Either change
 * forgets every region and allocation: an active coordinator rebuilds them
 * from the regions' reports. */
void coordinator_set_active(struct coordinator *c, bool active);

/* The members whose regions count, after a membership change. `owners`
 * (membership_nodes_with: up or leaving members hosting the type, and
 * downed ones whose lease has not run out) must all have reported before
 * anything is allocated, and only their regions get shards. `joining`
 * members' regions stay registered, so they need not register again when
 * their node is admitted, but get nothing yet. A region on any other node
 * is forgotten and its shards are given elsewhere; so is a region on a
 * joining node that holds shards (an earlier incarnation of that node:
 * they went with it). Both lists are copied. */
void coordinator_set_members(struct coordinator *c, const char *const *owners, size_t nowners,
			     const char *const *joining, size_t njoining);

/* The nodes that are leaving: their regions get no new shards, and their
 * shards are handed off to the others at once. Copied. */
void coordinator_set_draining(struct coordinator *c, const char *const *nodes, size_t n);

/* The members that were downed (membership_downed). A proxy region on one
 * of them is forgotten. A region on one keeps its shards until its node
 * leaves the owners (coordinator_set_members, once its lease has run
 * out), but meanwhile gets no shard, takes part in no move, and no handoff
 * waits for its ack. A region of a downed node that is not registered is
 * not registered now (nor told to register again): its node stops once it
 * hears of the down, and a report of what it hosts would only mislead.
 * Copied. */
void coordinator_set_downed(struct coordinator *c, const char *const *nodes, size_t n);

/* What the metrics endpoint shows of a coordinator (docs/metrics.md). */
struct coordinator_metrics {
	uint64_t rebalances;           /* shard moves started by this coordinator */
	uint64_t rebalances_abandoned; /* of those, given up after handoff_timeout_ms */
	uint32_t moving;               /* under way now */
	uint32_t replicas_missing;     /* state_replicas: copies the shards lack (coordinator_replicas_count) */
	uint32_t shards_waiting;       /* shards waiting for a member of their last replica set */
	bool active;                   /* the cluster's coordinator of the type runs here */
};
void coordinator_get_metrics(const struct coordinator *c, struct coordinator_metrics *out);

/* Exits the coordinator's process (its monitors get `shutdown`), stops its
 * timer and frees it. NULL is fine. */
void coordinator_free(struct coordinator *c);

#endif
