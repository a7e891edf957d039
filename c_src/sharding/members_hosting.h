/*
 * members_hosting.h — how sharding asks which members host a type.
 *
 * Sharding does not include the cluster layer (docs/architecture.md,
 * "Layers"): regions and remembered-entity replicas learn the members
 * hosting their type through this callback, which app/ connects to
 * membership_nodes_with().
 */
#ifndef SN_MEMBERS_HOSTING_H
#define SN_MEMBERS_HOSTING_H

#include <stddef.h>

#include "base/node_limits.h"

/* Fills out[0..max) with the names of the members hosting `type` that own
 * shards (this node included when it does) and returns how many, at most
 * max. The names stay valid until the member list changes: use them within
 * the current loop turn. `arg` is the callback's, given with it. Callers
 * pass max = CLUSTER_MEMBERS_MAX, an array of that many on their stack. */
typedef size_t members_hosting_fn(void *arg, const char *type, const char **out, size_t max);

#endif
