/*
 * membership_internal.h — what the four files of membership share. Not
 * for other modules: they use membership.h. Calls run one way:
 *
 *   membership.c          joins, gossip merged, downs and leaves
 *     -> membership_health.c   failure detection, downing decisions, lease
 *     -> membership_view.c     the list's answers (read only)
 *     -> membership_list.c     the list's look-up, the messages built from it
 *
 * membership_health.c decides and membership.c applies (a down is always
 * made by membership.c); neither lower file calls a file above it.
 */
#ifndef SN_MEMBERSHIP_INTERNAL_H
#define SN_MEMBERSHIP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ei.h>

#include "cluster/downing.h"
#include "cluster/membership.h"
#include "cluster/reachability.h"
#include "cluster/watch_ring.h"
#include "protocol/node_set.h"

/* Messages naming another sender than their connection's peer: the first
 * few are logged. */
#define IMPOSTORS_LOGGED 5

struct membership {
	uint32_t impostors; /* messages so ignored (membership_handle) */
	struct membership_config cfg;
	char our_node[NODE_NAME_BUF];
	struct member *members;
	size_t n, cap;
	/* Each entry's index + 1, at the FNV-1a of its name (open addressing;
	 * index_cap a power of two, at least twice n), for membership_find;
	 * NULL when memory ran out (look-ups then compare every name). A
	 * grantor among 256 members compared a name with every entry for each
	 * of its 1 000 heartbeats and acks a second. */
	uint32_t *index;
	size_t index_cap;
	/* The watch ring of the last plan (membership_watch.c) and the voters
	 * it was built on (indexes into members, which only grow: the same
	 * indexes are the same names). Built again only when they differ: a
	 * ring of 256 names hashed and sorted each tick was a share of an
	 * idle member's time. ring_voters NULL: none built. */
	struct watch_ring ring;
	size_t *ring_voters;
	size_t ring_nvoters;
	struct evloop_timer gossip_timer;
	/* Armed while a gossip to every member is due shortly (membership.c,
	 * gossip_all_soon): the joins of many nodes started at once go out as
	 * a few lists, not one list to everyone per join. */
	struct evloop_timer gossip_soon_timer;
	uint64_t tick_digest;   /* the list's digest at the last tick (gossip_tick) */
	uint64_t tick_reach_digest; /* the reachability table's, at the last tick (heartbeat_all) */
	uint64_t started_ms;    /* when membership started: the first seed's wait counts from it */
	/* Another member has listed this incarnation of ours joining (we saw
	 * it in gossip). Until then, with an up-number remembered from an
	 * earlier incarnation (cfg.last_up_number), entries that list us as a
	 * member at or below it are that incarnation's, and we send nothing
	 * but joins (membership_quiet): a member of a release that cannot see
	 * a new creation then finds the old incarnation silent, and lists us
	 * anew when our join comes. */
	bool listed;
	uint64_t stable_since;  /* last change of members or reachability */
	uint64_t quorum_until;  /* quorum_until() of the leases we hold */
	bool lease_holds;       /* may deliver, as of the last refresh */
	bool loss_logged;       /* a lost lease is logged by the timer only: a
				 * member that just joined has not acked yet */
	bool ever_held;         /* a lease held since the start: a lease not yet
				 * had is no loss to warn of */
	bool loss_seen;         /* the last timer's refresh found no lease: a
				 * loss is said when the next one finds none
				 * either (members that just joined ack within
				 * a heartbeat) */
	uint32_t top_up_number; /* the highest up-number seen (membership_rules_next_up_number) */
	/* The tick's watching plan (membership_watch.c): each member watched
	 * by cfg.watchers others on a ring, our lease from the acks of a few
	 * grantors; false: every member watches every other and our lease is
	 * a majority's acks, as in a small cluster. */
	bool sparse;
	bool grants;            /* sparse, and we are a grantor: we tell every member */
	/* When granting: the first of the members this tick's heartbeats
	 * probe (membership_heartbeats); cfg.watchers more each tick. */
	size_t probe_at;
	/* Who cannot hear whom, cluster-wide (reachability.h): our own record
	 * is our failure detector's `unreachable` flags, the others come by
	 * `reachability` messages. The leader downs on it (downing.h). */
	struct reachability reach;
	/* When the reachability history's counts were last halved (evloop
	 * ms): they fade with a half-life of REACH_NAMED_HALF_LIFE_MS. */
	uint64_t named_halved_at;
};

