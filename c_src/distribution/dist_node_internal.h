/*
 * dist_node_internal.h — what the files of the node (dist_node.h) share:
 * its struct and the functions one calls in another. Calls run one way:
 *
 *   dist_node.c          start and stop, listening, ticks, the idle flush,
 *                        procs, listeners
 *     -> dist_node_routing.c   incoming control messages to procs
 *     -> dist_node_send.c      outgoing control messages and messages
 *     -> dist_node_conns.c     the connection table and the connections'
 *                              hooks (arbitration, up, closed)
 *
 * each file calling only those below it. Nobody else includes this.
 */
#ifndef SN_DIST_NODE_INTERNAL_H
#define SN_DIST_NODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "etf/drop_log.h"
#include "etf/kept_sender.h"
#include "base/scratch.h"
#include "distribution/dist_conn.h"
#include "distribution/dist_node.h"
#include "protocol/node_set.h"
#include "protocol/peer_backoff.h"
#include "protocol/proc.h"
#include "protocol/reply_batch.h"

/* A message to one of our own pids, delivered from the loop, not
 * re-entrantly. Its pids are kept as their numbers, where an erlang_pid
 * holds a node name buffer of over a kilobyte: `to` is always a pid of
 * this node, and the sender (as REG_SEND carries it) is kept as a
 * region's messages keep theirs, its node name the last bytes of `data`. */
struct local_msg {
	struct local_msg *next;
	uint32_t to_num, to_serial, to_creation;
	struct kept_sender from;
	size_t len;
	char data[]; /* the term (without version byte), then the sender's node name */
};

/* Writes m's recipient into *to and its sender, if it has one, into *from.
 * Returns from, or NULL when it has none (*from untouched). */
const erlang_pid *dist_node_local_pids(const struct dist_node *n, const struct local_msg *m, erlang_pid *to,
				       erlang_pid *from);

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
	/* The connections (opaque: dist_conn.h), in one array of conns_cap:
	 * the live ones at the front, [0, nconns), oldest first; the closed
	 * ones at the back, [conns_cap - ndead, conns_cap), freed before the
	 * loop sleeps. Linking one keeps room for every live one to close, so
	 * a connection closing never needs memory. */
	struct dist_conn **conns;
	uint32_t nconns, ndead, conns_cap;
	struct proc_table procs;
	struct local_msg *local_head, *local_tail;
	struct dist_node_stats stats;
	/* Reused encode buffers, one per nesting level (scratch.h):
	 * dist_node_reply encodes {Tag, Reply} into reply_buf; the control
	 * tuples of exit signals and acknowledgements go into ctl_buf. SEND
	 * and REG_SEND write theirs on the stack (dist_ctl.h). */
	struct scratch reply_buf;
	struct scratch ctl_buf;
	/* Replies to batched calls, one message per caller per turn
	 * (reply_batch.h); sent by on_idle before the output is written. */
	struct reply_batches reply_batches;
	/* The nodedown listeners (down set) and the reach listeners (reach
	 * set), in one array grown as they are added. */
	struct peer_listener {
		nodedown_fn down;
		reach_fn reach;
		void *arg;
	} *listeners;
	size_t nlisteners, listeners_cap;
	flushed_fn flushed;              /* dist_node_set_flushed; NULL: none */
	void *flushed_arg;
	flushed_fn flushing;             /* dist_node_set_flushing; NULL: none */
	void *flushing_arg;
	struct peer_backoff unreachable; /* peers our attempts failed to reach */
	struct node_set ever_up;         /* peers connected to since the start: losing one is worth a warning */
	/* Messages no proc here could take, by reason (their sum is
	 * dist_node_get_stats' undeliverable):
	 * unknown_name, unknown_pid, unreachable_peer (drop_log.h). */
	struct drop_log drops;
};

/* ---- dist_node_conns.c ---- */

/* The connection to `peer` other than `except`: an up one if there is one,
 * else one still setting up; NULL if none. */
struct dist_conn *dist_node_find_conn(struct dist_node *n, const char *peer, const struct dist_conn *except);

/* Adds a connection (from dist_conn_new, set up by dist_conn_accept or
 * _connect) to the table, which frees it once closed. Returns 0, or
 * -ENOMEM (not added: the caller destroys it). */
int dist_node_link_conn(struct dist_node *n, struct dist_conn *c);

/* Calls fn on every live connection, newest first; fn may close the one
 * it is given (which leaves the table). */
void dist_node_each_conn(struct dist_node *n, void (*fn)(struct dist_conn *c, void *arg), void *arg);

/* The connections' hooks (dist_conn.h), the node as their owner. */
enum conn_arbitration dist_node_hook_arbitrate(void *owner, struct dist_conn *in);
void dist_node_hook_replace(void *owner, struct dist_conn *in);
void dist_node_hook_up(void *owner, struct dist_conn *c);
void dist_node_hook_closed(void *owner, struct dist_conn *c, const char *why);

/* Frees the connections closed since the last call. */
void dist_node_free_dead(struct dist_node *n);

/* ---- dist_node_send.c ---- */

/* Sends the control tuple ctl (with version byte) with an optional message
 * (msg NULL) to `peer`, opening a connection if none exists. Returns 0,
 * -EINVAL (our own name), -EHOSTUNREACH (backing off from it), -ENOMEM,
 * or as dist_conn_send. */
int dist_node_send_to_node(struct dist_node *n, const char *peer, const char *ctl, size_t ctl_len,
			   const char *msg, size_t msg_len);

/* Starts a control tuple {Op, ...} (with version byte) in the node's
 * control-tuple scratch, or in `spare` while that is taken. Returns the
 * buffer, to be given back with scratch_put(&n->ctl_buf, x), or NULL when
 * out of memory. */
ei_x_buff *dist_node_begin_ctl(struct dist_node *n, ei_x_buff *spare, int arity, long op);

/* MONITOR_P_EXIT {21, Watched, WatcherPid, Ref, Reason} to the watcher. */
void dist_node_send_monitor_exit(struct dist_node *n, const char *watched, size_t watched_len,
				 const erlang_pid *watcher, const char *ref, size_t ref_len, const char *reason);

/* reply_batches' send: a caller's batch of replies, as dist_node_send
 * (errors are a lost send). `arg` is the node. */
void dist_node_send_batch(void *arg, const erlang_pid *to, const char *msg, size_t len);

/* EXIT {3, FromPid, ToPid, Reason}. */
void dist_node_send_exit(struct dist_node *n, const erlang_pid *from, const erlang_pid *to, const char *reason);

/* ---- dist_node_routing.c ---- */

/* Hands a message to a proc's handler; `via` is the peer it came from (our
 * own name for a local one). */
void dist_node_deliver(struct proc *p, const char *via, const erlang_pid *from, const char *term, size_t len);

/* The connections' packet and oversized hooks (dist_conn.h). */
void dist_node_hook_packet(void *owner, struct dist_conn *c, const struct dist_msg *m);
void dist_node_hook_oversized(void *owner, struct dist_conn *c, const uint8_t *head, size_t head_len,
			      size_t total);

#endif
