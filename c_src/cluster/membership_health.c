/* membership_health.c — failure detection, keep-majority downing and the
 * quorum lease of membership.h, on the member list of membership.c. It
 * decides downs and membership.c applies them: nothing here calls into
 * membership.c. */
#include <stdlib.h>
#include <string.h>

#include "base/evloop.h"
#include "cluster/downing.h"
#include "cluster/member_protocol.h"
#include "cluster/membership_internal.h"
#include "cluster/quorum.h"
#include "protocol/node_set.h"
#include "protocol/node_name.h"
#include "etf/term.h"
#include "etf/term_encode.h"

void membership_send_heartbeat(struct membership *m, const char *to, const char *kind, uint64_t sent_at)
{
	ei_x_buff x;
	if (membership_begin_msg(m, &x, kind) != 0)
		return;
	if (term_x_encode_uint(&x, sent_at) == 0)
		membership_send_admin(m, to, &x);
	ei_x_free(&x);
}

/* {'$shardnode', heartbeat, Self, {SentAt, ListDigest, ReachDigest,
 * AckedAt}} to `to`, a member of protocol 2 or later: AckedAt echoes the
 * clock of its latest ack to us (0: none). Returns 0 or -ENOMEM. */
static int send_heartbeat_with_digests(struct membership *m, const struct member *to, uint64_t sent_at)
{
	ei_x_buff x;
	if (membership_begin_msg(m, &x, "heartbeat") != 0)
		return -ENOMEM;
	int rc = ei_x_encode_tuple_header(&x, 4) < 0 || term_x_encode_uint(&x, sent_at) < 0 ||
			 term_x_encode_uint(&x, m->tick_digest) < 0 || term_x_encode_uint(&x, m->tick_reach_digest) < 0 ||
			 term_x_encode_uint(&x, to->acked_us_at) < 0
		 ? -ENOMEM
		 : 0;
	if (rc == 0)
		membership_send_admin(m, to->node, &x);
	ei_x_free(&x);
	return rc;
}

/* See membership_internal.h. */
void membership_greet_new_members(struct membership *m)
{
	membership_plan_watching(m); /* what it changes, the next tick publishes */
	for (size_t k = 0; k < m->n; k++) {
		struct member *e = &m->members[k];
		if (e->to_greet && membership_tells_directly(m, e))
			membership_send_heartbeat(m, e->node, "heartbeat", now_ms(m));
		e->to_greet = false;
	}
}

/* {'$shardnode', heartbeat_ack, Self, {SentAt, LeaseLeftMs, AckedAt}} to a
 * member of MEMBER_PROTOCOL_WATCH_RING or later (AckedAt: our clock now,
 * which its next heartbeat echoes), else {…, SentAt}. */
static void send_ack(struct membership *m, const struct member *to, uint64_t sent_at)
{
	if (to->protocol < MEMBER_PROTOCOL_WATCH_RING) {
		membership_send_heartbeat(m, to->node, "heartbeat_ack", sent_at);
		return;
	}
	ei_x_buff x;
	if (membership_begin_msg(m, &x, "heartbeat_ack") != 0)
		return;
	if (ei_x_encode_tuple_header(&x, 3) == 0 && term_x_encode_uint(&x, sent_at) == 0 &&
	    term_x_encode_uint(&x, membership_lease_left_ms(m)) == 0 && term_x_encode_uint(&x, now_ms(m)) == 0)
		membership_send_admin(m, to->node, &x);
	ei_x_free(&x);
}

void membership_heartbeat_all(struct membership *m)
{
	m->tick_reach_digest = reachability_digest(&m->reach);
	uint64_t sent_at = now_ms(m);
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (is_us(m, e) || e->status >= MEMBER_DOWN || !membership_heartbeats(m, e))
			continue;
		if (e->protocol < MEMBER_PROTOCOL_DIGESTS || send_heartbeat_with_digests(m, e, sent_at) != 0)
			membership_send_heartbeat(m, e->node, "heartbeat", sent_at); /* digests: the next tick's */
	}
	membership_next_probes(m);
}

