/* membership_rules.c — see membership_rules.h. */
#include "cluster/membership_rules.h"

#include <string.h>

bool membership_rules_votes(enum member_status status)
{
	return status == MEMBER_UP || status == MEMBER_LEAVING;
}

static bool is_down(enum member_status status) { return status >= MEMBER_DOWN; }

/* The verdict alone. `self_joining`: the entry is ours and we await
 * admission, so downs of an earlier incarnation of ours are not about us. */
static enum member_merge_verdict verdict_of(const struct member_facts *in, const struct member_facts *have,
					    bool self_joining)
{
	bool in_down = is_down(in->status), have_down = is_down(have->status);
	/* A joining entry has no up-number yet: the seed lists a rejoining
	 * node with a version above any the old incarnation reached. At the
	 * same version the joining entry wins: a down made from a joining
	 * entry is a version above it (membership_down), so a down at the
	 * same version was made from another entry of an older incarnation
	 * (two members downing it from entries of different versions), and
	 * if neither side took the other's, the two would never agree. */
	if (have_down && !in_down) {
		if (in->up_number == 0)
			return in->version >= have->version ? MEMBER_MERGE_NEW_INCARNATION : MEMBER_MERGE_KEEP;
		return in->up_number > have->up_number ? MEMBER_MERGE_NEW_INCARNATION : MEMBER_MERGE_KEEP;
	}
	if (self_joining && !in_down && in->up_number != 0 && in->up_number <= have->old_up_number)
		return MEMBER_MERGE_KEEP; /* our old incarnation's admission, not ours */
	if (in_down && !have_down) {
		if (self_joining)
			return MEMBER_MERGE_KEEP; /* the down of an earlier incarnation of ours */
		if (have->up_number == 0)
			return in->version > have->version ? MEMBER_MERGE_TAKE : MEMBER_MERGE_KEEP;
		/* A down of an older incarnation does not touch a newer one. */
		return in->up_number < have->up_number ? MEMBER_MERGE_KEEP : MEMBER_MERGE_TAKE;
	}
	if (in->up_number != have->up_number && in->up_number != 0 && have->up_number != 0)
		return in->up_number > have->up_number ? MEMBER_MERGE_TAKE : MEMBER_MERGE_KEEP;
	if (in->version != have->version)
		return in->version > have->version ? MEMBER_MERGE_TAKE : MEMBER_MERGE_KEEP;
	return in->status > have->status ? MEMBER_MERGE_TAKE : MEMBER_MERGE_KEEP;
}

struct member_merge membership_rules_merge(const struct member_facts *in, const struct member_facts *have,
					   bool is_self)
{
	struct member_merge d = {.verdict = MEMBER_MERGE_KEEP};
	if (have == NULL) {
		d.verdict = MEMBER_MERGE_TAKE;
		d.joining_now = in->status == MEMBER_JOINING;
		d.note_down = is_down(in->status);
		d.greet = !is_self && !is_down(in->status);
		return d;
	}
	/* Nobody lists us joining while we are a member: only another process
	 * of our name is joined anew (membership.h), and joins go out only
	 * while we join. */
	if (is_self && have->status >= MEMBER_UP && have->status < MEMBER_DOWN && in->status == MEMBER_JOINING) {
		d.refute = in->version >= have->version;
		return d;
	}
	/* Nobody un-leaves us: only we move our own entry from leaving on. */
	if (is_self && have->status >= MEMBER_LEAVING && in->status < have->status)
		return d;
	d.verdict = verdict_of(in, have, is_self && have->status == MEMBER_JOINING);
	if (d.verdict == MEMBER_MERGE_KEEP)
		return d;
	bool rejoining = in->status == MEMBER_JOINING && have->status != MEMBER_JOINING;
	d.forget_seen = d.verdict == MEMBER_MERGE_NEW_INCARNATION || (d.verdict == MEMBER_MERGE_TAKE && rejoining);
	d.joining_now = rejoining;
	d.note_down = is_down(in->status);
	return d;
}

enum member_join membership_rules_join(const struct member_facts *have, uint32_t *version)
{
	if (have != NULL &&
	    (have->status == MEMBER_JOINING || (have->status == MEMBER_UP && !have->unreachable)))
		return MEMBER_JOIN_TELL_AGAIN;
	/* +2: above a `removed` (the down's version + 1) that others may hold
	 * of the old incarnation, so the joining entry replaces it. */
	*version = (have != NULL ? have->version : 0) + 2;
	return MEMBER_JOIN_LIST;
}

uint32_t membership_rules_formed_version(uint32_t own) { return own + 3; }

