/*
 * region.h — the shard region of one entity type on this node, registered
 * under the type's name.
 *
 * It accepts, from any BEAM process:
 *   gen_server:call({Type, Node}, {EntityId, Msg})   -> the entity's reply
 *   {Type, Node} ! {EntityId, Msg}                   -> reply sent to the sender
 *                                                       as {Type, EntityId, Reply}
 *   gen_server:call({Type, Node}, get_shard_region_state | get_cluster_sharding_stats
 *                                 | get_region_stats | graceful_shutdown)
 * and the shard_msg.h messages of its coordinator and peer regions.
 *
 * Routing: EntityId is made canonical (entity_id.h), its shard is
 * erlang:phash2(EntityId, NumberOfShards); a local shard gets the message at
 * once; for a shard whose home is unknown the message is buffered (up to
 * buffer_size in all, per shard in arrival order) while the coordinator is
 * asked; a shard homed elsewhere gets it forwarded. A message that finds its
 * shard's buffer non-empty is buffered behind it, so per-sender order holds.
 *
 * With remembered entities, a shard that comes to this region starts the
 * entities remembered for it at once (remember_share.h keeps every
 * member's copy of the sets up to date), and after a restart the region asks
 * for the homes of the shards that have remembered entities.
 *
 * One region is implemented by region.c and the region_*.c files it names
 * in region_internal.h; a shard's states in it are region_slot.h's.
 */
#ifndef SN_REGION_H
#define SN_REGION_H

#include <stdbool.h>
#include <stdint.h>

#include "etf/drop_log.h"
#include "base/histogram.h"

#include <ei.h>

#include "distribution/dist_node.h"
#include "entity/entity.h"
#include "base/evloop.h"
#include "base/log.h"
#include "hosting/host_entities.h"
#include "sharding/members_hosting.h"

struct region;
struct state_store;


struct region_config {
	struct dist_node *node;          /* not owned */
	/* Where the region's messages leave (protocol/outlet.h); every part
	 * of the region sends through it. ops NULL: the node's own,
	 * dist_node_outlet(node). */
	struct outlet out;
	struct evloop *loop;             /* not owned */
	const struct logger *log;        /* not owned */
	const struct entity_type *type;  /* not owned; static or plugin lifetime */
	/* The type's entities run as processes on a host (the type is a
	 * hosted_entity.h type); NULL: in this node, as C code. Not owned;
	 * outlives the region. */
	const struct region_host *host;
	uint32_t number_of_shards;
	uint32_t buffer_size;
	uint32_t retry_interval_ms;
	uint32_t passivate_idle_after_ms;      /* 0: never */
	/* Live entities at most, the least recently used passivated beyond
	 * (shard.h's shard_limit); 0: no limit. Not with remember (Akka
	 * turns passivation off for remembered entities too). With a host:
	 * by recency alone, and never an entity with a message at its
	 * process. */
	uint32_t max_active_entities;
	/* With a store: the one passivated for it is the least often asked
	 * of the 8 least recently used, and a newcomer asked no more often
	 * than that one goes itself after its message (false, or without a
	 * store: the least recently used). */
	bool limit_by_frequency;
	uint32_t handoff_timeout_ms;     /* a handoff gives up waiting after this */
	bool proxy_only;                 /* route, never host a shard */
	/* The registered name; NULL: the type's. Copied. */
	const char *name;
	/* A cluster singleton's region, registered under the singleton's name
	 * (docs/contract.md "Cluster singletons"): every message is for its one
	 * entity, whose id is that name as an atom — a call's request and a
	 * tell are the message itself, and a tell's reply goes to the sender
	 * as {Name, Reply}; no request is the region's own. The entity starts
	 * as soon as the shard comes here. Needs number_of_shards 1 and a
	 * pinned coordinator (coordinator.h). */
	bool singleton;
	/* The members hosting the type (members_hosting.h), for
	 * get_cluster_sharding_stats, graceful shutdown and remembered
	 * entities. NULL: this node only. */
	members_hosting_fn *members_hosting;
	void *members_arg;
	/* False while this node must not run entities (no quorum lease, see
	 * membership.h): their messages wait in the shard's buffer until
	 * region_resume. NULL: always true. */
	bool (*may_deliver)(void *arg);
	void *may_deliver_arg;
	/* Remembered entities (remember.h), or NULL when remember_entities is
	 * off. Not owned; outlives the region. Needs members_hosting. */
	struct remember *remember;
	const char *coordinator_name;    /* the coordinators' registered name; copied */
	/* The node's durable store (store/state_store.h), or NULL: states live in
	 * memory only. Not owned; outlives the region. */
	struct state_store *store;
	/* The state_store setting as given ("memory", "lmdb", "postgres"),
	 * shown by sys:get_state; NULL: "memory". Static text. */
	const char *store_name;
	uint32_t store_timeout_ms;       /* a held reply gives up after this */
	/* state_replicas (docs/contract.md, "Replicated state"): copies of
	 * each shard's records kept on other members besides its home, named
	 * by the coordinator. Used only with a store of this node's own
	 * (lmdb); 0: none. */
	uint32_t state_replicas;
	/* Time each reply for the metrics endpoint (region_get_metrics): two
	 * clock reads per message. Off: the latency histogram stays empty. */
	bool metrics;
	/* The test setting instance_reports_to (region_instances.h): the node
	 * whose `shardnode_instances` hears of every entity incarnation here;
	 * NULL or empty: none. Not copied: it outlives the region. */
	const char *instance_reports_to;
	/* Called once the region has handed off its shards and unregistered
	 * after graceful_shutdown; the owner frees it later with region_free. */
	void (*on_stopped)(void *arg, struct region *r);
	void *on_stopped_arg;
};