/* See membership_internal.h. */
bool membership_refresh_lease(struct membership *m, bool log_loss)
{
	const struct member *me = membership_member(m, m->our_node);
	uint64_t until;
	if (me->status == MEMBER_DOWN || me->status == MEMBER_REMOVED) {
		until = 0;
	} else if (!votes(me)) {
		until = UINT64_MAX; /* joining or exiting: hosts nothing */
	} else if (m->sparse && !m->grants) {
		/* What the grantors' and watchers' acks passed on: each is at
		 * most what was left of the lease of a grantor that held a
		 * majority's (membership_plan_watching). */
		until = 0;
		for (size_t k = 0; k < m->n; k++) {
			const struct member *e = &m->members[k];
			if (!is_us(m, e) && e->status < MEMBER_DOWN && e->granted_until > until)
				until = e->granted_until;
		}
	} else {
		struct quorum_member *q = malloc(2 * m->n * sizeof *q);
		if (q == NULL) {
			m->quorum_until = 0; /* fail closed: the next refresh tries again */
			m->lease_holds = false;
			return false;
		}
		size_t n = 0;
		for (size_t k = 0; k < m->n; k++) {
			const struct member *e = &m->members[k];
			if (votes(e))
				q[n++] = (struct quorum_member){e->node, is_us(m, e) ? UINT64_MAX : e->lease_until};
		}
		until = quorum_until(q, n, q + m->n);
		free(q);
	}
	m->quorum_until = until;
	bool holds = membership_may_deliver(m);
	bool regained = holds && !m->lease_holds;
	m->lease_holds = holds;
	m->ever_held |= holds;
	bool lasted = !holds && log_loss && m->loss_seen;
	if (log_loss || holds)
		m->loss_seen = !holds;
	if (lasted && !m->loss_logged) {
		/* Before the first: the members are still coming (a whole
		 * cluster started at once), and waiting is what they do. */
		if (m->ever_held)
			log_warn(m->cfg.log, "no quorum lease: messages to local entities wait");
		else
			log_info(m->cfg.log, "no quorum lease yet: messages to local entities wait for a majority of the "
				 "members to answer");
		m->loss_logged = true;
	} else if (holds && m->loss_logged) {
		log_info(m->cfg.log, "quorum lease held again: delivering to local entities");
		m->loss_logged = false;
	}
	return regained;
}

/* ---- the cluster-wide reachability view ---- */

/* x to every member but us that is not down that we tell directly
 * (membership_tells_directly), or only to those of them of v0.1.0
 * (`old_only`). */
static void send_to_members(struct membership *m, const ei_x_buff *x, bool old_only)
{
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (!is_us(m, e) && e->status < MEMBER_DOWN &&
		    (old_only ? e->protocol < MEMBER_PROTOCOL_DIGESTS : membership_tells_directly(m, e)))
			membership_send_admin(m, e->node, x);
	}
}

/* Our reachability table to every member of v0.1.0 (`to` NULL) or to `to`
 * alone. */
static void send_reachability(struct membership *m, const char *to)
{
	ei_x_buff x;
	if (membership_begin_msg(m, &x, "reachability") != 0)
		return;
	if (reachability_encode(&m->reach, &x) == 0) {
		if (to != NULL)
			membership_send_admin(m, to, &x);
		else
			send_to_members(m, &x, true);
	}
	ei_x_free(&x); /* else the next tick's goes */
}

/* Our own record alone to the members we tell directly (the rest learn it
 * through the grantors' digests): what our change changed. A whole table
 * from each of many members that changed their records at once (a crash
 * in a large cluster, watched by all that lost their connection to it)
 * was the members' number squared of whole tables; a receiver merges one
 * record as it merges a table, and a table that still differs is mended
 * by the heartbeat's digest. */
static void send_own_record(struct membership *m)
{
	ei_x_buff x;
	if (membership_begin_msg(m, &x, "reachability") != 0)
		return;
	if (reachability_encode_one(&m->reach, m->our_node, &x) == 0)
		send_to_members(m, &x, false);
	ei_x_free(&x); /* else the digests mend it */
}

/* Makes our record in the table say what our failure detector says, under
 * a version above any held (one of an earlier incarnation of ours, too).
 * Returns true if the record changed; then it is sent at once. */
static bool publish_own_view(struct membership *m)
{
	const char **subjects = malloc((m->n ? m->n : 1) * sizeof *subjects);
	if (subjects == NULL)
		return false; /* the next tick tries again */
	size_t n = 0;
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (!is_us(m, e) && e->unreachable && e->status < MEMBER_DOWN)
			subjects[n++] = e->node;
	}
	/* The same set keeps its version: a version raised each tick would
	 * make every member's table digest differ from ours at every
	 * heartbeat, and each answer would be a whole table. */
	if (reachability_lists_exactly(&m->reach, m->our_node, subjects, n)) {
		free(subjects);
		return false;
	}
	const struct reach_record *held = reachability_find(&m->reach, m->our_node);
	uint64_t version = reachability_next_version(held ? held->version : 0, evloop_wall_us() / 1000u);
	int rc = reachability_update(&m->reach, m->our_node, version, subjects, n);
	free(subjects);
	if (rc == 1) {
		m->stable_since = now_ms(m);
		send_own_record(m);
	}
	return rc == 1;
}

