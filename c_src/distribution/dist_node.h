/*
 * dist_node.h — this process as an Erlang node: the listening socket, the
 * epmd registration, the table of connections to peers, the processes
 * (struct proc) that peers address, and the routing of control messages
 * between them.
 *
 * Control messages handled (erl_dist_protocol): SEND, REG_SEND, SEND_SENDER,
 * MONITOR_P / DEMONITOR_P (an unknown target is answered at once with
 * MONITOR_P_EXIT noproc), LINK / UNLINK / UNLINK_ID (acknowledged with
 * UNLINK_ID_ACK), EXIT / EXIT2 and their trace-token forms. Anything else is
 * logged once per connection and ignored.
 *
 * Sending to a pid on a node we are not connected to opens a connection
 * (epmd look-up, handshake) and queues the message meanwhile; if the
 * connection never comes up, what it held is dropped. A sender that must
 * not lose a message that way sends only over a connection that is up
 * (dist_node_send_connected), keeps the message otherwise, and learns from
 * a reach listener when to try again.
 */
#ifndef SN_DIST_NODE_H
#define SN_DIST_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ei.h>

#include "etf/drop_log.h"

#include "base/evloop.h"
#include "protocol/gen_call.h"
#include "protocol/outlet.h"
#include "base/log.h"
#include "protocol/proc.h"

struct dist_node;

struct dist_node_config {
	struct evloop *loop;      /* not owned */
	const struct logger *log; /* not owned */
	const char *name;         /* "alive@host"; copied */
	const char *cookie;       /* copied */
	uint16_t port;            /* 0: ephemeral */
	size_t max_message_bytes;        /* largest packet accepted from a peer */
	size_t outq_pause;        /* per-connection output queue: pause reading above */
	size_t outq_max_bytes;          /* per-connection output queue: close above */
	uint32_t setup_ms;        /* handshake deadline */
	uint32_t ticktime_ms;     /* net_ticktime */
	uint32_t max_connections; /* connections beyond this are closed at once */
	/* true: not registered with epmd, so no peer can look the node up; it
	 * still listens and connects out, with creation 1. For harnesses that
	 * start many nodes (the fuzz targets); a node of a cluster registers. */
	bool unregistered;
	/* TLS for every connection (dist_tls.h), not owned, outlives the
	 * node; NULL: plain TCP. */
	struct dist_tls_ctx *tls;
};

/* Listens, registers with epmd (starting it if needed; not when
 * cfg->unregistered) and arms the tick timer. Returns the node, or NULL with *err = -EEXIST (name taken in
 * epmd), -EADDRINUSE (port in use), -ETIMEDOUT (no epmd), -ENOMEM, or
 * -errno. */
struct dist_node *dist_node_start(const struct dist_node_config *cfg, int *err);

/* Closes every connection, unregisters from epmd, frees all procs. */
void dist_node_free(struct dist_node *n);

const char *dist_node_name(const struct dist_node *n);
uint16_t dist_node_port(const struct dist_node *n);
uint32_t dist_node_creation(const struct dist_node *n);

/* Creates a proc (see proc_spawn); NULL with *err on failure. */
struct proc *dist_node_spawn(struct dist_node *n, const char *name, proc_handler_fn handler, void *ctx,
			     int *err);

/* Ends a proc: sends MONITOR_P_EXIT to its monitors and EXIT to its links
 * with `reason` (an atom), unregisters its name, frees it. */
void dist_node_exit(struct dist_node *n, struct proc *p, const char *reason);

/* Sends msg (encoded WITH the version byte) to a pid. A pid of this node is
 * delivered locally after the current callback; a remote one goes over its
 * connection, opening one if needed. Returns 0, -EINVAL (bad node name,
 * or an empty msg), -EHOSTUNREACH (that node failed to answer a moment
 * ago: dropped while the node backs off from it), -ENOMEM, or -ENOBUFS
 * (that peer's queue is full; the connection is closed and the message
 * dropped). */
int dist_node_send(struct dist_node *n, const erlang_pid *to, const char *msg, size_t len);

/* Sends msg (encoded WITH the version byte) to a pid only over a
 * connection to its node that is up now, so that nothing the caller keeps
 * is also queued anywhere: returns 0 once the message is queued on an up
 * connection (from then on it is lost only if that connection fails), or,
 * with nothing queued:
 *   -ENOTCONN      no connection to the node is up: one is being set up
 *                  (started now when none was); reach listeners hear how
 *                  it ends (dist_node_on_reach);
 *   -EHOSTUNREACH  an attempt to reach the node failed a moment ago and
 *                  its back-off has not run out: nothing was tried;
 *   -ESRCH         the pid is of an earlier incarnation of the node (its
 *                  creation is not the connected node's): nothing there
 *                  would take it;
 *   -EINVAL (our own name, a bad node name, an empty msg), -ENOMEM,
 *   -ENOBUFS (the peer's output queue is full: the connection is closed).
 * A pid of this node is delivered locally, as dist_node_send. */
int dist_node_send_connected(struct dist_node *n, const erlang_pid *to, const char *msg, size_t len);

