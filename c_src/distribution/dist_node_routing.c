/* dist_node_routing.c — incoming control messages routed to the node's
 * procs: SEND and REG_SEND to their handlers, monitors and links kept on
 * the procs, exit signals, and a discarded oversized call answered
 * (dist_node.h, dist_node_internal.h). */
#include <string.h>

#include "protocol/dist_ctl.h"
#include "distribution/dist_node_internal.h"
#include "protocol/gen_call.h"
#include "etf/term.h"

void dist_node_deliver(struct proc *p, const char *via, const erlang_pid *from, const char *term, size_t len)
{
	struct proc_msg m = {.from = from, .term = term, .len = len, .via = via};
	p->handler(p->ctx, p, &m);
}

/* Decodes a pid element of the control tuple; false if it is not one. */
static bool elem_pid(const struct dist_msg *m, size_t k, erlang_pid *out)
{
	if (k >= m->nelems)
		return false;
	size_t i = m->elem[k];
	return term_get_pid(m->ctl, &i, out) == 0;
}

/* The raw bytes of control tuple element k. */
static void elem_raw(const struct dist_msg *m, size_t k, const char **p, size_t *len)
{
	size_t i = m->elem[k];
	*p = m->ctl + i;
	term_skip(m->ctl, &i);
	*len = (size_t)(m->ctl + i - *p);
}

/* The proc a ToProc element names: an atom (registered name) or our pid. */
static struct proc *elem_target(struct dist_node *n, const struct dist_msg *m, size_t k)
{
	char name[TERM_ATOM_BUF];
	size_t i = m->elem[k];
	if (term_get_atom(m->ctl, &i, name) == 0)
		return proc_by_name(&n->procs, name);
	erlang_pid pid;
	if (elem_pid(m, k, &pid))
		return proc_by_pid(&n->procs, &pid);
	return NULL;
}

static void log_unhandled_once(struct dist_node *n, struct dist_conn *c, long op, const char *what)
{
	n->stats.unknown_control_ops++;
	if (dist_conn_first_sight_of_op(c, op))
		log_info(n->settings.log, "from %s: control message %ld %s (logged once)", dist_conn_peer(c), op, what);
}

static void on_reg_send(struct dist_node *n, struct dist_conn *c, const struct dist_msg *m)
{
	erlang_pid from;
	char name[TERM_ATOM_BUF];
	size_t i = m->nelems >= 3 ? m->elem[2] : 0;
	if (m->payload == NULL || !elem_pid(m, 0, &from) || m->nelems < 3 || term_get_atom(m->ctl, &i, name)) {
		log_unhandled_once(n, c, m->op, "malformed, ignored");
		return;
	}
	struct proc *p = proc_by_name(&n->procs, name);
	if (p == NULL) {
		if (drop_log_note(&n->drops, "unknown_name"))
			log_info(n->settings.log,
				 "a message from %s to the name %s, which nothing here is registered as: dropped "
				 "(the next ones are counted, a line each %d s)",
				 dist_conn_peer(c), name, DROP_LOG_INTERVAL_MS / 1000);
		return;
	}
	dist_node_deliver(p, dist_conn_peer(c), &from, m->payload, m->payload_len);
}

/* SEND {2, Unused, ToPid} and SEND_SENDER {22, FromPid, ToPid}. */
static void on_send(struct dist_node *n, struct dist_conn *c, const struct dist_msg *m)
{
	erlang_pid to, from;
	bool has_from = m->op == DOP_SEND_SENDER && elem_pid(m, 0, &from);
	if (m->payload == NULL || !elem_pid(m, 1, &to)) {
		log_unhandled_once(n, c, m->op, "malformed, ignored");
		return;
	}
	struct proc *p = proc_by_pid(&n->procs, &to);
	if (p == NULL) {
		if (drop_log_note(&n->drops, "unknown_pid"))
			log_info(n->settings.log,
				 "a message from %s to %s.%u.%u, no process of this node (any more): dropped "
				 "(the next ones are counted, a line each %d s)",
				 dist_conn_peer(c), to.node, to.num, to.serial, DROP_LOG_INTERVAL_MS / 1000);
		return;
	}
	dist_node_deliver(p, dist_conn_peer(c), has_from ? &from : NULL, m->payload, m->payload_len);
}

/* MONITOR_P {19, FromPid, ToProc, Ref}. */
static void on_monitor(struct dist_node *n, struct dist_conn *c, const struct dist_msg *m)
{
	erlang_pid from;
	if (m->nelems < 3 || !elem_pid(m, 0, &from)) {
		log_unhandled_once(n, c, m->op, "malformed, ignored");
		return;
	}
	const char *watched, *ref;
	size_t watched_len, ref_len;
	elem_raw(m, 1, &watched, &watched_len);
	elem_raw(m, 2, &ref, &ref_len);
	struct proc *p = elem_target(n, m, 1);
	if (p == NULL || proc_watch(p, WATCH_MONITOR, &from, ref, ref_len, watched, watched_len) != 0)
		dist_node_send_monitor_exit(n, watched, watched_len, &from, ref, ref_len, "noproc");
}

/* DEMONITOR_P {20, FromPid, ToProc, Ref}. */
static void on_demonitor(struct dist_node *n, struct dist_conn *c, const struct dist_msg *m)
{
	if (m->nelems < 3) {
		log_unhandled_once(n, c, m->op, "malformed, ignored");
		return;
	}
	struct proc *p = elem_target(n, m, 1);
	const char *ref;
	size_t ref_len;
	elem_raw(m, 2, &ref, &ref_len);
	if (p != NULL)
		proc_unwatch_monitor(p, ref, ref_len);
}