/* The loop's clock, read once per turn. */
static inline uint64_t now_ms(const struct membership *m) { return evloop_now_ms(m->cfg.loop); }

/* e: an entry of m's list. A flag, not a name compare: every loop over
 * the members asks it of each. */
static inline bool is_us(const struct membership *m, const struct member *e)
{
	(void)m;
	return e->self;
}

/* Members that vote in keep-majority and give quorum leases. */
static inline bool votes(const struct member *e) { return membership_rules_votes(e->status); }

/* Whether our failure detector judges e now: a member we watch, admitted,
 * not down, not already found unreachable (membership_health.c's
 * detection, membership_probe.c's suspects). */
static inline bool membership_judges(const struct membership *m, const struct member *e)
{
	return !is_us(m, e) && e->watched && !e->unreachable && e->status < MEMBER_DOWN && e->status != MEMBER_JOINING;
}

/* ---- membership_list.c ---- */

/* The text of each member_status, as gossip and `members` write it. */
extern const char *const membership_status_names[];

/* The entry of `node`, or NULL. Valid until the list grows. */
struct member *membership_member(struct membership *m, const char *node);

/* The same, read only (membership_view.c). */
const struct member *membership_find(const struct membership *m, const char *node);

/* Indexes m->members[m->n - 1], just added, for membership_find, growing
 * the index as it must. Out of memory, the index is dropped (and built
 * again at the next entry added); look-ups scan meanwhile. */
void membership_index_added(struct membership *m);

/* The member as membership_rules.h sees it (pointing into e). */
struct member_facts membership_facts_of(const struct member *e);

/* Starts a fresh x with the version byte and {'$shardnode', Kind, Self, _
 * (the caller encodes the fourth element). Returns 0, or -ENOMEM with
 * nothing to free. */
int membership_begin_msg(const struct membership *m, ei_x_buff *x, const char *kind);

/* Whether this node, started again, waits to be listed joining before it
 * says anything but joins (see `listed`). */
static inline bool membership_quiet(const struct membership *m)
{
	/* members[0] is this node: added first, and no entry is ever taken
	 * out of the list. */
	return m->cfg.last_up_number != 0 && !m->listed && m->members[0].status == MEMBER_JOINING;
}

/* Indirect probes (membership_probe.c). Each tick: asks a few members
 * about every member we watch that has been silent to us for half of
 * failure_timeout_ms. */
void membership_probe_suspects(struct membership *m);

/* Handles probe from t[i..]: From, Target: answers From how long we have
 * not heard Target, or nothing if we do not hear it. */
void membership_on_probe(struct membership *m, const char *t, size_t i);

/* Handles probe_answer from t[i..]: From, {Target, SilentMs}: notes when
 * From last heard Target (member.others_heard_at). */
void membership_on_probe_answer(struct membership *m, const char *t, size_t i);

/* Whether e, silent to us for failure_timeout_ms, is heard by others
 * recently enough to be alive (its link to us slow, not it dead), and not
 * yet silent to us for twice failure_timeout_ms: its unreachability waits.
 * Only reads. */
bool membership_heard_through_others(const struct membership *m, const struct member *e);

/* Sends an encoded message (with version byte) to the admin of `to`;
 * nothing while membership_quiet. */
void membership_send_admin(struct membership *m, const char *to, const ei_x_buff *x);

/* The same for a join, which goes even while membership_quiet. */
void membership_send_join(struct membership *m, const char *to, const ei_x_buff *x);

