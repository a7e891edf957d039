/* membership_probe.c — indirect probes (membership_internal.h): before a
 * member we watch is called unreachable, we ask a few others whether they
 * hear it, so that a slow link between two members is not taken for a
 * dead member.
 *
 * A member silent to us for half of failure_timeout_ms is a suspect. Each
 * tick while it is, up to PROBE_HELPERS members are asked
 *
 *   {'$shardnode', probe, From, Target}
 *
 * and each answers from what it knows, without a message of its own to
 * the target: how long it has not heard it,
 *
 *   {'$shardnode', probe_answer, From, {Target, SilentMs}}
 *
 * The helpers are members every member heartbeats: on a ring the grantors
 * (membership_watch.c), else anyone; so what they know is at most a
 * heartbeat interval old. A member that died was last heard by them about
 * when it was last heard by us, and its detection waits for nothing; a
 * member that a helper heard less than failure_timeout_ms less two
 * heartbeat intervals ago is alive, and only its link to us is slow: it is
 * called unreachable only once it has been silent to us for twice
 * failure_timeout_ms (a link that stays cut is still reported, and costs
 * one of its ends, docs/contract.md "A cluster"). A member whose
 * connection to us went down is not waited for.
 */
#include <stdint.h>

#include "cluster/member_protocol.h"
#include "cluster/membership_internal.h"
#include "etf/term.h"
#include "etf/term_encode.h"
#include "protocol/node_name.h"

/* How many members are asked about one suspect each tick. */
#define PROBE_HELPERS 3

/* Whether h may be asked about `target`: up, speaking probes, heard by us,
 * and, on a ring, one every member heartbeats. */
static bool may_help(const struct membership *m, const struct member *h, const struct member *target)
{
	return !is_us(m, h) && h != target && votes(h) && h->protocol >= MEMBER_PROTOCOL_PROBES && !h->unreachable &&
	       !h->connection_lost && (!m->sparse || h->grantor);
}

static void ask_about(struct membership *m, const struct member *target)
{
	ei_x_buff x;
	if (membership_begin_msg(m, &x, "probe") != 0)
		return; /* the next tick asks */
	if (term_x_encode_atom(&x, target->node) == 0) {
		size_t asked = 0;
		for (size_t k = 0; k < m->n && asked < PROBE_HELPERS; k++) {
			const struct member *h = &m->members[k];
			if (may_help(m, h, target)) {
				membership_send_admin(m, h->node, &x);
				asked++;
			}
		}
	}
	ei_x_free(&x);
}

void membership_probe_suspects(struct membership *m)
{
	for (size_t k = 0; k < m->n; k++) {
		const struct member *e = &m->members[k];
		if (membership_judges(m, e) && !e->connection_lost &&
		    now_ms(m) - e->last_heard > m->cfg.failure_timeout_ms / 2)
			ask_about(m, e);
	}
}

void membership_on_probe(struct membership *m, const char *t, size_t i)
{
	char from[NODE_NAME_BUF], target[NODE_NAME_BUF];
	if (node_name_decode(t, &i, from) || node_name_decode(t, &i, target))
		return;
	const struct member *asker = membership_member(m, from), *e = membership_member(m, target);
	/* What we do not hear, or never did, we say nothing of: silence is
	 * the answer that changes nothing. */
	if (asker == NULL || is_us(m, asker) || asker->status >= MEMBER_DOWN || e == NULL || is_us(m, e) ||
	    e->status >= MEMBER_DOWN || e->unreachable || e->last_heard == 0)
		return;
	ei_x_buff x;
	if (membership_begin_msg(m, &x, "probe_answer") != 0)
		return;
	if (ei_x_encode_tuple_header(&x, 2) == 0 && term_x_encode_atom(&x, e->node) == 0 &&
	    term_x_encode_uint(&x, now_ms(m) - e->last_heard) == 0)
		membership_send_admin(m, asker->node, &x);
	ei_x_free(&x);
}

void membership_on_probe_answer(struct membership *m, const char *t, size_t i)
{
	char from[NODE_NAME_BUF], target[NODE_NAME_BUF];
	long silent_ms;
	if (node_name_decode(t, &i, from) || term_get_tuple(t, &i) != 2 || node_name_decode(t, &i, target) ||
	    term_get_long(t, &i, &silent_ms) || silent_ms < 0)
		return;
	const struct member *helper = membership_member(m, from);
	struct member *e = membership_member(m, target);
	if (helper == NULL || is_us(m, helper) || helper->status >= MEMBER_DOWN || e == NULL || is_us(m, e) ||
	    (uint64_t)silent_ms > now_ms(m))
		return;
	uint64_t heard_at = now_ms(m) - (uint64_t)silent_ms;
	if (heard_at > e->others_heard_at)
		e->others_heard_at = heard_at;
}

bool membership_heard_through_others(const struct membership *m, const struct member *e)
{
	uint64_t now = now_ms(m), timeout = m->cfg.failure_timeout_ms, margin = 2 * (uint64_t)m->cfg.heartbeat_interval_ms;
	/* A dead member was last heard by the helpers no later than a
	 * heartbeat interval (and a message's way) after we last heard it, so
	 * at detection it is more than failure_timeout_ms less that silent to
	 * them too: two intervals of margin. A live one was heard by them
	 * within an interval, told us within the tick. */
	return !e->connection_lost && e->others_heard_at > e->last_heard && timeout > margin &&
	       now - e->others_heard_at < timeout - margin && now - e->last_heard <= 2 * timeout;
}