void membership_on_reachability(struct membership *m, const char *t, size_t i)
{
	char from[NODE_NAME_BUF];
	if (node_name_decode(t, &i, from))
		return;
	struct member *sender = membership_member(m, from);
	if (sender == NULL || is_us(m, sender) || sender->status >= MEMBER_DOWN)
		return;
	membership_heard(m, sender);
	int changed = reachability_merge_encoded(&m->reach, t, &i);
	if (changed < 0)
		log_debug(m->cfg.log, "malformed reachability table from %s: the rest ignored", from);
	/* Only we speak for ourselves: a record of an earlier incarnation of
	 * ours is outranked at once. */
	publish_own_view(m);
	if (changed > 0) {
		m->stable_since = now_ms(m);
		log_debug(m->cfg.log, "reachability view changed by %s", from);
	}
}

void membership_changed(struct membership *m)
{
	m->stable_since = now_ms(m);
	membership_refresh_lease(m, false);
	if (m->cfg.on_change)
		m->cfg.on_change(m->cfg.on_change_arg);
}

/* A member spoke to us directly. */
void membership_heard(struct membership *m, struct member *e)
{
	e->last_heard = now_ms(m);
	e->connection_lost = false;
	if (e->unreachable && e->status < MEMBER_DOWN) {
		e->unreachable = false;
		log_info(m->cfg.log, "member %s reachable again", e->node);
		publish_own_view(m);
		membership_changed(m);
	}
}

static void detect_unreachable(struct membership *m)
{
	bool any = false;
	for (size_t k = 0; k < m->n; k++) {
		struct member *e = &m->members[k];
		if (!membership_judges(m, e))
			continue;
		if (now_ms(m) - e->last_heard > m->cfg.failure_timeout_ms) {
			if (membership_heard_through_others(m, e))
				continue; /* a slow link to a live member: it waits (membership_probe.c) */
			e->unreachable = true;
			any = true;
			log_warn(m->cfg.log, "member %s unreachable: silent for %u ms", e->node, m->cfg.failure_timeout_ms);
		}
	}
	if (any)
		membership_changed(m); /* the tick publishes our record next */
}

/* How long a downed member keeps its shards after this node learns of the
 * down, at most: its leases with the members that knew of the down no
 * later than we did run out within failure_timeout_ms; the margin covers
 * the members that learn of it a gossip round or two later and ack it
 * meanwhile. */
static uint64_t release_after_ms(const struct membership *m)
{
	return (uint64_t)m->cfg.failure_timeout_ms + 2u * (uint64_t)m->cfg.heartbeat_interval_ms;
}

/* Whether the lease we gave e, which we know is down, has run out. A
 * heartbeat interval of margin covers the clocks' drift and a turn. */
static bool our_lease_lapsed(const struct membership *m, const struct member *e)
{
	return membership_rules_lease_lapsed(e->last_acked, now_ms(m), m->cfg.failure_timeout_ms,
					     m->cfg.heartbeat_interval_ms);
}

/* Whether e (down) holds no lease from anyone any more
 * (membership_rules_downed_lease_over). */
static bool lease_over(struct membership *m, const struct member *e)
{
	if (m->n > CLUSTER_MEMBERS_MAX)
		return false; /* beyond the bits: the timeout alone */
	struct member_facts facts[CLUSTER_MEMBERS_MAX];
	bool lapsed[CLUSTER_MEMBERS_MAX];
	size_t downed = 0;
	for (size_t k = 0; k < m->n; k++) {
		facts[k] = membership_facts_of(&m->members[k]);
		if (&m->members[k] == e)
			downed = k;
		lapsed[k] = is_us(m, &m->members[k]) ? our_lease_lapsed(m, e)
						      : (e->lapsed_from[k / 64] >> (k % 64)) & 1u;
	}
	return membership_rules_downed_lease_over(facts, m->n, downed, lapsed);
}

/* A downed member's shards stay with it until its lease has run out: every
 * member has said so, or we waited release_after_ms. */
