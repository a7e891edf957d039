/* membership_watch.c — who this node watches and whose acks give it its
 * lease, planned once per tick (membership_internal.h,
 * membership_plan_watching). membership_health.c sends and detects by the
 * plan. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/evloop.h"
#include "cluster/member_protocol.h"
#include "cluster/membership_internal.h"
#include "cluster/membership_rules.h"
#include "cluster/watch_ring.h"

/* Whether every member that is not down speaks the ring's protocol: a
 * member of an earlier release finds unreachable whoever does not
 * heartbeat it, so it must be heartbeated by everyone. */
static bool everyone_speaks_rings(const struct membership *m)
{
	for (size_t k = 0; k < m->n; k++)
		if (m->members[k].status < MEMBER_DOWN && m->members[k].protocol < MEMBER_PROTOCOL_WATCH_RING)
			return false;
	return true;
}

/* membership_rules_older on two entries of the list. */
static bool older(const struct member *e, const struct member *f)
{
	struct member_facts a = membership_facts_of(e), b = membership_facts_of(f);
	return membership_rules_older(&a, &b);
}

/* Marks the cfg.watchers oldest voting members. */
static void mark_grantors(struct membership *m)
{
	for (size_t k = 0; k < m->n; k++)
		m->members[k].grantor = false;
	for (size_t g = 0; g < m->cfg.watchers; g++) {
		struct member *oldest = NULL;
		for (size_t k = 0; k < m->n; k++) {
			struct member *e = &m->members[k];
			if (votes(e) && !e->grantor && (oldest == NULL || older(e, oldest)))
				oldest = e;
		}
		if (oldest == NULL)
			break;
		oldest->grantor = true;
	}
}

/* m->ring on the voting members vote[0..nv) (indexes into m->members),
 * built again only when they are not the ones it was built on. Returns 0
 * or -ENOMEM (no ring kept). */
static int ring_of(struct membership *m, const size_t *vote, size_t nv)
{
	if (m->ring_voters != NULL && m->ring_nvoters == nv && memcmp(m->ring_voters, vote, nv * sizeof *vote) == 0)
		return 0;
	membership_forget_ring(m);
	size_t *voters = malloc((nv ? nv : 1) * sizeof *voters);
	const char **names = malloc((nv ? nv : 1) * sizeof *names);
	int rc = voters != NULL && names != NULL ? 0 : -ENOMEM;
	for (size_t v = 0; rc == 0 && v < nv; v++)
		names[v] = m->members[vote[v]].node;
	if (rc == 0)
		rc = watch_ring_build(&m->ring, names, nv);
	free(names);
	if (rc != 0) {
		free(voters);
		return rc;
	}
	memcpy(voters, vote, nv * sizeof *vote);
	m->ring_voters = voters;
	m->ring_nvoters = nv;
	return 0;
}

void membership_forget_ring(struct membership *m)
{
	if (m->ring_voters != NULL)
		watch_ring_free(&m->ring);
	free(m->ring_voters);
	m->ring_voters = NULL;
	m->ring_nvoters = 0;
}

/* Sets `watched` on the members we watch on the ring of the voting
 * members vote[0..nv) (indexes into m->members), walking from us past
 * every unreachable one until cfg.watchers reachable ones are found. Not
 * voting ourselves, we watch nobody. Returns 0 or -ENOMEM. */
static int mark_watched_on_ring(struct membership *m, bool *watched, const size_t *vote, size_t nv)
{
	int rc = ring_of(m, vote, nv);
	if (rc != 0)
		return rc;
	size_t us = nv;
	for (size_t v = 0; v < nv && us == nv; v++)
		if (is_us(m, &m->members[vote[v]]))
			us = v;
	if (us < nv) {
		size_t reachable = 0;
		for (size_t d = 1; d < nv && reachable < m->cfg.watchers; d++) {
			const struct member *e = &m->members[vote[watch_ring_after(&m->ring, us, d)]];
			watched[e - m->members] = true;
			reachable += !e->unreachable;
		}
	}
	return 0;
}

/* Gives a member that enters our watch two heartbeat intervals to answer
 * before its silence counts: we may not have heard it for long, not
 * having asked. */
