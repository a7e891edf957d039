/* dist_node.c — see dist_node.h. */
#include "distribution/dist_node.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bsd/string.h>

#include "distribution/dist_conn.h"
#include "distribution/dist_ctl.h"
#include "distribution/epmd.h"
#include "distribution/peer_backoff.h"
#include "base/scratch.h"
#include "etf/term.h"

/* A message to one of our own pids, delivered from the loop, not re-entrantly. */
struct local_msg {
	erlang_pid to;
	erlang_pid from; /* as REG_SEND carries it; valid if has_from */
	bool has_from;
	size_t len;
	struct local_msg *next;
	char term[]; /* without version byte */
};

struct dist_node {
	struct dist_settings settings; /* shared by every connection */
	struct dist_conn_hooks hooks;
	char name[NODE_NAME_BUF];
	char cookie[1024];
	int listen_fd;
	uint16_t port;
	int epmd_fd;
	uint32_t ticktime_ms;
	uint32_t max_connections;
	struct evloop_timer tick_timer;
	struct dist_conn *conns; /* live connections */
	uint32_t nconns;
	struct dist_conn *dead;  /* closed, freed before the loop sleeps */
	struct proc_table procs;
	struct local_msg *local_head, *local_tail;
	struct dist_node_stats stats;
	/* Reused encode buffers, one per nesting level (scratch.h):
	 * dist_node_reply encodes {Tag, Reply} into reply_buf; the control
	 * tuples of exit signals and acknowledgements go into ctl_buf. SEND
	 * and REG_SEND write theirs on the stack (dist_ctl.h). */
	struct scratch reply_buf;
	struct scratch ctl_buf;
	struct nodedown_listener {
		nodedown_fn fn;
		void *arg;
	} *nodedown;                     /* grown as listeners are added */
	size_t nnodedown, nodedown_cap;
	flushed_fn flushed;              /* dist_node_set_flushed; NULL: none */
	void *flushed_arg;
	struct peer_backoff unreachable; /* peers our attempts failed to reach */
};

int dist_node_on_nodedown(struct dist_node *n, nodedown_fn fn, void *arg)
{
	if (n->nnodedown == n->nodedown_cap) {
		size_t cap = n->nodedown_cap ? 2 * n->nodedown_cap : 8;
		struct nodedown_listener *l = realloc(n->nodedown, cap * sizeof *l);
		if (l == NULL)
			return -ENOMEM;
		n->nodedown = l;
		n->nodedown_cap = cap;
	}
	n->nodedown[n->nnodedown].fn = fn;
	n->nodedown[n->nnodedown++].arg = arg;
	return 0;
}

void dist_node_off_nodedown(struct dist_node *n, nodedown_fn fn, void *arg)
{
	for (size_t k = 0; k < n->nnodedown; k++) {
		if (n->nodedown[k].fn == fn && n->nodedown[k].arg == arg) {
			n->nodedown[k] = n->nodedown[--n->nnodedown];
			return;
		}
	}
}

void dist_node_set_flushed(struct dist_node *n, flushed_fn fn, void *arg)
{
	n->flushed = fn;
	n->flushed_arg = arg;
}

/* ---- connection table ---- */

static struct dist_conn *find_conn(struct dist_node *n, const char *peer, const struct dist_conn *except)
{
	struct dist_conn *best = NULL;
	for (struct dist_conn *c = n->conns; c; c = c->next) {
		if (c == except || c->state == CONN_CLOSED || strcmp(c->peer, peer) != 0)
			continue;
		if (c->state == CONN_UP)
			return c;
		best = c;
	}
	return best;
}

static void link_conn(struct dist_node *n, struct dist_conn *c)
{
	c->next = n->conns;
	n->conns = c;
	n->nconns++;
}

static void unlink_conn(struct dist_node *n, struct dist_conn *c)
{
	for (struct dist_conn **pc = &n->conns; *pc; pc = &(*pc)->next) {
		if (*pc == c) {
			*pc = c->next;
			n->nconns--;
			/* its traffic stays in the node's totals */
			n->stats.bytes_in += c->bytes_in;
			n->stats.bytes_out += c->bytes_out;
			n->stats.packets_in += c->packets_in;
			n->stats.packets_out += c->packets_out;
			return;
		}
	}
}

/* ---- hooks from connections ---- */