static void release_downed(struct membership *m)
{
	bool any = false;
	for (size_t k = 0; k < m->n; k++) {
		struct member *e = &m->members[k];
		if (e->down_at == 0 || e->released || is_us(m, e))
			continue;
		bool waited = now_ms(m) - e->down_at >= release_after_ms(m);
		if (waited || lease_over(m, e)) {
			e->released = true;
			any = true;
			log_info(m->cfg.log, "member %s: %s, its shards go elsewhere", e->node,
				 waited ? "down long enough" : "no lease left with any member");
		}
	}
	if (any)
		membership_changed(m);
}

/* See membership_internal.h. */
void membership_tell_lapsed_leases(struct membership *m)
{
	bool *targets = NULL;
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (e->down_at == 0 || is_us(m, e) || now_ms(m) - e->down_at >= 2 * release_after_ms(m) ||
		    !our_lease_lapsed(m, e))
			continue;
		if (targets == NULL) {
			if ((targets = malloc(m->n * sizeof *targets)) == NULL)
				return; /* the next tick tells */
			membership_lease_report_targets(m, targets);
		}
		ei_x_buff x;
		if (membership_begin_msg(m, &x, "lease_lapsed") != 0)
			break;
		if (ei_x_encode_tuple_header(&x, 2) == 0 && term_x_encode_atom(&x, e->node) == 0 &&
		    term_x_encode_uint(&x, e->up_number) == 0)
			for (size_t j = 0; j < m->n; j++) {
				const struct member *to = &m->members[j];
				if (targets[j] && !is_us(m, to) && to != e && to->status < MEMBER_DOWN)
					membership_send_admin(m, to->node, &x);
			}
		ei_x_free(&x);
	}
	free(targets);
}

void membership_on_lease_lapsed(struct membership *m, const char *t, size_t i)
{
	char from[NODE_NAME_BUF], node[NODE_NAME_BUF];
	long up_number;
	if (node_name_decode(t, &i, from) || term_get_tuple(t, &i) != 2 ||
	    node_name_decode(t, &i, node) || term_get_long(t, &i, &up_number) || up_number < 0)
		return;
	struct member *sender = membership_member(m, from), *e = membership_member(m, node);
	/* Only an admitted incarnation's (a joining one has up-number 0, as
	 * its next incarnation will while joining, and holds no shards). */
	if (sender == NULL || e == NULL || is_us(m, sender) || sender->status >= MEMBER_DOWN || up_number == 0 ||
	    e->up_number != (uint64_t)up_number)
		return;
	size_t k = (size_t)(sender - m->members);
	if (k >= CLUSTER_MEMBERS_MAX)
		return;
	e->lapsed_from[k / 64] |= UINT64_C(1) << (k % 64);
	release_downed(m);
}

/* This node's decision on the cluster-wide view (downing.h), among the
 * voting members: down itself, or down others (on every member for those
 * cut off from its side, on the leader alone for indirect faults).
 * Returns the verdict; the names to down are added to `downs`. Out of
 * memory, the verdict is DOWNING_NONE and `downs` may hold some names:
 * the next tick decides again. */
static enum downing_verdict decide(struct membership *m, struct node_set *downs)
{
	size_t nedges = 0;
	for (size_t k = 0; k < m->reach.n; k++)
		nedges += m->reach.records[k].nsubjects;
	if (m->n == 0 || nedges == 0)
		return DOWNING_NONE; /* nobody cannot hear anybody: the usual tick's answer, without the work */
	struct downing_member *voters = malloc(m->n * sizeof *voters);
	size_t *out = malloc(m->n * sizeof *out);
	struct downing_edge *edges = malloc(nedges * sizeof *edges);
	enum downing_verdict v = DOWNING_NONE;
	if (voters == NULL || out == NULL || edges == NULL)
		goto done; /* the next tick decides */
	size_t n = 0, decider = 0;
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (!votes(e))
			continue;
		if (is_us(m, e))
			decider = n;
		voters[n++] = (struct downing_member){e->node, e->up_number, reachability_times_named(&m->reach, e->node)};
	}
	/* Records of members that do not vote are left to downing_decide,
	 * which ignores edges naming a non-member. */
	nedges = 0;
	for (size_t k = 0; k < m->reach.n; k++)
		for (size_t j = 0; j < m->reach.records[k].nsubjects; j++)
			edges[nedges++] = (struct downing_edge){m->reach.records[k].observer,
								m->reach.records[k].subjects[j]};
	size_t nout = 0;
	v = downing_decide(voters, n, decider, membership_watchers(m), edges, nedges, out, &nout);
	for (size_t k = 0; k < nout && out[k] < n; k++) {
		if (node_set_add(downs, voters[out[k]].node) < 0) {
			v = DOWNING_NONE;
			break;
		}
	}
