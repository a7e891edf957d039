/* membership_health.c — failure detection, keep-majority downing and the
 * quorum lease of membership.h, on the member list of membership.c. */
#include <stdlib.h>
#include <string.h>

#include <bsd/string.h>

#include "membership_internal.h"
#include "quorum.h"
#include "term.h"

void membership_send_heartbeat(struct membership *m, const char *to, const char *kind, uint64_t sent_at)
{
	ei_x_buff x;
	if (membership_begin_msg(m, &x, kind) != 0)
		return;
	ei_x_encode_ulonglong(&x, sent_at);
	membership_send_admin(m, to, &x);
	ei_x_free(&x);
}

/* Every member but us that is not down gets a heartbeat, unreachable ones
 * too: that is how we notice they are back. */
void membership_heartbeat_all(struct membership *m)
{
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (!is_self(m, e) && e->status < MEMBER_DOWN)
			membership_send_heartbeat(m, e->node, "heartbeat", now_ms(m));
	}
}

/* See membership_internal.h. */
bool membership_refresh_lease(struct membership *m, bool log_loss)
{
	const struct member *me = membership_member(m, m->self);
	uint64_t until;
	if (me->status == MEMBER_DOWN || me->status == MEMBER_REMOVED) {
		until = 0;
	} else if (!votes(me)) {
		until = UINT64_MAX; /* joining or exiting: hosts nothing */
	} else {
		struct quorum_member *q = malloc(2 * m->n * sizeof *q);
		if (q == NULL) {
			m->quorum_until = 0; /* fail closed: the next refresh tries again */
			m->holding = false;
			return false;
		}
		size_t n = 0;
		for (size_t k = 0; k < m->n; k++) {
			const struct member *e = &m->members[k];
			if (votes(e))
				q[n++] = (struct quorum_member){e->node, is_self(m, e) ? UINT64_MAX : e->lease_until};
		}
		until = quorum_until(q, n, q + m->n);
		free(q);
	}
	m->quorum_until = until;
	bool holds = membership_may_deliver(m);
	bool regained = holds && !m->holding;
	m->holding = holds;
	if (!holds && log_loss && !m->loss_logged) {
		log_warn(m->cfg.log, "no quorum lease: messages to local entities wait");
		m->loss_logged = true;
	} else if (holds && m->loss_logged) {
		log_info(m->cfg.log, "quorum lease held again: delivering to local entities");
		m->loss_logged = false;
	}
	return regained;
}

/* A member spoke to us directly. */
void membership_heard(struct membership *m, struct member *e)
{
	e->last_heard = now_ms(m);
	if (e->unreachable && e->status < MEMBER_DOWN) {
		e->unreachable = false;
		log_info(m->cfg.log, "member %s reachable again", e->node);
		membership_changed(m);
	}
}

static void detect_unreachable(struct membership *m)
{
	bool any = false;
	for (size_t k = 0; k < m->n; k++) {
		struct member *e = &m->members[k];
		if (is_self(m, e) || e->unreachable || e->status >= MEMBER_DOWN || e->status == MEMBER_JOINING)
			continue;
		if (now_ms(m) - e->last_heard > m->cfg.failure_timeout_ms) {
			e->unreachable = true;
			any = true;
			log_warn(m->cfg.log, "member %s unreachable: silent for %u ms", e->node, m->cfg.failure_timeout_ms);
		}
	}
	if (any)
		membership_changed(m);
}

/* How long a downed member keeps its shards after this node learns of the
 * down: its leases with the members that knew of the down no later than we
 * did run out within failure_timeout_ms; the margin covers the members that
 * learn of it a gossip round or two later and ack it meanwhile. */
static uint64_t release_after_ms(const struct membership *m)
{
	return (uint64_t)m->cfg.failure_timeout_ms + 2u * (uint64_t)m->cfg.gossip_interval_ms;
}

/* A downed member's shards stay with it until its lease has run out. */
static void release_downed(struct membership *m)
{
	bool any = false;
	for (size_t k = 0; k < m->n; k++) {
		struct member *e = &m->members[k];
		if (e->down_at != 0 && !e->released && now_ms(m) - e->down_at >= release_after_ms(m)) {
			e->released = true;
			any = true;
			log_info(m->cfg.log, "member %s: down long enough, its shards go elsewhere", e->node);
		}
	}
	if (any)
		membership_changed(m);
}