static enum conn_arbitration hook_arbitrate(void *owner, struct dist_conn *in)
{
	struct dist_node *n = owner;
	if (strcmp(in->peer, n->name) == 0)
		return CONN_ARB_REFUSE;
	struct dist_conn *other = find_conn(n, in->peer, in);
	if (other == NULL)
		return CONN_ARB_OK;
	if (other->state == CONN_UP)
		return CONN_ARB_ALIVE;
	if (!other->initiator) {
		/* Two half-open accepts from one peer: the older is stale. */
		dist_conn_close(other, "replaced by a newer connection attempt");
		return CONN_ARB_OK;
	}
	/* Simultaneous connect, decided as net_kernel does: the greater
	 * node name keeps its own attempt. */
	if (strcmp(n->name, in->peer) > 0)
		return CONN_ARB_NOK;
	dist_conn_adopt_pending(in, other);
	dist_conn_close(other, "simultaneous connect: peer's attempt wins");
	return CONN_ARB_OK_SIMULTANEOUS;
}

static void hook_replace(void *owner, struct dist_conn *in)
{
	struct dist_node *n = owner;
	struct dist_conn *old = find_conn(n, in->peer, in);
	if (old != NULL)
		dist_conn_close(old, "peer reconnected");
}

static void hook_up(void *owner, struct dist_conn *c)
{
	struct dist_node *n = owner;
	struct peer_failing was;
	peer_backoff_reached(&n->unreachable, c->peer, &was);
	if (was.failures > 0)
		log_info(n->settings.log, "%s answers again, after %u failed connection attempts; "
			 "%llu messages to it were dropped meanwhile", c->peer, was.failures,
			 (unsigned long long)was.dropped);
	/* Packets that waited on a connection that lost a race go out now. */
	for (struct dist_conn *o = n->conns; o; o = o->next) {
		if (o != c && o->state == CONN_NOK_WAIT && strcmp(o->peer, c->peer) == 0) {
			dist_conn_adopt_pending(c, o);
			dist_conn_close(o, "peer's connection is up");
		}
	}
}

/* An attempt of ours that never came up: the peer is gone or not there
 * yet. Said once, when it starts failing; the next attempts back off. */
static void attempt_failed(struct dist_node *n, struct dist_conn *c, const char *why)
{
	uint32_t failures = peer_backoff_failed(&n->unreachable, c->peer, evloop_now_ms(n->settings.loop));
	peer_backoff_dropped(&n->unreachable, c->peer, c->pending_packets);
	if (failures <= 1 && c->pending_packets > 0)
		log_warn(n->settings.log, "cannot reach %s (%s): %llu messages to it dropped; trying again with "
			 "back-off, and saying nothing more until it answers", c->peer, why,
			 (unsigned long long)c->pending_packets);
	else if (failures <= 1)
		log_warn(n->settings.log, "cannot reach %s (%s); trying again with back-off, and saying nothing "
			 "more until it answers", c->peer, why);
	else
		log_debug(n->settings.log, "cannot reach %s (%s), attempt %u: %llu messages to it dropped", c->peer, why,
			  failures, (unsigned long long)c->pending_packets);
}

static void hook_closed(void *owner, struct dist_conn *c, const char *why)
{
	struct dist_node *n = owner;
	/* Not when another connection to the peer lives on: our attempt lost
	 * a simultaneous connect, and what it held went to the winner. */
	if (c->initiator && !c->was_up && c->peer[0] != '\0' && find_conn(n, c->peer, c) == NULL)
		attempt_failed(n, c, why);
	unlink_conn(n, c);
	c->next = n->dead;
	n->dead = c;
	if (c->peer[0] != '\0' && find_conn(n, c->peer, c) == NULL) {
		/* The peer's monitors and links on our procs die with the
		 * connection; its side delivers noconnection by itself. */
		proc_table_forget_node(&n->procs, c->peer);
		if (c->was_up)
			for (size_t k = 0; k < n->nnodedown; k++)
				n->nodedown[k].fn(n->nodedown[k].arg, c->peer);
	}
}

static void free_dead(struct dist_node *n)
{
	while (n->dead) {
		struct dist_conn *c = n->dead;
		n->dead = c->next;
		dist_conn_free(c);
		free(c);
	}
}

/* ---- encoding control messages ---- */

/* Sends the control tuple ctl (with version byte) with an optional message
 * to `peer`, opening a connection if none exists. */
