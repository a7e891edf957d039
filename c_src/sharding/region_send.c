/* region_send.c — what a region sends (region_internal.h): a call's reply
 * to its caller (to the alias where the caller's node takes one), a tell's
 * {Type, EntityId, Reply} to its sender, each checked against the node it
 * goes to (term_readable.h); the replies' latency, timed at the flush that
 * writes them; its messages to its coordinator. Every part of the region
 * answers through here; this file calls none of them. What the region
 * sends leaves through cfg.out (protocol/outlet.h), whose carrier — the
 * distribution on a running node — this file never names. */
#include <string.h>

#include "etf/term.h"
#include "etf/term_readable.h"
#include "sharding/region_internal.h"
#include "sharding/region_send.h"
#include "etf/shard_msg.h"

/* A reply of a message that arrived at t0_ns leaves with this turn's
 * output: counted in a run of its start time, timed at the flush. */
static void note_reply(struct region *r, uint64_t t0_ns, uint64_t arrived_ns)
{
	if (arrived_ns == 0)
		arrived_ns = t0_ns;
	if (r->replies.nuntimed > 0 && r->replies.untimed[r->replies.nuntimed - 1].t0_ns == t0_ns &&
	    r->replies.untimed[r->replies.nuntimed - 1].arrived_ns == arrived_ns) {
		r->replies.untimed[r->replies.nuntimed - 1].n++;
	} else if (r->replies.nuntimed < REGION_UNTIMED_RUNS) {
		r->replies.untimed[r->replies.nuntimed].t0_ns = t0_ns;
		r->replies.untimed[r->replies.nuntimed].arrived_ns = arrived_ns;
		r->replies.untimed[r->replies.nuntimed++].n = 1;
	} else {
		uint64_t now = evloop_clock_ns();
		histogram_observe(&r->replies.latency, now > t0_ns ? now - t0_ns : 0);
		histogram_observe(&r->replies.whole_latency, now > arrived_ns ? now - arrived_ns : 0);
	}
}

void region_time_replies(struct region *r)
{
	if (r->replies.nuntimed == 0)
		return;
	uint64_t now = evloop_clock_ns();
	for (uint32_t k = 0; k < r->replies.nuntimed; k++) {
		uint64_t t0 = r->replies.untimed[k].t0_ns, arrived = r->replies.untimed[k].arrived_ns;
		histogram_observe_n(&r->replies.latency, now > t0 ? now - t0 : 0, r->replies.untimed[k].n);
		histogram_observe_n(&r->replies.whole_latency, now > arrived ? now - arrived : 0, r->replies.untimed[k].n);
	}
	r->replies.nuntimed = 0;
}

void region_send_call_reply(struct region *r, const erlang_pid *to, const char *tag, size_t tag_len,
			    const ei_x_buff *reply)
{
	outlet_reply_to(&r->cfg.out, &r->pid, to, tag, tag_len, reply->buff, (size_t)reply->index);
}

/* {Type, EntityId, Reply} to the sender of a tell; a singleton's
 * {Name, Reply}. */
static void send_tell_reply(struct region *r, const erlang_pid *to, const char *id, size_t id_len,
			    const ei_x_buff *reply)
{
	ei_x_buff spare, *x = scratch_get(&r->bufs.tell, &spare);
	if (x == NULL)
		return;
	if (ei_x_encode_version(x) == 0 && ei_x_encode_tuple_header(x, r->cfg.singleton ? 2 : 3) == 0 &&
	    term_x_append_raw(x, r->ident.type_atom, r->ident.type_atom_len) == 0 &&
	    (r->cfg.singleton || term_x_append_raw(x, id, id_len) == 0) &&
	    term_x_append_raw(x, reply->buff, (size_t)reply->index) == 0)
		outlet_send(&r->cfg.out, to, x->buff, (size_t)x->index);
	scratch_put(&r->bufs.tell, x);
}

/* Whether the node the reply goes to could read it: a pid, reference or
 * port naming that node with numbers it never hands out would make it drop
 * its connection to us (term_readable.h). A stored value can hold one that
 * another node made up. This node's own procs read anything. */
static bool reply_readable(const struct region *r, const struct envelope *e, const ei_x_buff *reply)
{
	return e->from == NULL ||
	       term_readable_by(reply->buff, (size_t)reply->index, e->from->node, e->from->creation) ||
	       strcmp(e->from->node, dist_node_name(r->cfg.node)) == 0;
}

void region_answer(struct region *r, const struct envelope *e, const ei_x_buff *reply)
{
	if (!reply_readable(r, e, reply)) {
		/* Said once, then every 10 000th: an entity that keeps such a
		 * term would otherwise log on every message to it. */
		if (r->replies.unreadable++ % 10000 == 0)
			log_warn(r->cfg.log,
				 "region %s: a reply to %s names that node with a pid, reference or port it never made; "
				 "it gets {error, unreadable_reply} instead (%llu so far)",
				 r->cfg.name, e->from->node, (unsigned long long)r->replies.unreadable);
		region_answer_error(r, e, "unreadable_reply");
		return;
	}
	if (r->cfg.metrics && e->t0_ns != 0 && (e->is_call || e->from != NULL))
		note_reply(r, e->t0_ns, e->arrived_ns);
	if (e->is_call)
		region_send_call_reply(r, e->from, e->tag, e->tag_len, reply);
	else if (e->from != NULL)
		send_tell_reply(r, e->from, e->id, e->id_len, reply);
}

int region_send_encoded(void *region, const erlang_pid *to, const char *buf, size_t len)
{
	const struct region *r = region;
	return outlet_send(&r->cfg.out, to, buf, len);
}

void region_answer_error(struct region *r, const struct envelope *e, const char *reason)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	term_x_error_atom(&x, reason);
	region_answer(r, e, &x);
	ei_x_free(&x);
}

void region_send_to_coordinator(struct region *r, enum shard_msg_kind kind, uint32_t shard)
{
	if (!r->coord.registered)
		return;
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	bool with_shard = kind == SMSG_GET_SHARD_HOME || kind == SMSG_SHARD_STOPPED;
	int rc = with_shard ? shard_msg_encode_shard(&x, kind, shard, &r->pid) : shard_msg_encode_pid(&x, kind, &r->pid);
	if (rc == 0)
		outlet_send(&r->cfg.out, &r->coord.pid, x.buff, (size_t)x.index);
	ei_x_free(&x);
}