done:
	free(voters);
	free(out);
	free(edges);
	return v;
}

/* Once the member list and the reachability view have been stable for
 * stable_after_ms, applies downing.h: this node may down itself, the
 * members cut off from its side, and, on the leader, the members that
 * explain the indirect faults. */
static enum downing_verdict keep_majority(struct membership *m, struct node_set *downs)
{
	const struct member *me = membership_member(m, m->our_node);
	if (!m->cfg.keep_majority || !votes(me) || now_ms(m) - m->stable_since < m->cfg.stable_after_ms)
		return DOWNING_NONE;
	size_t total = 0, unreachable = 0;
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		total += votes(e);
		unreachable += votes(e) && e->unreachable;
	}
	enum downing_verdict v = decide(m, downs);
	if (v == DOWNING_NONE) {
		node_set_clear(downs);
		return v;
	}
	if (v == DOWNING_SELF) {
		log_error(m->cfg.log, "keep-majority: %zu of %zu members reachable, the other side wins: downing this node",
			  total - unreachable, total);
	}
	for (size_t k = 0; k < node_set_count(downs); k++) {
		const char *name = node_set_at(downs, k);
		if (reachability_has(&m->reach, m->our_node, name))
			log_warn(m->cfg.log, "keep-majority: %zu of %zu members reachable: downing %s, which none of them hears",
				 total - unreachable, total, name);
		else
			log_warn(m->cfg.log, "downing %s: it explains the most unreachability the members report "
				 "(a cut link or a bad network), and the others hear each other without it", name);
	}
	return v;
}

/* A heartbeat's digests against ours of the last tick: a list or table
 * that differs (or a 0, which says nothing) is sent whole to `from`, which
 * merges it; ours follows from its answer to our next heartbeat. */
static void compare_digests(struct membership *m, const char *from, uint64_t list_digest, uint64_t reach_digest)
{
	if (list_digest == 0 || m->tick_digest == 0 || list_digest != m->tick_digest)
		membership_gossip_to(m, from);
	if (reach_digest == 0 || m->tick_reach_digest == 0 || reach_digest != m->tick_reach_digest)
		send_reachability(m, from);
}

static void note_lease(struct membership *m, struct member *e, uint64_t until, uint64_t granted);

/* A heartbeat from a member that is not down gets its ack. An ack renews
 * the member's quorum lease from the time we sent the heartbeat, and a
 * heartbeat's echo of our ack from the time we sent the ack. */