static int send_to_node(struct dist_node *n, const char *peer, const char *ctl, size_t ctl_len, const char *msg,
			size_t msg_len)
{
	struct dist_conn *c = find_conn(n, peer, NULL);
	if (c == NULL) {
		if (strcmp(peer, n->name) == 0)
			return -EINVAL;
		if (!peer_backoff_may_try(&n->unreachable, peer, evloop_now_ms(n->settings.loop))) {
			/* It failed a moment ago: no new attempt (and log line)
			 * per message. Dropped, as the attempt would have. */
			peer_backoff_dropped(&n->unreachable, peer, 1);
			n->stats.undeliverable++;
			return -EHOSTUNREACH;
		}
		c = malloc(sizeof *c);
		if (c == NULL)
			return -ENOMEM;
		int rc = dist_conn_connect(c, &n->settings, &n->hooks, peer);
		if (rc) {
			log_warn(n->settings.log, "cannot connect to %s: %s", peer,
				 rc == -EINVAL ? "bad node name" : strerror(-rc));
			dist_conn_free(c);
			free(c);
			return rc;
		}
		link_conn(n, c);
	}
	return dist_conn_send(c, ctl, ctl_len, msg, msg_len);
}

/* Starts a control tuple {Op, ...} (with version byte) in the node's
 * control-tuple scratch, or in `spare` while that is taken. Returns the
 * buffer, to be given back with scratch_put(&n->ctl_buf, x), or NULL when
 * out of memory. */
static ei_x_buff *begin_ctl(struct dist_node *n, ei_x_buff *spare, int arity, long op)
{
	ei_x_buff *x = scratch_get(&n->ctl_buf, spare);
	if (x == NULL)
		return NULL;
	if (ei_x_encode_version(x) < 0 || ei_x_encode_tuple_header(x, arity) < 0 || ei_x_encode_long(x, op) < 0) {
		scratch_put(&n->ctl_buf, x);
		return NULL;
	}
	return x;
}

static bool is_local(const struct dist_node *n, const erlang_pid *pid)
{
	return strcmp(pid->node, n->name) == 0;
}

static int queue_local(struct dist_node *n, const erlang_pid *from, const erlang_pid *to, const char *term,
		       size_t len)
{
	struct local_msg *m = malloc(sizeof *m + len);
	if (m == NULL)
		return -ENOMEM;
	m->to = *to;
	m->has_from = from != NULL;
	if (from != NULL)
		m->from = *from;
	m->len = len;
	m->next = NULL;
	memcpy(m->term, term, len);
	if (n->local_tail)
		n->local_tail->next = m;
	else
		n->local_head = m;
	n->local_tail = m;
	return 0;
}

int dist_node_send(struct dist_node *n, const erlang_pid *to, const char *msg, size_t len)
{
	if (len < 1)
		return -EINVAL;
	if (is_local(n, to))
		return queue_local(n, NULL, to, msg + 1, len - 1);
	char ctl[DIST_CTL_MAX];
	int ctl_len = dist_ctl_send(ctl, to);
	if (ctl_len < 0)
		return -EINVAL;
	return send_to_node(n, to->node, ctl, (size_t)ctl_len, msg, len);
}

int dist_node_reg_send(struct dist_node *n, const erlang_pid *from, const char *to_name,
		       const char *to_node, const char *msg, size_t len)
{
	if (strcmp(to_node, n->name) == 0) {
		struct proc *p = proc_by_name(&n->procs, to_name);
		if (p == NULL || len < 1)
			return -ESRCH;
		return queue_local(n, from, &p->pid, msg + 1, len - 1);
	}
	char ctl[DIST_CTL_MAX];
	int ctl_len = dist_ctl_reg_send(ctl, from, to_name);
	if (ctl_len < 0)
		return -EINVAL;
	return send_to_node(n, to_node, ctl, (size_t)ctl_len, msg, len);
}

int dist_node_reply(struct dist_node *n, const erlang_pid *from, const struct gen_call *call, const char *reply,
		    size_t reply_len)
{
	return dist_node_reply_to(n, from, &call->from, call->tag, call->tag_len, reply, reply_len);
}

/* Sends a reply to the alias in its tag if the caller's node takes alias
 * sends (it has a connection up with DFLAG_ALIAS): 0 or -errno once sent
 * that way, 1 if it is for the plain path. */
