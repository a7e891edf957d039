/*
 * membership.h — who is in the cluster: a versioned member list, joined via
 * seed nodes and spread by gossip between the admin processes (`shardnode`)
 * of the members.
 *
 *   {'$shardnode', join, Node, Types}         joiner -> seed, until it is up
 *   {'$shardnode', gossip, From, [Member]}    member -> every other member,
 *       Member = {Node, UpNumber, Status, Version, [Type]}
 *
 * A seed that hears `join` lists the joiner as joining; the leader (the
 * oldest up or leaving member) marks it up, giving it the next up-number
 * (age: the lowest is the oldest), once a majority has answered heartbeats
 * sent since and the joiner itself was heard within failure_timeout_ms: a
 * member cut off from the majority admits nobody, or a side of a split
 * could grow itself a majority. A leaving member gossips `exiting` and is
 * removed by the others when its connection goes.
 *
 * Failure detection: every heartbeat_interval_ms each member sends
 *   {'$shardnode', heartbeat, From, SentAt}       member -> every other member
 *   {'$shardnode', heartbeat_ack, From, SentAt}   the answer, echoing SentAt
 * A member not heard from (heartbeat, ack or gossip) for failure_timeout_ms
 * is `unreachable`; hearing from it again makes it reachable. A lost
 * connection alone changes nothing: it may come back.
 *
 * Reachability is a cluster-wide view (reachability.h): every heartbeat
 * interval each member sends every other one its table of who cannot hear
 * whom,
 *   {'$shardnode', reachability, From, [{Observer, Version, [Subject]}]}
 * Downing: with keep_majority, once neither the member list nor that view
 * has changed for stable_after_ms, a member whose own view loses keep-
 * majority (quorum.h) downs itself, and the leader alone downs others
 * (downing.h): those it cannot hear, then the fewest members that explain
 * every other record. With manual downing only {down, Node} does it. A
 * node that learns it was downed stops.
 *
 * At most one instance of an entity: this node delivers to its entities
 * only while it holds a quorum lease (quorum.h), renewed by the acks of its
 * heartbeats, and a downed member keeps its shards (membership_nodes_with)
 * until no member's lease to it is left: once a member knows of the down
 * it acks the downed member no more, and once failure_timeout_ms have
 * passed since its last ack it tells every member
 *   {'$shardnode', lease_lapsed, From, {Node, UpNumber}}
 * (each heartbeat interval for a while). When every other member that is
 * not down has said so, and our own lease to it has lapsed too, its shards
 * go elsewhere at once (membership_rules_downed_lease_over): after a crash
 * the leases ran out long before the down, so fail-over takes detection
 * and stable_after_ms. If some member stays silent, the shards go
 * failure_timeout_ms plus two heartbeat intervals after this node learned
 * of the down, by which time the lease of every member that learned of it
 * by then has run out.
 *
 * Merging gossip, joins, the leader and admission are decided by the pure
 * functions of membership_rules.h (which says how incarnations, up-numbers
 * and versions rank); this module carries the decisions out.
 */
#ifndef SN_MEMBERSHIP_H
#define SN_MEMBERSHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "distribution/dist_node.h"
#include "protocol/node_name.h"
#include "base/evloop.h"
#include "base/node_limits.h"
#include "base/log.h"
#include "cluster/membership_rules.h" /* enum member_status */

struct member {
	char node[NODE_NAME_BUF];
	uint32_t up_number; /* 0 while joining */
	enum member_status status;
	uint32_t version;
	char types[NODE_TYPES_MAX][TYPE_NAME_BUF];
	size_t ntypes;
	uint32_t protocol;     /* the protocol it speaks (member_protocol.h) */
	/* Not gossiped: what this node has seen of the member. */
	bool self;             /* this node's own entry */
	/* The entry's part of the list's digest (term_digest.h), and a hash
	 * of every field its encoding reads when it was computed: the part
	 * is computed again only when that hash differs (membership_list.c).
	 * Each tick's digest encoded every entry: most of an idle member's
	 * user time among 256. */
	uint64_t digest_part;
	uint64_t digest_part_of;
	/* When our list last went to it in answer to a list of its that
	 * lacked something (on_gossip; evloop ms, 0: never). */
	uint64_t answered_gossip_at;
	bool unreachable;      /* silent for failure_timeout_ms */
	/* The latest time (evloop ms) a member we asked about it had heard
	 * it (membership_probe.c); 0: none said. */
	uint64_t others_heard_at;
	uint64_t last_heard;   /* evloop ms of its last heartbeat, ack or gossip */
	uint64_t lease_until;  /* the quorum lease it gives us (quorum.h) */
	uint64_t down_at;      /* when we learned it was down; 0: not downed */
	/* evloop ms we last gave it a lease: our last heartbeat_ack to it, or
	 * an ack of its that our next heartbeat echoes; 0: none. */
	uint64_t last_acked;
	/* The lease its acks pass on to us: the send time of the heartbeat
	 * plus what was left of its own lease then (membership_watch.c). */
	uint64_t granted_until;
	/* Its clock when it sent its latest heartbeat_ack to us (0: none),
	 * echoed in our next heartbeat to it: proof to it that we heard it
	 * then, which gives it a lease without heartbeating us itself. */
	uint64_t acked_us_at;
	bool watched;          /* our failure detector watches it (membership_watch.c) */
	/* Its connection went down while it was up, and we have not heard
	 * from it since: watched whatever the ring says, so a cut link
	 * between two members that do not watch each other is reported once
	 * the distribution notices it (net_ticktime at most). */
	bool connection_lost;
	bool grantor;          /* one of the members whose acks give us our lease */
	/* New to us in the gossip being merged: greeted, if we tell it
	 * directly, once the whole list is merged and the watching planned
	 * again (membership.c, on_gossip). */
	bool to_greet;
	/* Bit k: members[k] said the lease it gave this incarnation lapsed
	 * (lease_lapsed); members beyond CLUSTER_MEMBERS_MAX are never heard. */
	uint64_t lapsed_from[CLUSTER_MEMBERS_MAX / 64];
	uint64_t joining_since; /* when we learned it was joining */
	bool released;         /* downed, and its shards may go elsewhere now */
	/* The creation of the incarnation we heard from directly (the
	 * creation of its admin's pid); 0: none heard yet. Another creation
	 * is a new incarnation: the old one is gone (membership_handle). */
	uint32_t creation;
};