void membership_on_heartbeat(struct membership *m, const char *t, size_t i, bool ack)
{
	char from[NODE_NAME_BUF];
	long sent_at;
	unsigned long long digests[2] = {0, 0};
	if (node_name_decode(t, &i, from))
		return;
	size_t inside = i;
	int arity = term_get_tuple(t, &inside);
	/* A heartbeat's AckedAt and an ack's AckedAt came with the echo; a
	 * member of the release before sends neither. */
	bool with_digests = !ack && (arity == 3 || arity == 4), with_lease_left = ack && (arity == 2 || arity == 3);
	bool with_acked_at = (!ack && arity == 4) || (ack && arity == 3);
	if (with_digests || with_lease_left)
		i = inside;
	if (term_get_long(t, &i, &sent_at) || sent_at < 0)
		return;
	long lease_left = 0;
	if (with_lease_left && (term_get_long(t, &i, &lease_left) || lease_left < 0))
		return;
	if (with_digests) {
		int ii = (int)i;
		if (ei_decode_ulonglong(t, &ii, &digests[0]) < 0 || ei_decode_ulonglong(t, &ii, &digests[1]) < 0)
			return;
		i = (size_t)ii;
	}
	long acked_at = 0;
	if (with_acked_at && (term_get_long(t, &i, &acked_at) || acked_at < 0))
		return;
	struct member *e = membership_member(m, from);
	if (e == NULL || is_us(m, e))
		return;
	if (e->status >= MEMBER_DOWN) {
		if (!ack)
			membership_gossip_to(m, from); /* it has not heard it was downed */
		return;
	}
	membership_heard(m, e);
	if (!ack) {
		e->last_acked = now_ms(m);
		send_ack(m, e, (uint64_t)sent_at);
		if (with_digests)
			compare_digests(m, from, (uint64_t)digests[0], (uint64_t)digests[1]);
		/* It heard our ack sent at acked_at (our clock) or later: as good
		 * as an ack of a heartbeat we sent then. A grantor gets its
		 * majority's lease so from the heartbeats every member sends it,
		 * without heartbeating each of them. */
		if (acked_at > 0 && (uint64_t)acked_at <= now_ms(m))
			note_lease(m, e, (uint64_t)acked_at + m->cfg.failure_timeout_ms, 0);
		return;
	}
	if (with_acked_at) {
		e->acked_us_at = (uint64_t)acked_at; /* the latest: acks come in order */
		/* Our next heartbeat echoes it, which gives e a lease until
		 * acked_at + failure_timeout_ms: at most failure_timeout_ms from
		 * now, as an ack of ours sent now would. So our lease to e, when
		 * it is down, lapses from now on (our_lease_lapsed). */
		e->last_acked = now_ms(m);
	}
	if ((uint64_t)sent_at > now_ms(m))
		return; /* not a time we sent */
	uint64_t until = (uint64_t)sent_at + m->cfg.failure_timeout_ms;
	/* Passed on: never beyond the acker's own lease, whose end was at
	 * least lease_left after it acked, which was after sent_at. */
	uint64_t left = (uint64_t)lease_left < m->cfg.failure_timeout_ms ? (uint64_t)lease_left : m->cfg.failure_timeout_ms;
	uint64_t granted = with_lease_left ? (uint64_t)sent_at + left : 0;
	note_lease(m, e, until, granted);
}

/* e acked a heartbeat of ours, or echoed an ack of ours: the quorum lease
 * it gives us lasts until `until`, and it passed on one of its own until
 * `granted` (0: none). */
static void note_lease(struct membership *m, struct member *e, uint64_t until, uint64_t granted)
{
	if (until > e->lease_until || granted > e->granted_until) {
		/* Read the clock before: the lease may have run out since the
		 * last refresh, unnoticed, and messages may be held. */
		bool withholding_before = !membership_may_deliver(m);
		if (until > e->lease_until)
			e->lease_until = until;
		if (granted > e->granted_until)
			e->granted_until = granted;
		/* Recomputed at once only when it matters before the tick's
		 * refresh: held back, or about to run out. Recomputing on every
		 * ack cost a grantor, which every member acks, the members'
		 * number squared each tick; a lease left as it was is only
		 * shorter, never wrong. */
		uint64_t soon = evloop_clock_ms() + 2u * (uint64_t)m->cfg.heartbeat_interval_ms;
		if (!withholding_before && m->quorum_until > soon)
			return;
		bool regained = membership_refresh_lease(m, false);
		if ((regained || (withholding_before && membership_may_deliver(m))) && m->cfg.on_change)
			m->cfg.on_change(m->cfg.on_change_arg); /* withheld messages may go */
	}
}

bool membership_may_deliver(const struct membership *m)
{
	return m->quorum_until == UINT64_MAX || evloop_clock_ms() < m->quorum_until;
}

uint64_t membership_lease_until(const struct membership *m) { return m->quorum_until; }

/* How long a record's appearance weighs in step 3's tie-break (downing.h)
 * at full count: long enough to remember a lossy member's records that
 * came and went before the view settled (stable_after_ms and a few failure
 * timeouts), short enough that a member's bad minute is not held against
 * it an hour later. */
#define REACH_NAMED_HALF_LIFE_MS 30000u

enum downing_verdict membership_health_tick(struct membership *m, struct node_set *downs)
{
	if (now_ms(m) - m->named_halved_at >= REACH_NAMED_HALF_LIFE_MS) {
		reachability_halve_named(&m->reach);
		m->named_halved_at = now_ms(m);
	}
	detect_unreachable(m);
	membership_probe_suspects(m);
	/* Our record as the detector now has it (also after a member was
	 * downed: it is no subject any more); publishing a change sends the
	 * record to the members we tell directly. Else members of v0.1.0 get
	 * the table each tick, and the others compare its digest in our
	 * heartbeat. */
	if (!publish_own_view(m))
		send_reachability(m, NULL);
	membership_tell_lapsed_leases(m);
	release_downed(m);
	return keep_majority(m, downs);
}