/* Registers the region under its name and sends `register` to the
 * coordinator. Returns it, or NULL with *err (-EEXIST, -ENOMEM, or -EINVAL:
 * `remember` without `members_hosting`, a name ei cannot encode, or a
 * singleton with more than one shard). */
struct region *region_start(const struct region_config *cfg, int *err);

/* Where the active coordinator runs (the oldest member hosting the type), or
 * NULL while there is none, and the protocol that member speaks
 * (member_protocol.h: from 2 on, the report states each claim's epoch). A
 * change of node makes the region register there, with a report of the
 * shards it hosts. */
void region_set_coordinator_node(struct region *r, const char *node, uint32_t protocol);

/* The members that were downed (membership_downed). A downed node may keep
 * its connection open, so this is how the region stops sending there: a
 * shard homed on one is unknown again, and a home on one that a
 * coordinator still names (until the downed node's lease has run out) is
 * not taken; the request is retried and the messages wait. `nodes` is
 * copied. Returns 0, or -ENOMEM or -ENAMETOOLONG (the old list stays). */
int region_set_downed(struct region *r, const char *const *nodes, size_t n);

/* After a membership change: with remembered entities, members that joined
 * are sent the sets of the shards this region hosts. */
void region_members_changed(struct region *r);

/* Delivers what waited for may_deliver, if it is true now. */
void region_resume(struct region *r);

/* Stops every local entity, tells the coordinator, unregisters the name
 * (monitors get `normal`). Idempotent. */
void region_shutdown(struct region *r);

/* True once the region has stopped (graceful_shutdown or region_shutdown). */
bool region_stopped(const struct region *r);

/* region_shutdown if needed, then frees. */
void region_free(struct region *r);

/* Before the loop's turn writes its output (dist_node_set_flushing): what
 * the region batched over the turn goes out — the replicated writes to
 * each replica region, one message each. NULL is ignored. */
void region_flush_batches(struct region *r);

/* True while a coordinator has acknowledged the region's registration
 * (the readiness check, docs/contract.md "Health"). */
bool region_registered(const struct region *r);

/* Counters, for tests and benchmarks. */
struct region_stats {
	uint64_t entities;   /* live */
	uint32_t shards;     /* hosted here */
	uint32_t buffered;   /* waiting for a shard home */
	uint64_t delivered;  /* messages handled by local entities */
	uint64_t dropped;    /* tells dropped: full buffer */
	uint64_t forwarded;  /* messages sent on to another region */
};
void region_get_stats(const struct region *r, struct region_stats *out);

/* What the metrics endpoint shows of a region (docs/metrics.md). */
struct region_metrics {
	struct region_stats stats;
	uint64_t asks, tells;            /* messages handled by local entities, by kind */
	struct histogram reply_latency;  /* with cfg.metrics */
	struct histogram whole_latency;  /* with cfg.metrics: from the arrival at the first member */
	uint64_t handoffs;               /* shards handed off from here */
	uint64_t limit_passivations;     /* entities passivated for max_active_entities */
	uint64_t loads;                  /* states asked of the store (an entity not live) */
	struct drop_log drops;           /* stats.dropped by reason */
	struct histogram handoff_duration;
	/* A type written in Erlang or Elixir: how long its entities'
	 * processes took, from the message's sending to the completion's
	 * arrival (with cfg.metrics). */
	bool hosted;
	struct histogram process_latency;
};
void region_get_metrics(const struct region *r, struct region_metrics *out);

/* With cfg.metrics: the replies of this loop turn have been flushed to
 * their connections (dist_node_set_flushed): times them, with one clock
 * read. Until then they are counted in runs of one start time. */
void region_time_replies(struct region *r);

#endif
