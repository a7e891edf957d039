/*
 * coordinator.h — the shard coordinator of one entity type: knows the
 * regions of the type, decides where each shard lives (least-shard
 * allocation), and tells regions the homes of shards.
 *
 * It is a proc without a registered name; regions learn its pid. It speaks
 * only shard_msg.h messages. In a cluster it runs as a singleton on the
 * oldest member (docs/architecture.md); on one node it is simply local.
 */
#ifndef SN_COORDINATOR_H
#define SN_COORDINATOR_H

#include <stdint.h>

#include <ei.h>

#include "dist_node.h"
#include "log.h"

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
	uint32_t nshards;
	allocation_strategy_fn allocate; /* NULL: least shards */
	void *allocate_arg;
};

/* Spawns the coordinator proc. Returns it, or NULL with *err. */
struct coordinator *coordinator_start(const struct coordinator_config *cfg, int *err);
const erlang_pid *coordinator_pid(const struct coordinator *c);
void coordinator_stop(struct coordinator *c);

#endif