/* Keep-majority: once the unreachable set has been stable for
 * stable_after_ms, the winning side downs the unreachable, the losing side
 * downs itself. */
static void keep_majority(struct membership *m)
{
	const struct member *me = membership_member(m, m->self);
	if (!m->cfg.keep_majority || !votes(me) || now_ms(m) - m->stable_since < m->cfg.stable_after_ms)
		return;
	size_t total = 0, unreachable = 0;
	const struct member *lowest = NULL;
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (!votes(e))
			continue;
		total++;
		unreachable += e->unreachable;
		if (lowest == NULL || strcmp(e->node, lowest->node) < 0)
			lowest = e;
	}
	if (unreachable == 0)
		return;
	size_t reachable = total - unreachable;
	if (!quorum_wins(reachable, total, !lowest->unreachable)) {
		log_error(m->cfg.log, "keep-majority: %zu of %zu members reachable, the other side wins: downing this node",
			  reachable, total);
		membership_down(m, m->self);
		return;
	}
	/* membership_down changes the list under us: collect the names first. */
	char (*names)[256] = malloc(unreachable * sizeof *names);
	if (names == NULL)
		return;
	size_t n = 0;
	for (size_t k = 0; k < m->n; k++)
		if (votes(&m->members[k]) && m->members[k].unreachable)
			strlcpy(names[n++], m->members[k].node, sizeof names[0]);
	for (size_t k = 0; k < n; k++) {
		log_warn(m->cfg.log, "keep-majority: %zu of %zu members reachable: downing %s", reachable, total,
			 names[k]);
		membership_down(m, names[k]);
	}
	free(names);
}

/* True if the voting members that acked a heartbeat we sent at or after
 * `since` would win a split now: we are not cut off from the majority. */
bool membership_fresh_quorum_since(struct membership *m, uint64_t since)
{
	struct quorum_member *q = malloc(2 * m->n * sizeof *q);
	if (q == NULL)
		return false;
	size_t n = 0;
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (!votes(e))
			continue;
		uint64_t lease = is_self(m, e) ? UINT64_MAX : e->lease_until;
		if (!is_self(m, e) && lease < since + m->cfg.failure_timeout_ms)
			lease = 0; /* its last ack is for a heartbeat sent before `since` */
		q[n++] = (struct quorum_member){e->node, lease};
	}
	uint64_t until = quorum_until(q, n, q + m->n);
	free(q);
	return evloop_clock_ms() < until;
}

/* A heartbeat from a member that is not down gets its ack. An ack renews
 * the member's quorum lease from the time we sent the heartbeat. */
void membership_on_heartbeat(struct membership *m, const char *t, size_t i, bool ack)
{
	char from[TERM_ATOM_BUF];
	long sent_at;
	if (term_get_atom(t, &i, from) || term_get_long(t, &i, &sent_at) || sent_at < 0)
		return;
	struct member *e = membership_member(m, from);
	if (e == NULL || is_self(m, e))
		return;
	if (e->status >= MEMBER_DOWN) {
		if (!ack)
			membership_gossip_to(m, from); /* it has not heard it was downed */
		return;
	}
	membership_heard(m, e);
	if (!ack) {
		membership_send_heartbeat(m, from, "heartbeat_ack", (uint64_t)sent_at);
		return;
	}
	if ((uint64_t)sent_at > now_ms(m))
		return; /* not a time we sent */
	uint64_t until = (uint64_t)sent_at + m->cfg.failure_timeout_ms;
	if (until > e->lease_until) {
		/* Read the clock before: the lease may have run out since the
		 * last refresh, unnoticed, and messages may be held. */
		bool held_before = !membership_may_deliver(m);
		e->lease_until = until;
		bool regained = membership_refresh_lease(m, false);
		if ((regained || (held_before && membership_may_deliver(m))) && m->cfg.on_change)
			m->cfg.on_change(m->cfg.on_change_arg); /* held messages may go */
	}
}

bool membership_may_deliver(const struct membership *m)
{
	return m->quorum_until == UINT64_MAX || evloop_clock_ms() < m->quorum_until;
}

void membership_health_tick(struct membership *m)
{
	detect_unreachable(m);
	release_downed(m);
	keep_majority(m);
}
