/* dist_node_send.c — what the node sends: messages to pids and names (to
 * our own procs from the loop, to others over their connection, opened if
 * need be), replies to calls (to the alias where the caller's node takes
 * one), and the control messages of monitors and links (dist_node.h,
 * dist_node_internal.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/dist_ctl.h"
#include "distribution/dist_node_internal.h"
#include "protocol/gen_call.h"
#include "etf/term.h"
#include "etf/term_encode.h"

/* The connection to `peer`: the one there is (up, or still setting up),
 * else a new attempt. Returns 0 with *out, or -EINVAL (our own name, a bad
 * one), -EHOSTUNREACH (it failed a moment ago and is backed off: nothing
 * tried), -ENOMEM, or the connect's error. */
static int conn_to(struct dist_node *n, const char *peer, struct dist_conn **out)
{
	struct dist_conn *c = dist_node_find_conn(n, peer, NULL);
	if (c != NULL) {
		*out = c;
		return 0;
	}
	if (strcmp(peer, n->name) == 0)
		return -EINVAL;
	/* It failed a moment ago: no new attempt (and log line) per message. */
	if (!peer_backoff_may_try(&n->unreachable, peer, evloop_now_ms(n->settings.loop)))
		return -EHOSTUNREACH;
	c = dist_conn_new();
	if (c == NULL)
		return -ENOMEM;
	int rc = dist_conn_connect(c, &n->settings, &n->hooks, peer);
	if (rc) {
		log_warn(n->settings.log, "cannot connect to %s: %s", peer, rc == -EINVAL ? "bad node name" : strerror(-rc));
		dist_conn_destroy(c);
		return rc;
	}
	if ((rc = dist_node_link_conn(n, c)) != 0) {
		dist_conn_close(c, "out of memory");
		dist_conn_destroy(c);
		return rc;
	}
	*out = c;
	return 0;
}

/* Sends the control tuple ctl (with version byte) with an optional message
 * to `peer`, opening a connection if none exists. */
int dist_node_send_to_node(struct dist_node *n, const char *peer, const char *ctl, size_t ctl_len, const char *msg,
			size_t msg_len)
{
	struct dist_conn *c = NULL;
	int rc = conn_to(n, peer, &c);
	if (rc == -EHOSTUNREACH) {
		/* Dropped, as the attempt would have. */
		peer_backoff_dropped(&n->unreachable, peer, 1);
		(void)drop_log_note(&n->drops, "unreachable_peer"); /* peer_backoff logs it */
	}
	if (rc)
		return rc;
	return dist_conn_send(c, ctl, ctl_len, msg, msg_len);
}

/* Starts a control tuple {Op, ...} (with version byte) in the node's
 * control-tuple scratch, or in `spare` while that is taken. Returns the
 * buffer, to be given back with scratch_put(&n->ctl_buf, x), or NULL when
 * out of memory. */