/* Encodes a member's [Type]. Returns 0 or -ENOMEM. */
int membership_encode_types(ei_x_buff *x, const struct member *e);

/* Appends our member list, [Entry] as gossip carries it, to x. Returns 0
 * or -ENOMEM. */
int membership_encode_list(const struct membership *m, ei_x_buff *x);

/* Sends our member list to `to`. */
void membership_gossip_to(struct membership *m, const char *to);

/* The digest of the member list as gossip carries it (0: memory ran out,
 * which no list's digest is but by chance, so a peer takes it for a
 * different list): equal on two members whose gossip to each other would
 * change nothing, whatever the order of their entries. */
uint64_t membership_digest(struct membership *m);

/* The tick's gossip: the list's digest kept as tick_digest, which the
 * tick's heartbeat carries to a member of protocol 2 or later (it answers
 * with its whole list when its own differs), and the whole list to every
 * member of v0.1.0 that is neither down nor unreachable. */
void membership_gossip_tick(struct membership *m);

/* ---- membership_watch.c ---- */

/* The tick's plan of who watches whom (watch_ring.h), kept in m->sparse,
 * m->grants and each member's `watched` and `grantor`:
 *  - every member speaks MEMBER_PROTOCOL_WATCH_RING or later and more than
 *    cfg.watchers + 1 members vote: sparse. We watch the cfg.watchers
 *    voting members after us on the ring, and further ones for each of
 *    them we find unreachable (so a silent stretch of the ring is watched
 *    from its edge), and any whose connection to us went down until we
 *    hear from it again (a cut link between members that do not watch
 *    each other). The cfg.watchers oldest voting members grant leases
 *    (a few, so their cost is bounded; more than one, so a crash of one
 *    costs no lease): every member heartbeats them, and they hold a
 *    majority's lease from those heartbeats' echoes of their acks
 *    (membership_heartbeats); every other member's lease is what the acks
 *    of the members it heartbeats pass on.
 *  - else every member watches every other, as before there were rings.
 * A member that leaves our watch while unreachable is no longer reported
 * (no member of ours hears about it any more); one that enters it is
 * given two heartbeat intervals to answer before its silence counts.
 * Returns true if a member's reachability changed (the caller publishes
 * our record). Out of memory, the last plan stays. */
bool membership_plan_watching(struct membership *m);

/* Frees the ring kept between plans; the next plan builds one. */
void membership_forget_ring(struct membership *m);

/* What is left of our own lease to pass on in an ack, in ms: 0 when we do
 * not vote or hold none, at most failure_timeout_ms. */
uint64_t membership_lease_left_ms(const struct membership *m);

/* Whether a change of ours (a list entry, our reachability record, a
 * greeting of a member new to us) goes to e at once: to everyone unless
 * sparse; then to those we watch and to the grantors, and from a grantor
 * to everyone (membership_plan_watching). Every member heartbeats the
 * grantors, and a heartbeat whose digest differs is answered with the
 * whole list or table, so the others learn of a change within a tick or
 * two over the connections they have. Telling every
 * member at once connected each to every other at the first change: a
 * crash among 256 members made tens of thousands of connections at once,
 * which starved the heartbeats until most members lost their leases. A
 * joiner hears of its admission from the leader, a grantor. */
bool membership_tells_directly(const struct membership *m, const struct member *e);

/* Whether the tick's heartbeat goes to e (not us, not down): to every
 * member unless sparse; then to those we watch and to the grantors, and
 * from a grantor also to cfg.watchers more each tick in turn (probes).
 * A grantor's majority lease comes from the heartbeats every member sends
 * it, each echoing the clock of the grantor's last ack to it; its probes
 * make each member compare the grantor's digests now and then, so a
 * change the grantor missed comes back to it. A grantor that heartbeat
 * every member cost itself a thousand messages a second among 256, and
 * every member ten. Unreachable ones too: that is how we notice they are
 * back. */
bool membership_heartbeats(const struct membership *m, const struct member *e);

