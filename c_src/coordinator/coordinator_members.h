/*
 * coordinator_members.h — what a coordinator knows of the members of the
 * cluster, and the decisions it takes on that alone: which regions stay
 * registered, which may be given shards, whose report it waits for before
 * allocating, and whom it answers. Pure: no I/O, no clock. coordinator.c
 * keeps the regions themselves and asks this module.
 *
 * The sets come from membership after every change:
 *   owners    up or leaving members hosting the type, and downed ones whose
 *             lease has not run out (membership_nodes_with): they hold the
 *             shards, so each must have reported before anything is
 *             allocated, and only they get new ones;
 *   joining   members not admitted yet: their regions register early and
 *             stay registered, but get nothing until their node is up;
 *   draining  members leaving: their shards move off;
 *   downed    members downed (membership_downed): they get nothing, their
 *             regions are neither registered nor answered.
 */
#ifndef SN_COORDINATOR_MEMBERS_H
#define SN_COORDINATOR_MEMBERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/node_set.h"

enum coordinator_node_set { CM_OWNERS, CM_JOINING, CM_DRAINING, CM_DOWNED, CM_NSETS };

/* Zero-initialised is valid: every set empty. */
struct coordinator_members {
	struct node_set set[CM_NSETS];
};

void coordinator_members_free(struct coordinator_members *cm);

/* Replaces one set with a copy of nodes (duplicates dropped). Returns 0,
 * or -ENOMEM or -ENAMETOOLONG (a name longer than a node name can be) with
 * the set as it was. */
int coordinator_members_set(struct coordinator_members *cm, enum coordinator_node_set which,
			    const char *const *nodes, size_t n);

bool coordinator_members_in(const struct coordinator_members *cm, enum coordinator_node_set which,
			    const char *node);

size_t coordinator_members_count(const struct coordinator_members *cm, enum coordinator_node_set which);

/* Whether a registered region on `node`, holding `nshards` shards, stays
 * registered: its node owns shards, or it is joining and holds none (a
 * joining node that holds shards is an earlier incarnation's, gone with
 * it). A region that does not stay gives its shards back. */
bool coordinator_members_keeps(const struct coordinator_members *cm, const char *node, uint32_t nshards);

/* Whether a region on `node` may be given a shard: an owner, neither
 * draining nor downed. */
bool coordinator_members_may_get_shards(const struct coordinator_members *cm, const char *node);

/* Whether every owner is among the `n` nodes whose regions reported (their
 * `hosting`). Until then nothing is allocated: a shard one of them still
 * hosts could go to a second region. */
bool coordinator_members_all_reported(const struct coordinator_members *cm, const char *const *reported, size_t n);

/* What an active coordinator does with a region on `node` it does not know
 * that speaks to it: registers it (register), tells it to register again
 * (get_shard_home: it believes it is registered), or ignores it (its node
 * is downed). */
enum coordinator_unknown_region { CM_ACCEPT, CM_IGNORE };
enum coordinator_unknown_region coordinator_members_unknown_region(const struct coordinator_members *cm,
								   const char *node);

#endif