struct membership;

struct membership_config {
	struct dist_node *node;
	erlang_pid from;          /* sender of our gossip: the admin's pid */
	struct evloop *loop;
	const struct logger *log;
	/* Nodes to join through; may name this node (every member can be given
	 * the same list). None, and nothing remembered: a new cluster. */
	const char *const *seeds;
	size_t nseeds;
	/* The other members this node knew when it last ran
	 * (members_file.h), asked to let it join as the seeds are. */
	const char *const *remembered;
	size_t nremembered;
	/* This node's up-number in the incarnation that wrote the members
	 * file (0: none): gossip that lists us at or below it speaks of that
	 * incarnation, not of us. */
	uint32_t last_up_number;
	/* This node may form a new cluster when no seed or remembered member
	 * answers as a member within seed_timeout_ms: it is the first of the
	 * seeds, or was started without any. With nobody to ask, it forms one
	 * at once. */
	bool may_form;
	uint32_t seed_timeout_ms;
	/* The seeds come later (membership_set_seeds): start joining even
	 * with none. */
	bool seeds_later;
	const char *const *types; /* entity types this node hosts */
	size_t ntypes;
	uint32_t heartbeat_interval_ms; /* heartbeats, and gossip at the same pace */
	uint32_t failure_timeout_ms;
	uint32_t stable_after_ms;
	/* How many members watch each member (watch_ring.h) once the cluster
	 * has more than watchers + 1 voting members; fewer: every member
	 * watches every other. At least 1. */
	uint32_t watchers;
	bool keep_majority;            /* false: manual downing */
	/* Called after any change of the member list. */
	void (*on_change)(void *arg);
	void *on_change_arg;
};

/* Starts this node's membership: the member list holds this node alone,
 * up (a node that may form a cluster and has nobody to ask: a cluster of
 * one) or joining (joins go to the seeds and the remembered members but
 * this node on the first gossip round, which runs at once and then every
 * heartbeat_interval_ms; a node that may form one forms it once nobody
 * answered as a member for seed_timeout_ms). cfg is copied; the pointers in it (loop, log,
 * node, seeds, types) must outlive the membership. Listens for nodedowns
 * on cfg->node. Returns the membership with *err = 0, or NULL with *err =
 * -ENOMEM (nothing to free). The constructor convention of the node: a
 * pointer, or NULL with a negative errno in *err. */
struct membership *membership_start(const struct membership_config *cfg, int *err);

/* Stops the timer and the nodedown listener and frees everything; sends
 * nothing (a leave is membership_leave's). NULL is a no-op. */
void membership_free(struct membership *m);

/* Handles a '$shardnode' join, gossip, reachability, heartbeat or
 * heartbeat_ack message that came from node `via` (proc_msg.via: the
 * connection's peer), sent by a process of creation `creation` (its pid's;
 * 0: unknown). Each names its sender first; one whose sender is not
 * `via` — anyone with the cookie speaking for another node — or is no
 * valid node name is ignored (and logged). A member we list (not down)
 * whose creation is not the one we heard from before was started again:
 * its old incarnation is gone (its name was free in epmd for the new one),
 * so it is listed joining at once, as a new incarnation, and its shards go
 * elsewhere without waiting for failure detection. Returns 1 if it was one
 * of these messages, 0 if not. */
int membership_handle(struct membership *m, const char *term, size_t len, const char *via, uint32_t creation);

/* Encodes {ok, [#{node := Node, status := Status}]}, oldest first.
 * Returns 0 or -ENOMEM (x then holds part of it: the caller answers an
 * error instead). */
int membership_encode_members(const struct membership *m, ei_x_buff *x);

/* The members by the status `members` reports (docs/contract.md), for the
 * metrics endpoint: counts[k] members show as names[k]; n statuses. */