/* Moves the grantor's probes on to the next cfg.watchers members. */
void membership_next_probes(struct membership *m);

/* Marks in `to` (m->n entries) the members our lease_lapsed reports go
 * to: those that act on them. When sparse, the grantors (the oldest, where
 * the coordinators run) and the oldest member hosting each type (where
 * that type's coordinator runs, if not among them); every other member
 * releases a downed member's shards when release_after has passed, as
 * without the reports. Else every member. */
void membership_lease_report_targets(const struct membership *m, bool *to);

/* The watchers count downing.h is to assume: cfg.watchers when sparse,
 * else one that makes every member watch every other. */
size_t membership_watchers(const struct membership *m);

/* ---- membership_health.c ---- */

/* Sends a heartbeat at once to each member marked to_greet (new to us in
 * the gossip just merged; called when some is) that we tell directly, so
 * its quorum lease comes soon, and clears the marks. Planned first on the
 * list just merged: a node that had known itself alone and learned 255
 * members in one gossip was not sparse yet, and greeted every one of them
 * (a connection to each, from each). */
void membership_greet_new_members(struct membership *m);

/* After any change of the member list or of a member's reachability:
 * restarts the stability clock, refreshes the lease, tells the owner. */
void membership_changed(struct membership *m);

/* {'$shardnode', Kind, Self, SentAt} to the admin of `to`; Kind is
 * heartbeat or heartbeat_ack. */
void membership_send_heartbeat(struct membership *m, const char *to, const char *kind, uint64_t sent_at);

/* The tick's heartbeat to every member but us that is not down: to a
 * member of protocol 2 or later with the digests of our member list
 * (tick_digest) and of our reachability table (kept as tick_reach_digest),
 * {SentAt, ListDigest, ReachDigest}; to a member of v0.1.0, SentAt. */
void membership_heartbeat_all(struct membership *m);

/* A member spoke to us directly: it is reachable. */
void membership_heard(struct membership *m, struct member *e);

/* Handles heartbeat (ack = false) or heartbeat_ack from t[i..]: From,
 * SentAt, or for a heartbeat From, {SentAt, ListDigest, ReachDigest}: a
 * digest that differs from ours (or 0) is answered with our whole list or
 * table. Malformed input is ignored. */
void membership_on_heartbeat(struct membership *m, const char *t, size_t i, bool ack);

/* Tells the members that act on it (membership_lease_report_targets: every
 * member that is not down, or when sparse the grantors and the types'
 * coordinators) that the leases we gave the members we know are down have
 * run out (lease_lapsed, membership.h), for each such member for a while
 * after we learned of its down (twice the longest wait: by then every
 * member has released its shards). Sent on each tick
 * and when we learn of a down, so a crash's fail-over waits no tick. */
void membership_tell_lapsed_leases(struct membership *m);

/* Handles lease_lapsed from t[i..]: From, {Node, UpNumber}: From acks
 * that incarnation of Node no more and the lease it gave it has run out.
 * May release Node's shards (membership.h). Malformed input is ignored. */
void membership_on_lease_lapsed(struct membership *m, const char *t, size_t i);

/* Recomputes until when we hold a quorum lease. Returns true if we just
 * got it back (withheld messages can go). Logs a loss only if `log_loss`. */
bool membership_refresh_lease(struct membership *m, bool log_loss);

/* Once per heartbeat interval: finds unreachable members, sends our
 * reachability table to every member when our record changed (else to
 * members of v0.1.0 only: the others compare digests), releases the
 * shards of members downed long enough ago, and decides on downing (downing.h), which the
 * caller applies: DOWNING_SELF, this node first; then every member added
 * to `downs` (an initialised set the caller frees). Logs each decision. */
enum downing_verdict membership_health_tick(struct membership *m, struct node_set *downs);

/* Merges a member's reachability table from t[i..]: From, [Record]. A
 * change restarts the stability clock. Malformed input is ignored. */
void membership_on_reachability(struct membership *m, const char *t, size_t i);

#endif