/* LINK {1, FromPid, ToPid}. */
static void on_link(struct dist_node *n, struct dist_conn *c, const struct dist_msg *m)
{
	erlang_pid from, to;
	if (!elem_pid(m, 0, &from) || !elem_pid(m, 1, &to)) {
		log_unhandled_once(n, c, m->op, "malformed, ignored");
		return;
	}
	struct proc *p = proc_by_pid(&n->procs, &to);
	if (p == NULL || proc_watch(p, WATCH_LINK, &from, NULL, 0, NULL, 0) != 0)
		dist_node_send_exit(n, &to, &from, "noproc");
}

/* UNLINK_ID {35, Id, FromPid, ToPid} -> UNLINK_ID_ACK {36, Id, ToPid, FromPid};
 * the old UNLINK {4, FromPid, ToPid} has no acknowledgement. */
static void on_unlink(struct dist_node *n, struct dist_conn *c, const struct dist_msg *m)
{
	size_t base = m->op == DOP_UNLINK_ID ? 1 : 0;
	erlang_pid from, to;
	if (!elem_pid(m, base, &from) || !elem_pid(m, base + 1, &to)) {
		log_unhandled_once(n, c, m->op, "malformed, ignored");
		return;
	}
	struct proc *p = proc_by_pid(&n->procs, &to);
	if (p != NULL)
		proc_unwatch_link(p, &from);
	if (m->op != DOP_UNLINK_ID)
		return;
	const char *id;
	size_t id_len;
	elem_raw(m, 0, &id, &id_len);
	ei_x_buff spare, *ctl = dist_node_begin_ctl(n, &spare, 4, DOP_UNLINK_ID_ACK);
	if (ctl == NULL)
		return;
	if (term_x_append_raw(ctl, id, id_len) == 0 && ei_x_encode_pid(ctl, &to) == 0 &&
	    ei_x_encode_pid(ctl, &from) == 0)
		dist_conn_send(c, ctl->buff, (size_t)ctl->index, NULL, 0);
	scratch_put(&n->ctl_buf, ctl);
}

/* EXIT and EXIT2 (plain and trace-token forms): our procs are system
 * processes that trap exits; a link is removed, nothing dies. */
static void on_exit_signal(struct dist_node *n, struct dist_conn *c, const struct dist_msg *m)
{
	erlang_pid from, to;
	if (!elem_pid(m, 0, &from) || !elem_pid(m, 1, &to)) {
		log_unhandled_once(n, c, m->op, "malformed, ignored");
		return;
	}
	struct proc *p = proc_by_pid(&n->procs, &to);
	if (p != NULL && (m->op == DOP_EXIT || m->op == DOP_EXIT_TT))
		proc_unwatch_link(p, &from);
	log_debug(n->settings.log, "exit signal (op %ld) from %s ignored", m->op, dist_conn_peer(c));
}

/* A packet over max_message_bytes was discarded (dist_conn.h). If it was
 * a call to one of our procs, the caller hears {error, message_too_large}
 * from that proc, as from any reply; anything else is gone (logged by the
 * connection). Sender and tag come before the request, so the head the
 * connection kept holds them. */
void dist_node_hook_oversized(void *owner, struct dist_conn *c, const uint8_t *head, size_t head_len, size_t total)
{
	(void)c, (void)total;
	struct dist_node *n = owner;
	n->stats.oversized_dropped++;
	struct dist_msg m;
	if (head_len == 0 || dist_frame_parse_prefix(head, head_len, &m) != 0 || m.payload == NULL)
		return;
	struct proc *p = NULL;
	if ((m.op == DOP_REG_SEND || m.op == DOP_REG_SEND_TT) && m.nelems >= 3)
		p = elem_target(n, &m, 2);
	else if ((m.op == DOP_SEND || m.op == DOP_SEND_TT || m.op == DOP_SEND_SENDER ||
		  m.op == DOP_SEND_SENDER_TT) && m.nelems >= 2)
		p = elem_target(n, &m, 1);
	struct gen_call call;
	if (p == NULL || gen_call_parse_head(m.payload, m.payload_len, &call) != 1)
		return;
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (term_x_error_atom(&x, "message_too_large") == 0)
		dist_node_reply(n, &p->pid, &call, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

void dist_node_hook_packet(void *owner, struct dist_conn *c, const struct dist_msg *m)
{
	struct dist_node *n = owner;
	switch (m->op) {
	case DOP_REG_SEND:
	case DOP_REG_SEND_TT:
		on_reg_send(n, c, m);
		break;
	case DOP_SEND:
	case DOP_SEND_TT:
	case DOP_SEND_SENDER:
	case DOP_SEND_SENDER_TT:
		on_send(n, c, m);
		break;
	case DOP_MONITOR_P:
		on_monitor(n, c, m);
		break;
	case DOP_DEMONITOR_P:
		on_demonitor(n, c, m);
		break;
	case DOP_LINK:
		on_link(n, c, m);
		break;
	case DOP_UNLINK:
	case DOP_UNLINK_ID:
		on_unlink(n, c, m);
		break;
	case DOP_EXIT:
	case DOP_EXIT_TT:
	case DOP_EXIT2:
	case DOP_EXIT2_TT:
		on_exit_signal(n, c, m);
		break;
	case DOP_UNLINK_ID_ACK:
		break; /* we never unlink first; nothing to wait for */
	default:
		log_unhandled_once(n, c, m->op, "not supported, ignored");
		break;
	}
}

