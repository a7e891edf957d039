/*
 * cluster_glue.h — the cluster's view applied to the sharding parts of this
 * node, and the graceful leave that waits on them.
 *
 * cluster/ and sharding/ never include each other: membership reports a
 * change through a callback, and regions ask about members through theirs.
 * This is where the two meet, and where the policy lives:
 *
 *   - after every membership change, a type's coordinator is active only on
 *     the oldest up member hosting the type; it learns the downed members
 *     first (a handoff must not wait for their acks), then the members
 *     owning shards and the joining ones, then those leaving, whose shards
 *     it drains; every region hears the downed members and where the
 *     coordinator runs, sends joined members its remembered entities, and
 *     delivers what waited for a quorum lease;
 *   - a node the cluster marked down stops;
 *   - a graceful leave (docs/contract.md: SIGTERM, SIGINT, `leave`) marks
 *     the node leaving, waits until it hosts no shard (or nobody is left to
 *     take them, or handoff_timeout_ms has passed), marks it exiting and
 *     stops the loop;
 *   - a region stopped by graceful_shutdown is no longer a type this node
 *     says it hosts;
 *   - data_dir/members (members_file.h) holds the members after every
 *     change that changes what it holds.
 *
 * The glue owns none of the parts: node_app.h starts and stops them.
 */
#ifndef SN_CLUSTER_GLUE_H
#define SN_CLUSTER_GLUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/evloop.h"
#include "base/poll_until.h"
#include "base/log.h"
#include "entity/entity.h"

struct coordinator;
struct membership;
struct region;
struct remember;

/* The parts of one entity type this node hosts, or of one cluster
 * singleton (an entity of the type, one in the cluster: its coordinator is
 * pinned to the oldest member hosting the type, coordinator.h). */
struct hosted_type {
	const struct entity_type *type;  /* static or plugin lifetime */
	const char *name;                /* the regions' registered name: the type's, or the singleton's */
	bool singleton;
	struct coordinator *coordinator; /* NULL on a proxy-only node */
	struct region *region;
	struct remember *remember;       /* NULL: remember_entities is off */
	struct logger log;               /* the node's, with type= the name: its parts log through it */
};

struct cluster_glue_config {
	struct evloop *loop;         /* not owned; outlives the glue */
	const struct logger *log;    /* not owned; outlives the glue */
	const char *our_node;            /* this node's name; not owned; outlives the glue */
	bool proxy_only;             /* the node hosts nothing and coordinates nothing */
	uint32_t handoff_timeout_ms; /* how long a leave waits for its shards to go */
	const char *data_dir;        /* where `members` is kept; not owned; outlives the glue */
};

/* Held by its owner; the fields are the glue's own. */
struct cluster_glue {
	struct cluster_glue_config cfg;
	struct hosted_type *hosted;     /* not owned */
	size_t nhosted;
	struct membership *membership;  /* not owned; NULL: none (yet, or any more) */
	struct poll_until leave_poll;   /* a leave: until no shard is left here */
	bool leaving;
	const char *stop_reason;
	struct members_record *members_written; /* owned: the file as last written; NULL: not yet */
	bool members_failed;            /* a write failed: said once */
};

/* Readies g; until cluster_glue_set_hosted and cluster_glue_set_membership,
 * the callbacks below answer as a node alone: nobody hosts a type, entities
 * may run, a stopped region changes nothing. Cannot fail. */
void cluster_glue_init(struct cluster_glue *g, const struct cluster_glue_config *cfg);

/* The types this node hosts, once all have started: the first n of `hosted`
 * (not owned; stays valid until cluster_glue_set_hosted(g, NULL, 0) or the
 * glue is done with). */
void cluster_glue_set_hosted(struct cluster_glue *g, struct hosted_type *hosted, size_t n);

/* The membership the glue reads and tells (not owned), or NULL before it
 * is freed. Does not apply it: call cluster_glue_membership_changed. */
void cluster_glue_set_membership(struct cluster_glue *g, struct membership *m);

/* Disarms the leave timer and frees what the glue owns. After it the glue
 * does nothing more; safe on a glue that was zeroed and never
 * initialised. */
void cluster_glue_stop(struct cluster_glue *g);

/* membership_config.on_change, arg a struct cluster_glue: applies the
 * member list to every hosted type as described at the top; a node marked
 * down stops the loop. Without a membership set (one that is starting)
 * it does nothing: the owner calls it once the membership is set. */
void cluster_glue_membership_changed(void *glue);

/* region_config.members_hosting, arg a struct cluster_glue: the members
 * owning shards of `type` (membership_nodes_with), at most max into out;
 * returns how many (0 without a membership). */
size_t cluster_glue_members_hosting(void *glue, const char *type, const char **out, size_t max);

/* region_config.may_deliver, arg a struct cluster_glue: true while this
 * node holds a quorum lease, or has no membership. */
bool cluster_glue_may_deliver(void *glue);

/* region_config.on_stopped, arg a struct cluster_glue: the members are
 * told the types whose regions still run (never on a proxy-only node,
 * which says it hosts none). */
void cluster_glue_region_stopped(void *glue, struct region *r);

/* Starts the graceful leave; `why` (static) is the stop reason. A second
 * call does nothing. The wait is checked on the next loop turn (so a reply
 * already queued, to `leave`, goes out) and every 50 ms after. */
void cluster_glue_leave(struct cluster_glue *g, const char *why);

/* admin_config.request_leave, arg a struct cluster_glue: the admin
 * answered `leave`. */
void cluster_glue_request_leave(void *glue);

/* True once a leave has started. */
bool cluster_glue_leaving(const struct cluster_glue *g);

/* Why the glue stopped the loop or started leaving (static text, the last
 * one given), or NULL. */
const char *cluster_glue_stop_reason(const struct cluster_glue *g);

#endif