static int send_to_alias(struct dist_node *n, const erlang_pid *from, const erlang_pid *to, const char *tag,
			 size_t tag_len, const char *msg, size_t len)
{
	const char *ref;
	size_t ref_len;
	if (is_local(n, to) || !gen_call_tag_alias(tag, tag_len, &ref, &ref_len))
		return 1;
	struct dist_conn *c = find_conn(n, to->node, NULL);
	if (c == NULL || c->state != CONN_UP || !(c->peer_flags & DFLAG_ALIAS))
		return 1;
	char ctl[DIST_CTL_ALIAS_MAX];
	int ctl_len = dist_ctl_alias_send(ctl, from, ref, ref_len);
	if (ctl_len < 0)
		return 1;
	return dist_conn_send(c, ctl, (size_t)ctl_len, msg, len);
}

int dist_node_reply_to(struct dist_node *n, const erlang_pid *from, const erlang_pid *to, const char *tag,
		       size_t tag_len, const char *reply, size_t reply_len)
{
	ei_x_buff spare, *x = scratch_get(&n->reply_buf, &spare);
	if (x == NULL)
		return -ENOMEM;
	int rc = gen_call_encode_reply_tag(x, tag, tag_len, reply, reply_len);
	if (rc == 0)
		rc = send_to_alias(n, from, to, tag, tag_len, x->buff, (size_t)x->index);
	if (rc == 1)
		rc = dist_node_send(n, to, x->buff, (size_t)x->index);
	scratch_put(&n->reply_buf, x);
	return rc;
}

/* MONITOR_P_EXIT {21, Watched, WatcherPid, Ref, Reason}. */
static void send_monitor_exit(struct dist_node *n, const char *watched, size_t watched_len,
			      const erlang_pid *watcher, const char *ref, size_t ref_len, const char *reason)
{
	ei_x_buff spare, *ctl = begin_ctl(n, &spare, 5, DOP_MONITOR_P_EXIT);
	if (ctl == NULL)
		return;
	if (term_x_append_raw(ctl, watched, watched_len) == 0 && ei_x_encode_pid(ctl, watcher) == 0 &&
	    term_x_append_raw(ctl, ref, ref_len) == 0 && ei_x_encode_atom(ctl, reason) == 0)
		send_to_node(n, watcher->node, ctl->buff, (size_t)ctl->index, NULL, 0);
	scratch_put(&n->ctl_buf, ctl);
}

/* EXIT {3, FromPid, ToPid, Reason}. */
static void send_exit(struct dist_node *n, const erlang_pid *from, const erlang_pid *to, const char *reason)
{
	ei_x_buff spare, *ctl = begin_ctl(n, &spare, 4, DOP_EXIT);
	if (ctl == NULL)
		return;
	if (ei_x_encode_pid(ctl, from) == 0 && ei_x_encode_pid(ctl, to) == 0 && ei_x_encode_atom(ctl, reason) == 0)
		send_to_node(n, to->node, ctl->buff, (size_t)ctl->index, NULL, 0);
	scratch_put(&n->ctl_buf, ctl);
}

/* ---- procs ---- */

struct proc *dist_node_spawn(struct dist_node *n, const char *name, proc_handler_fn handler, void *ctx,
			     int *err)
{
	return proc_spawn(&n->procs, n->name, n->settings.creation, name, handler, ctx, err);
}

void dist_node_exit(struct dist_node *n, struct proc *p, const char *reason)
{
	erlang_pid from = p->pid;
	struct watcher *ws = proc_remove(&n->procs, p);
	for (struct watcher *w = ws; w; w = w->next) {
		if (w->kind == WATCH_MONITOR)
			send_monitor_exit(n, w->watched, w->watched_len, &w->pid, w->ref, w->ref_len, reason);
		else
			send_exit(n, &from, &w->pid, reason);
	}
	watcher_list_free(ws);
}

/* ---- routing incoming control messages ---- */