ei_x_buff *dist_node_begin_ctl(struct dist_node *n, ei_x_buff *spare, int arity, long op)
{
	ei_x_buff *x = scratch_get(&n->ctl_buf, spare);
	if (x == NULL)
		return NULL;
	if (ei_x_encode_version(x) < 0 || ei_x_encode_tuple_header(x, arity) < 0 || term_x_encode_int(x, op) < 0) {
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
	struct local_msg *m = malloc(sizeof *m + len + kept_sender_size(from));
	if (m == NULL)
		return -ENOMEM;
	*m = (struct local_msg){.to_num = to->num, .to_serial = to->serial, .to_creation = to->creation, .len = len};
	memcpy(m->data, term, len);
	kept_sender_keep(&m->from, m->data + len, from);
	if (n->local_tail)
		n->local_tail->next = m;
	else
		n->local_head = m;
	n->local_tail = m;
	return 0;
}

const erlang_pid *dist_node_local_pids(const struct dist_node *n, const struct local_msg *m, erlang_pid *to,
				       erlang_pid *from)
{
	term_pid_set(to, n->name, strnlen(n->name, sizeof n->name - 1), m->to_num, m->to_serial, m->to_creation);
	return kept_sender_pid(&m->from, m->data + m->len, from);
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
	return dist_node_send_to_node(n, to->node, ctl, (size_t)ctl_len, msg, len);
}

int dist_node_send_connected(struct dist_node *n, const erlang_pid *to, const char *msg, size_t len)
{
	if (len < 1)
		return -EINVAL;
	if (is_local(n, to))
		return queue_local(n, NULL, to, msg + 1, len - 1);
	struct dist_conn *c = NULL;
	int rc = conn_to(n, to->node, &c);
	if (rc)
		return rc;
	/* Queued before the handshake ends, it would be dropped with the
	 * connection if that never came up: the caller keeps it instead. */
	if (!dist_conn_is_up(c))
		return -ENOTCONN;
	/* A pid of an earlier incarnation of the node (it restarted): the
	 * node would drop it as unknown, so it is not sent at all. */
	uint32_t creation = dist_conn_peer_creation(c);
	if (to->creation != 0 && creation != 0 && to->creation != creation)
		return -ESRCH;
	char ctl[DIST_CTL_MAX];
	int ctl_len = dist_ctl_send(ctl, to);
	if (ctl_len < 0)
		return -EINVAL;
	return dist_conn_send(c, ctl, (size_t)ctl_len, msg, len);
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
	return dist_node_send_to_node(n, to_node, ctl, (size_t)ctl_len, msg, len);
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
	struct dist_conn *c = dist_node_find_conn(n, to->node, NULL);
	if (c == NULL || !dist_conn_is_up(c) || !dist_conn_peer_has(c, DFLAG_ALIAS))
		return 1;
	char ctl[DIST_CTL_ALIAS_MAX];
	int ctl_len = dist_ctl_alias_send(ctl, from, ref, ref_len);
	if (ctl_len < 0)
		return 1;
	return dist_conn_send(c, ctl, (size_t)ctl_len, msg, len);
}

void dist_node_send_batch(void *arg, const erlang_pid *to, const char *msg, size_t len)
{
	(void)dist_node_send(arg, to, msg, len);
}

int dist_node_reply_to(struct dist_node *n, const erlang_pid *from, const erlang_pid *to, const char *tag,
		       size_t tag_len, const char *reply, size_t reply_len)
{
	/* A batching caller's reply leaves with the turn's others to it; alone
	 * when there is no room for it (reply_batch.h). */
	if (!is_local(n, to) && reply_batch_tag(tag, tag_len) &&
	    reply_batches_add(&n->reply_batches, to, tag, tag_len, reply, reply_len) == 0)
		return 0;
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
void dist_node_send_monitor_exit(struct dist_node *n, const char *watched, size_t watched_len,
			      const erlang_pid *watcher, const char *ref, size_t ref_len, const char *reason)
{
	ei_x_buff spare, *ctl = dist_node_begin_ctl(n, &spare, 5, DOP_MONITOR_P_EXIT);
	if (ctl == NULL)
		return;
	if (term_x_append_raw(ctl, watched, watched_len) == 0 && ei_x_encode_pid(ctl, watcher) == 0 &&
	    term_x_append_raw(ctl, ref, ref_len) == 0 && term_x_encode_atom(ctl, reason) == 0)
		dist_node_send_to_node(n, watcher->node, ctl->buff, (size_t)ctl->index, NULL, 0);
	scratch_put(&n->ctl_buf, ctl);
}

/* EXIT {3, FromPid, ToPid, Reason}. */
void dist_node_send_exit(struct dist_node *n, const erlang_pid *from, const erlang_pid *to, const char *reason)
{
	ei_x_buff spare, *ctl = dist_node_begin_ctl(n, &spare, 4, DOP_EXIT);
	if (ctl == NULL)
		return;
	if (ei_x_encode_pid(ctl, from) == 0 && ei_x_encode_pid(ctl, to) == 0 && term_x_encode_atom(ctl, reason) == 0)
		dist_node_send_to_node(n, to->node, ctl->buff, (size_t)ctl->index, NULL, 0);
	scratch_put(&n->ctl_buf, ctl);
}