/* Sends msg (with version byte) to {to_name, to_node} from `from`: to a
 * proc of this node after the current callback (as dist_node_send), to
 * another node over its connection, opening one if needed. Returns 0,
 * -ESRCH (to_node is this node and no proc has that name, or msg is
 * empty), -EINVAL (a bad node or proc name), -EHOSTUNREACH (to_node failed
 * to answer a moment ago: dropped while the node backs off from it),
 * -ENOMEM, or -ENOBUFS (that peer's queue is full; the connection is
 * closed and the message dropped). */
int dist_node_reg_send(struct dist_node *n, const erlang_pid *from, const char *to_name,
		       const char *to_node, const char *msg, size_t len);

/* Replies from `from` (a proc of this node) to a gen_server call: sends
 * {Tag, Reply} to the caller, or, with an [alias | Ref] tag and a peer that
 * knows aliases, to the alias (gen_call.h). `reply` is an encoded term
 * WITHOUT version byte. Returns as dist_node_send. */
int dist_node_reply(struct dist_node *n, const erlang_pid *from, const struct gen_call *call, const char *reply,
		    size_t reply_len);

/* The same for a caller `to` and its raw encoded Tag, borrowed for the call:
 * nothing of the (1 KB) pid is copied. Returns as dist_node_send. */
int dist_node_reply_to(struct dist_node *n, const erlang_pid *from, const erlang_pid *to, const char *tag,
		       size_t tag_len, const char *reply, size_t reply_len);

/* The outlet (protocol/outlet.h) whose sends are this node's
 * dist_node_send, dist_node_send_connected, dist_node_reg_send and
 * dist_node_reply_to: what a process of this node sends through. Borrows
 * `n`, which must outlive every holder. */
struct outlet dist_node_outlet(struct dist_node *n);

/* Closes every connection to `peer` now, for `why` (logged; a string
 * that outlives the call): its nodedown listeners are called once before
 * this returns, as for a connection the peer closed — also when no
 * connection was up, so that what waits for the peer is failed either
 * way — so call it where they may run (never from inside a proc's handler
 * that one of them touches).
 * For a peer the node can no longer keep its word to (a message that
 * could not be sent and may not be dropped silently). Returns how many
 * connections it closed (0: none to `peer`). */
int dist_node_disconnect(struct dist_node *n, const char *peer, const char *why);

/* Called when the last up connection to `peer` closes (as nodedown). */
typedef void (*nodedown_fn)(void *arg, const char *peer);

/* Adds a nodedown listener: fn(arg, peer) is called for every nodedown
 * until dist_node_off_nodedown. As many as wanted. Returns 0 or -ENOMEM. */
int dist_node_on_nodedown(struct dist_node *n, nodedown_fn fn, void *arg);
/* Removes a listener added with the same fn and arg (before arg is freed). */
void dist_node_off_nodedown(struct dist_node *n, nodedown_fn fn, void *arg);

/* How reaching `peer` went: up, a connection to it (ours or the peer's)
 * came up; !up, an attempt of ours to open one ended without coming up and
 * none is left, so the peer is backed off for a while (peer_backoff.h).
 * The loss of an up connection is a nodedown, not this. */
typedef void (*reach_fn)(void *arg, const char *peer, bool up);

/* Adds a reach listener: fn(arg, peer, up) is called for every such event
 * until dist_node_off_reach. As many as wanted. Returns 0 or -ENOMEM. */
int dist_node_on_reach(struct dist_node *n, reach_fn fn, void *arg);
/* Removes a listener added with the same fn and arg (before arg is freed). */
void dist_node_off_reach(struct dist_node *n, reach_fn fn, void *arg);

/* Called before the loop sleeps, once what the turn queued has been
 * written to the connections (as far as they took it): where a reply is
 * as good as sent. */
typedef void (*flushed_fn)(void *arg);

/* Sets the one flush listener (fn NULL: none): fn(arg) after every flush. */
void dist_node_set_flushed(struct dist_node *n, flushed_fn fn, void *arg);

/* Sets the one listener called before each turn's output is written (fn
 * NULL: none): the last moment to queue what is to leave this turn, such
 * as a batch built up over the turn. What fn sends is written with the
 * rest. */
void dist_node_set_flushing(struct dist_node *n, flushed_fn fn, void *arg);

/* Counters for the admin and for tests. */
struct dist_node_stats {
	uint64_t connections_accepted;
	uint64_t connections_refused;  /* over max_connections */
	uint64_t unknown_control_ops;
	uint64_t undeliverable;        /* to unknown names or pids */
	uint64_t oversized_dropped;    /* packets over max_message_bytes discarded */
	/* distribution traffic, every connection's since the node started */
	uint64_t bytes_in, bytes_out, packets_in, packets_out;
	uint32_t connections_up;       /* handshake done */
	uint32_t connections_open;     /* up or still setting up */
};
void dist_node_get_stats(const struct dist_node *n, struct dist_node_stats *out);

/* The messages counted as undeliverable, by reason (unknown_name,
 * unknown_pid, unreachable_peer), for the metrics page. Borrowed. */
const struct drop_log *dist_node_drops(const struct dist_node *n);

#endif