bool membership_rules_older(const struct member_facts *a, const struct member_facts *b)
{
	if (a->up_number != b->up_number)
		return a->up_number < b->up_number;
	return strcmp(a->node, b->node) < 0;
}

int membership_rules_leader(const struct member_facts *members, size_t n)
{
	int best = -1;
	for (size_t k = 0; k < n; k++)
		if (membership_rules_votes(members[k].status) && (best < 0 || membership_rules_older(&members[k], &members[best])))
			best = (int)k;
	return best;
}

uint32_t membership_rules_next_up_number(const struct member_facts *members, size_t n, uint32_t top_seen)
{
	uint32_t top = top_seen;
	for (size_t k = 0; k < n; k++)
		if (members[k].up_number > top)
			top = members[k].up_number;
	return top + 1;
}

/* True if the voters that acked a heartbeat we sent at or after `since`
 * win a split at a->clock_ms: we are not cut off from the majority. A
 * member counts as a voter if it votes, or was admitted earlier in this
 * pass (up[k] != 0). */
static bool fresh_quorum_since(const struct member_facts *members, size_t n, const struct membership_admission *a,
			       const uint32_t *up, uint64_t since, struct quorum_member *scratch)
{
	struct quorum_member *q = scratch;
	size_t nq = 0;
	for (size_t k = 0; k < n; k++) {
		const struct member_facts *e = &members[k];
		if (!membership_rules_votes(e->status) && up[k] == 0)
			continue;
		bool self = k == a->self;
		uint64_t lease = self ? UINT64_MAX : e->lease_until;
		if (!self && lease < since + a->failure_timeout_ms)
			lease = 0; /* its last ack is for a heartbeat sent before `since` */
		q[nq++] = (struct quorum_member){e->node, lease};
	}
	return a->clock_ms < quorum_until(q, nq, q + n);
}

/* a joined before b: listed joining earlier, then the lower node name. */
static bool joined_before(const struct member_facts *a, const struct member_facts *b)
{
	if (a->joining_since != b->joining_since)
		return a->joining_since < b->joining_since;
	return strcmp(a->node, b->node) < 0;
}

/* The index of the joiner (not `self`) that joined first after `last`
 * (NULL: the first of all), or -1. */
static int next_joiner(const struct member_facts *members, size_t n, size_t self, const struct member_facts *last)
{
	int best = -1;
	for (size_t k = 0; k < n; k++) {
		const struct member_facts *e = &members[k];
		if (e->status != MEMBER_JOINING || k == self || (last != NULL && !joined_before(last, e)))
			continue;
		if (best < 0 || joined_before(e, &members[best]))
			best = (int)k;
	}
	return best;
}

size_t membership_rules_admit(const struct member_facts *members, size_t n, const struct membership_admission *a,
			      struct quorum_member *scratch, uint32_t *up)
{
	for (size_t k = 0; k < n; k++)
		up[k] = 0;
	int leader = membership_rules_leader(members, n);
	if (leader < 0 || (size_t)leader != a->self)
		return 0;
	uint32_t next = membership_rules_next_up_number(members, n, a->top_up_number);
	size_t admitted = 0;
	for (const struct member_facts *last = NULL;;) {
		int k = next_joiner(members, n, a->self, last);
		if (k < 0)
			break;
		const struct member_facts *e = last = &members[k];
		if (!fresh_quorum_since(members, n, a, up, e->joining_since, scratch) ||
		    a->now_ms - e->last_heard > a->failure_timeout_ms)
			continue;
		up[k] = next++;
		admitted++;
	}
	return admitted;
}

bool membership_rules_may_answer_gossip(uint64_t in_digest, bool sender_digests, uint64_t now_ms,
					uint64_t answered_at_ms, uint32_t interval_ms)
{
	if (in_digest == 0 || !sender_digests)
		return false;
	return answered_at_ms == 0 || now_ms >= answered_at_ms + interval_ms;
}

bool membership_rules_lease_lapsed(uint64_t last_acked_ms, uint64_t now_ms, uint32_t failure_timeout_ms,
				   uint32_t margin_ms)
{
	return now_ms > last_acked_ms + failure_timeout_ms + margin_ms;
}

bool membership_rules_downed_lease_over(const struct member_facts *members, size_t n, size_t downed,
					const bool *lapsed)
{
	if (downed >= n || !is_down(members[downed].status))
		return false;
	for (size_t k = 0; k < n; k++)
		if (k != downed && !is_down(members[k].status) && !lapsed[k])
			return false;
	return true;
}