static void deliver(struct proc *p, const char *via, const erlang_pid *from, const char *term, size_t len)
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
	uint64_t bit = op >= 0 && op < 64 ? 1ULL << op : 1ULL << 63;
	if (c->logged_ops & bit)
		return;
	c->logged_ops |= bit;
	log_info(n->settings.log, "from %s: control message %ld %s (logged once)", c->peer, op, what);
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
		n->stats.undeliverable++;
		log_debug(n->settings.log, "message from %s to unregistered name %s dropped", c->peer, name);
		return;
	}
	deliver(p, c->peer, &from, m->payload, m->payload_len);
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
		n->stats.undeliverable++;
		return;
	}
	deliver(p, c->peer, has_from ? &from : NULL, m->payload, m->payload_len);
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
		send_monitor_exit(n, watched, watched_len, &from, ref, ref_len, "noproc");
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
		send_exit(n, &to, &from, "noproc");
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
	ei_x_buff spare, *ctl = begin_ctl(n, &spare, 4, DOP_UNLINK_ID_ACK);
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
	log_debug(n->settings.log, "exit signal (op %ld) from %s ignored", m->op, c->peer);
}

/* A packet over max_message_bytes was discarded (dist_conn.h). If it was
 * a call to one of our procs, the caller hears {error, message_too_large}
 * from that proc, as from any reply; anything else is gone (logged by the
 * connection). Sender and tag come before the request, so the head the
 * connection kept holds them. */
static void hook_oversized(void *owner, struct dist_conn *c, const uint8_t *head, size_t head_len, size_t total)
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

static void hook_packet(void *owner, struct dist_conn *c, const struct dist_msg *m)
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

/* ---- listening, ticks, idle work ---- */

static void on_accept(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	(void)loop;
	(void)events;
	struct dist_node *n = arg;
	/* Bounded per event, so a connection flood cannot starve the loop. */
	for (int k = 0; k < 64; k++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn(n->settings.log, "accept: %s", strerror(errno));
			return;
		}
		if (n->nconns >= n->max_connections) {
			if (n->stats.connections_refused++ % 1000 == 0)
				log_warn(n->settings.log, "connection refused: %u connections open (max_connections)",
					 n->nconns);
			close(cfd);
			continue;
		}
		struct dist_conn *c = malloc(sizeof *c);
		if (c == NULL) {
			close(cfd);
			continue;
		}
		if (dist_conn_accept(c, &n->settings, &n->hooks, cfd)) {
			dist_conn_free(c);
			free(c);
			continue;
		}
		n->stats.connections_accepted++;
		link_conn(n, c);
	}
}

static void on_tick(struct evloop *loop, void *arg)
{
	struct dist_node *n = arg;
	uint64_t interval = n->ticktime_ms / 4;
	for (struct dist_conn *c = n->conns, *next; c; c = next) {
		next = c->next;
		dist_conn_tick(c, interval);
	}
	evloop_timer_start(loop, &n->tick_timer, interval);
}

static void on_epmd_io(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	struct dist_node *n = arg;
	char buf[64];
	ssize_t r = recv(fd, buf, sizeof buf, 0);
	if (r > 0 || (r < 0 && (errno == EAGAIN || errno == EINTR)))
		return;
	(void)events;
	log_warn(n->settings.log, "epmd closed our registration; peers can no longer find this node by name");
	evloop_unwatch(loop, fd);
	close(fd);
	n->epmd_fd = -1;
}

/* Before the loop sleeps: deliver local messages, flush output in one write
 * per connection, free closed connections. */
static bool on_idle(struct evloop *loop, void *arg)
{
	(void)loop;
	struct dist_node *n = arg;
	/* Only the messages queued so far: handlers may queue more, which run
	 * on the next turn, so one chatty proc cannot hold the loop. */
	struct local_msg *batch = n->local_head;
	n->local_head = n->local_tail = NULL;
	while (batch) {
		struct local_msg *m = batch;
		batch = m->next;
		struct proc *p = proc_by_pid(&n->procs, &m->to);
		if (p != NULL)
			deliver(p, n->name, m->has_from ? &m->from : NULL, m->term, m->len);
		else
			n->stats.undeliverable++;
		free(m);
	}
	for (struct dist_conn *c = n->conns, *next; c; c = next) {
		next = c->next;
		dist_conn_flush_output(c);
	}
	if (n->flushed != NULL)
		n->flushed(n->flushed_arg);
	free_dead(n);
	return n->local_head != NULL;
}

static int listen_on(uint16_t port, uint16_t *bound)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t sl = sizeof sa;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 512) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	*bound = ntohs(sa.sin_port);
	return fd;
}