#define MEMBERSHIP_STATUSES 6
struct membership_counts {
	const char *names[MEMBERSHIP_STATUSES]; /* static */
	uint32_t counts[MEMBERSHIP_STATUSES];
};
void membership_count_by_status(const struct membership *m, struct membership_counts *out);

/* Encodes {ok, [{Observer, [Subject]}]}: the cluster-wide view as this
 * node holds it, for the members that are not down, observers that
 * report nobody left out. */
int membership_encode_reachability(const struct membership *m, ei_x_buff *x); /* as above */

/* Members hosting `type` that own shards: up or leaving (until their shards
 * are handed off), or downed too recently for their lease to have run out
 * (see above). At most max of them, into out (pointers valid until
 * the member list changes). Returns how many. */
size_t membership_nodes_with(const struct membership *m, const char *type, const char **out, size_t max);

/* Members hosting `type` that are joining: their regions may register (and
 * must stay registered) before they are up, though they get no shards yet.
 * At most max of them, into out (pointers valid until the member list
 * changes). Returns how many. */
size_t membership_joining_with(const struct membership *m, const char *type, const char **out, size_t max);

/* Members that were downed (down, or removed after a down), at most max of
 * them, into out (pointers valid until the member list changes). Returns
 * how many. */
size_t membership_downed(const struct membership *m, const char **out, size_t max);

/* Members hosting `type` that are leaving: their shards are to be moved off. */
size_t membership_leaving_with(const struct membership *m, const char *type, const char **out, size_t max);

/* Encodes #{Node => Protocol} for every member not removed (sys:get_state
 * of the admin). Returns 0 or -ENOMEM. */
int membership_encode_protocols(const struct membership *m, ei_x_buff *x);

/* The protocol `node` speaks (member_protocol.h): as it stated it, the
 * oldest for a member that stated none, and this build's for ourselves;
 * MEMBER_PROTOCOL_OLDEST for a node we do not list. */
uint32_t membership_protocol_of(const struct membership *m, const char *node);

/* The lowest protocol among the members hosting `type` that are not
 * down or removed (joining ones too: they are about to take part), this
 * node included if it hosts it: a feature all of them must know is used
 * only at or above it. MEMBER_PROTOCOL when no member hosts it. */
uint32_t membership_lowest_protocol(const struct membership *m, const char *type);

/* The oldest up member hosting `type`, or NULL. */
const char *membership_oldest_with(const struct membership *m, const char *type);


/* Graceful leave, first step: marks this node leaving and gossips it; the
 * coordinators move its shards off. */
void membership_leave(struct membership *m);

/* Graceful leave, last step: marks this node exiting and gossips it; the
 * others remove it when its connection closes. */
void membership_exit(struct membership *m);

/* Other members that are up (for a leaving node: is anyone there to take
 * its shards? A member that is leaving too cannot, so the last members,
 * stopped at once, do not wait handoff_timeout_ms for each other). */
size_t membership_others(const struct membership *m);

/* Marks `node` down and gossips it. Returns 0, or -ENOENT (not a member). */
int membership_down(struct membership *m, const char *node);

/* Replaces the entity types this node says it hosts (a region stopped by
 * graceful_shutdown is no longer one) and gossips the change. At most
 * NODE_TYPES_MAX are kept; the configuration allows no more. */
void membership_set_types(struct membership *m, const char *const *types, size_t n);

/* This node's status as `members` shows it ("joining", "up", "leaving",
 * ...; static text). */
const char *membership_self_status(const struct membership *m);

/* Replaces the seeds joins are sent to (the pointers are kept: they must
 * stay valid until the next call or membership_free). While this node is
 * joining, each new seed gets a join at once. */
void membership_set_seeds(struct membership *m, const char *const *seeds, size_t n);

/* Whether some other member is up, leaving or exiting in our list: a
 * cluster answered us. */
bool membership_knows_a_cluster(const struct membership *m);

/* Forms a new cluster of this node alone, as a node started without seeds
 * does: only while it is joining and knows no cluster
 * (membership_knows_a_cluster). The caller decides that no cluster can be
 * there (dns_seeds.h: the lowest of the seeds, after a wait). Returns
 * true if it did. */
bool membership_form_cluster(struct membership *m);

struct members_record;

/* What data_dir/members is to hold now (members_file.h): this node, its
 * up-number, every other member that is neither down nor removed, and the
 * members remembered at start that have not been heard of since. Fills
 * only out->n names (the caller compares what it fills). Cannot fail. */
void membership_remembered(const struct membership *m, struct members_record *out);

/* True once this node has been downed by the others. */
bool membership_self_down(const struct membership *m);

/* True while this node may deliver to its entities: it holds a quorum lease
 * (see the top of this file). Reads the clock, so a node that was paused
 * does not trust an old reading. Cheap: one clock read at most. */
bool membership_may_deliver(const struct membership *m);

/* When the quorum lease runs out, on evloop_clock_ms's clock (the time
 * membership_may_deliver turns false unless renewed); UINT64_MAX when no
 * lease limits this node. For the host of its Erlang entities, which may
 * run them no longer. */
uint64_t membership_lease_until(const struct membership *m);

#endif
