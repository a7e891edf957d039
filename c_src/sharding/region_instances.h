/*
 * region_instances.h — the test setting instance_reports_to
 * (docs/contract.md "Counting instances"): each incarnation of an entity
 * of a shard this region is the home of, as it begins and ends, reported
 * to the process registered as `shardnode_instances` on that node, so a
 * test can check that no entity ever ran on two members at once. For the
 * files of a region only (region_internal.h says which may call which).
 */
#ifndef SN_REGION_INSTANCES_H
#define SN_REGION_INSTANCES_H

#include "sharding/region_internal.h"

/* The shard `s` has become this region's shard (the home named it here):
 * from now on its entities' starts and stops are reported, and those it
 * holds already (restored from states that came ahead of the move) are
 * reported started now. Nothing without instance_reports_to. */
void region_instances_watch(struct region *r, struct shard *s);

#endif