struct dist_node *dist_node_start(const struct dist_node_config *cfg, int *err)
{
	struct dist_node *n = calloc(1, sizeof *n);
	if (n == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	strlcpy(n->name, cfg->name, sizeof n->name);
	strlcpy(n->cookie, cfg->cookie, sizeof n->cookie);
	n->listen_fd = n->epmd_fd = -1;
	n->ticktime_ms = cfg->ticktime_ms < 400 ? 400 : cfg->ticktime_ms;
	n->max_connections = cfg->max_connections;
	n->settings = (struct dist_settings){
		.loop = cfg->loop, .log = cfg->log, .name = n->name, .cookie = n->cookie,
		.max_message_bytes = cfg->max_message_bytes, .outq_pause = cfg->outq_pause, .outq_max_bytes = cfg->outq_max_bytes,
		.setup_ms = cfg->setup_ms, .tls = cfg->tls,
	};
	n->hooks = (struct dist_conn_hooks){
		.owner = n, .arbitrate = hook_arbitrate, .replace = hook_replace, .up = hook_up,
		.packet = hook_packet, .oversized = hook_oversized, .closed = hook_closed,
	};
	evloop_timer_init(&n->tick_timer, on_tick, n);
	scratch_init(&n->reply_buf);
	scratch_init(&n->ctl_buf);
	n->settings.resolver = resolver_new(cfg->loop);
	if (n->settings.resolver == NULL) {
		*err = -errno;
		free(n);
		return NULL;
	}

	int rc = listen_on(cfg->port, &n->port);
	if (rc < 0)
		goto fail;
	n->listen_fd = rc;
	char alive[NODE_NAME_BUF];
	strlcpy(alive, n->name, sizeof alive);
	*strchr(alive, '@') = '\0';
	uint32_t creation = 1;
	if (!cfg->unregistered) {
		rc = epmd_register(cfg->log, alive, n->port, 10000, &creation);
		if (rc < 0)
			goto fail;
		n->epmd_fd = rc;
	}
	n->settings.creation = creation;
	if ((rc = evloop_watch(cfg->loop, n->listen_fd, EPOLLIN, on_accept, n)) != 0 ||
	    (n->epmd_fd >= 0 && (rc = evloop_watch(cfg->loop, n->epmd_fd, EPOLLIN, on_epmd_io, n)) != 0) ||
	    (rc = evloop_timer_start(cfg->loop, &n->tick_timer, n->ticktime_ms / 4)) != 0)
		goto fail;
	evloop_set_idle(cfg->loop, on_idle, n);
	*err = 0;
	return n;
fail:
	*err = rc;
	dist_node_free(n);
	return NULL;
}

void dist_node_free(struct dist_node *n)
{
	if (n == NULL)
		return;
	struct evloop *loop = n->settings.loop;
	/* Best effort: replies already queued (the answer to `leave`, say)
	 * leave before the sockets close. */
	for (struct dist_conn *c = n->conns, *next; c; c = next) {
		next = c->next;
		dist_conn_flush_output(c);
	}
	while (n->conns)
		dist_conn_close(n->conns, "node stopping");
	free_dead(n);
	evloop_timer_stop(loop, &n->tick_timer);
	if (n->listen_fd >= 0) {
		evloop_unwatch(loop, n->listen_fd);
		close(n->listen_fd);
	}
	if (n->epmd_fd >= 0) {
		evloop_unwatch(loop, n->epmd_fd);
		close(n->epmd_fd); /* epmd unregisters the name */
	}
	while (n->local_head) {
		struct local_msg *m = n->local_head;
		n->local_head = m->next;
		free(m);
	}
	proc_table_free(&n->procs);
	free(n->nodedown);
	scratch_free(&n->reply_buf);
	scratch_free(&n->ctl_buf);
	peer_backoff_free(&n->unreachable);
	resolver_free(n->settings.resolver);
	evloop_set_idle(loop, NULL, NULL);
	free(n);
}

const char *dist_node_name(const struct dist_node *n) { return n->name; }
uint16_t dist_node_port(const struct dist_node *n) { return n->port; }
uint32_t dist_node_creation(const struct dist_node *n) { return n->settings.creation; }

void dist_node_get_stats(const struct dist_node *n, struct dist_node_stats *out)
{
	*out = n->stats;
	out->connections_up = 0;
	out->connections_open = 0;
	for (const struct dist_conn *c = n->conns; c; c = c->next) {
		out->connections_up += c->state == CONN_UP;
		out->connections_open++;
		out->bytes_in += c->bytes_in;
		out->bytes_out += c->bytes_out;
		out->packets_in += c->packets_in;
		out->packets_out += c->packets_out;
	}
}