static void start_watching(struct membership *m, struct member *e)
{
	uint64_t now = now_ms(m), grace = 2u * (uint64_t)m->cfg.heartbeat_interval_ms;
	uint64_t counted = m->cfg.failure_timeout_ms > grace ? m->cfg.failure_timeout_ms - grace : 0;
	if (now - e->last_heard > counted)
		e->last_heard = now > counted ? now - counted : 0;
}

bool membership_plan_watching(struct membership *m)
{
	size_t *vote = malloc((m->n ? m->n : 1) * sizeof *vote);
	bool *watched = calloc(m->n ? m->n : 1, sizeof *watched);
	if (vote == NULL || watched == NULL) {
		free(vote);
		free(watched);
		return false;
	}
	size_t nv = 0, listed = 0;
	for (size_t k = 0; k < m->n; k++) {
		if (votes(&m->members[k]))
			vote[nv++] = k;
		listed += m->members[k].status < MEMBER_DOWN;
	}
	/* Joiners count: while 255 nodes join a seed, the few voters must not
	 * heartbeat and greet every joiner from every voter and joiner (a
	 * connection from each to each before anyone is admitted); the
	 * grantors, the voters then, heartbeat them. */
	bool sparse = everyone_speaks_rings(m) && !watch_ring_everyone(listed, m->cfg.watchers);
	if (sparse && mark_watched_on_ring(m, watched, vote, nv) != 0) {
		free(vote);
		free(watched);
		return false;
	}
	m->sparse = sparse;
	if (sparse) {
		mark_grantors(m);
		for (size_t k = 0; k < m->n; k++)
			watched[k] |= m->members[k].connection_lost && votes(&m->members[k]) && !is_us(m, &m->members[k]);
	} else {
		for (size_t k = 0; k < m->n; k++) {
			watched[k] = true;
			m->members[k].grantor = false;
		}
	}
	m->grants = sparse && membership_member(m, m->our_node)->grantor;
	bool changed = false;
	for (size_t k = 0; k < m->n; k++) {
		struct member *e = &m->members[k];
		if (is_us(m, e))
			continue;
		if (watched[k] && !e->watched)
			start_watching(m, e);
		if (!watched[k] && e->watched && e->unreachable) {
			e->unreachable = false;
			changed = true;
			log_debug(m->cfg.log, "member %s no longer watched here: no longer reported unreachable", e->node);
		}
		e->watched = watched[k];
	}
	free(vote);
	free(watched);
	return changed;
}

uint64_t membership_lease_left_ms(const struct membership *m)
{
	const struct member *me = membership_find(m, m->our_node);
	if (me == NULL || !votes(me) || m->quorum_until == 0)
		return 0;
	if (m->quorum_until == UINT64_MAX)
		return m->cfg.failure_timeout_ms; /* we alone win: a cluster of one */
	uint64_t now = evloop_clock_ms();
	uint64_t left = m->quorum_until > now ? m->quorum_until - now : 0;
	return left < m->cfg.failure_timeout_ms ? left : m->cfg.failure_timeout_ms;
}

size_t membership_watchers(const struct membership *m)
{
	return m->sparse ? m->cfg.watchers : SIZE_MAX;
}

bool membership_tells_directly(const struct membership *m, const struct member *e)
{
	return !m->sparse || m->grants || e->watched || e->grantor;
}

void membership_lease_report_targets(const struct membership *m, bool *to)
{
	for (size_t k = 0; k < m->n; k++)
		to[k] = !m->sparse || m->members[k].grantor;
	if (!m->sparse)
		return;
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		for (size_t t = 0; t < e->ntypes; t++) {
			const char *oldest = membership_oldest_with(m, e->types[t]);
			const struct member *o = oldest != NULL ? membership_find(m, oldest) : NULL;
			if (o != NULL)
				to[o - m->members] = true;
		}
	}
}

bool membership_heartbeats(const struct membership *m, const struct member *e)
{
	if (!m->sparse || e->watched || e->grantor)
		return true;
	if (!m->grants || m->n == 0)
		return false;
	size_t k = (size_t)(e - m->members), from = m->probe_at % m->n;
	size_t past = k >= from ? k - from : k + m->n - from;
	return past < m->cfg.watchers;
}

void membership_next_probes(struct membership *m)
{
	if (m->grants && m->n > 0)
		m->probe_at = (m->probe_at + m->cfg.watchers) % m->n;
}
