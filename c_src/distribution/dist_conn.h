/*
 * dist_conn.h — one distribution connection: its socket, the handshake state
 * machine (as acceptor or initiator), packet framing, keep-alive ticks and a
 * bounded output queue.
 *
 * A connection knows nothing of processes or routing. It reports to its owner
 * (the node, dist_node.c) through `struct dist_conn_hooks`, and asks the owner
 * to arbitrate when a peer connects while another connection to the same peer
 * exists (simultaneous connect, or a peer that restarted).
 *
 * States (every change goes through conn_set_state(), which logs it):
 *
 *   initiator: RESOLVING (host name, then epmd) -> CONNECTING (TCP) -> STATUS_WAIT
 *              -> CHALLENGE_WAIT -> ACK_WAIT -> UP
 *              STATUS_WAIT -"nok"-> NOK_WAIT: no socket; the packets wait
 *              for the peer's own connection to us, which takes them over.
 *   acceptor:  NAME_WAIT -> [ALIVE_WAIT] -> REPLY_WAIT -> UP
 *   any:       -> CLOSED (socket closed; the object is freed by the owner
 *              after the current callback returns)
 *
 * Packets sent before UP wait in `pending` and are flushed, in order, when
 * the connection comes up. Each handshake state has a deadline (setup_ms).
 *
 * With TLS (dist_settings.tls) every byte goes through a TLS session over
 * the socket, whose handshake runs within the first reads and writes; the
 * distribution handshake's messages are then 4-byte framed (dist_tls.h).
 */
#ifndef SN_DIST_CONN_H
#define SN_DIST_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "base/bytebuf.h"
#include "protocol/dist_frame.h"
#include "protocol/handshake.h"
#include "protocol/dist_tls.h"
#include "protocol/epmd.h"
#include "base/evloop.h"
#include "base/log.h"
#include "base/resolver.h"

enum conn_state {
	CONN_RESOLVING,
	CONN_CONNECTING,
	CONN_STATUS_WAIT,
	CONN_CHALLENGE_WAIT,
	CONN_ACK_WAIT,
	CONN_NOK_WAIT,
	CONN_NAME_WAIT,
	CONN_ALIVE_WAIT,
	CONN_REPLY_WAIT,
	CONN_UP,
	CONN_CLOSED,
};

const char *conn_state_name(enum conn_state s);

/* What the acceptor answers when a peer introduces itself. */
enum conn_arbitration {
	CONN_ARB_OK,             /* no other connection: go on */
	CONN_ARB_OK_SIMULTANEOUS,/* ours loses the race: go on with this one */
	CONN_ARB_NOK,            /* ours wins the race: refuse this one */
	CONN_ARB_ALIVE,          /* one is up: ask the peer whether to replace it */
	CONN_ARB_REFUSE,         /* not allowed (e.g. a peer claiming our own name) */
};

/* Settings shared by every connection of a node; owned by the node. */
struct dist_settings {
	struct evloop *loop;
	const struct logger *log;
	const char *name;   /* our node name */
	const char *cookie;
	uint32_t creation;
	size_t max_message_bytes;   /* largest packet body accepted from a peer */
	size_t outq_pause;   /* stop reading from a peer whose output queue is above this */
	size_t outq_max_bytes;     /* close a connection whose output queue is above this */
	uint32_t setup_ms;   /* handshake deadline, as net_setuptime */
	struct resolver *resolver; /* host names of peers we connect to */
	/* TLS for every connection, both roles (dist_tls.h); NULL: plain TCP. */
	struct dist_tls_ctx *tls;
};

/* A connection; opaque to its owner (the fields are dist_conn_internal.h's). */
struct dist_conn;

/* Upcalls into the owner. Each may close connections (including this one). */
/* How much of a packet over max_message_bytes is kept while the rest is
 * read past: the control tuple and a call's '$gen_call', pid and tag fit
 * (each pid or reference is at most ~1 KB). */
#define DIST_CONN_OVERSIZED_HEAD 8192

struct dist_conn_hooks {
	void *owner;
	enum conn_arbitration (*arbitrate)(void *owner, struct dist_conn *incoming);
	/* The peer answered "alive" with true: the owner closes the old one. */
	void (*replace)(void *owner, struct dist_conn *incoming);
	void (*up)(void *owner, struct dist_conn *c);
	void (*packet)(void *owner, struct dist_conn *c, const struct dist_msg *m);
	/* A packet longer than max_message_bytes went by, discarded: only its
	 * first head_len bytes (at most DIST_CONN_OVERSIZED_HEAD; maybe 0) are
	 * shown, valid during the call, not validated — enough to tell a
	 * call's caller it was too large. `total` is its length. */
	void (*oversized)(void *owner, struct dist_conn *c, const uint8_t *head, size_t head_len, size_t total);
	/* The connection is closing; `why` says why. Called once, before the
	 * owner may free it. A connection we initiated that never came up is
	 * not logged here: the owner says what it means (peer_backoff.h), and
	 * what was queued for it (pending_packets) is dropped. */
	void (*closed)(void *owner, struct dist_conn *c, const char *why);
};


/* Initialises c as an acceptor on an accepted, non-blocking socket fd (c
 * takes ownership of fd). Returns 0 or -errno (fd closed). */
int dist_conn_accept(struct dist_conn *c, const struct dist_settings *settings,
		     const struct dist_conn_hooks *hooks, int fd);

/* Initialises c as an initiator towards `peer` ("alive@host") and starts
 * resolving the host (then the epmd look-up). Returns 0, or -EINVAL for a bad
 * name, or -errno. On error c holds no resources. A host that does not
 * resolve closes the connection later, from the loop. */
int dist_conn_connect(struct dist_conn *c, const struct dist_settings *settings,
		      const struct dist_conn_hooks *hooks, const char *peer);

/* Initialises c as an initiator towards `peer` over `fd`, a non-blocking
 * stream socket the caller connected (or whose connect is in progress):
 * no look-up, the handshake starts once fd is writable. c takes ownership
 * of fd. For callers that make the connection themselves (the tests, the
 * fuzz target). Returns 0, or -EINVAL for a bad name, or -errno; on error
 * fd is closed and c holds no resources. */
int dist_conn_connect_socket(struct dist_conn *c, const struct dist_settings *settings,
			     const struct dist_conn_hooks *hooks, const char *peer, int fd);

/* Queues one packet: 4-byte length, 'p', then the two encoded parts (each
 * starting with the version byte; msg may be NULL). Before UP the packet waits
 * in `pending`. Returns 0, -ENOMEM, or -ENOBUFS when the queue limit is
 * exceeded (the connection is then closed). */
int dist_conn_send(struct dist_conn *c, const char *ctl, size_t ctl_len, const char *msg, size_t msg_len);

/* Moves the packets waiting in `from` (which lost a race) to the end of c's
 * pending queue, or straight to the socket if c is up. */
void dist_conn_adopt_pending(struct dist_conn *c, struct dist_conn *from);

/* Keep-alive duty, called periodically by the owner with the tick interval
 * (net_ticktime / 4): sends a tick if nothing was written for `interval_ms`,
 * and closes the connection if nothing was read for 4 intervals. */
void dist_conn_tick(struct dist_conn *c, uint64_t interval_ms);

/* Writes the output queued on an up connection (`out`) now: the owner calls
 * this before the loop sleeps, so many packets share one write. Packets held
 * in `pending` during the handshake are not written here; they move to `out`
 * when the connection comes up. Closes the connection on socket failure. */
void dist_conn_flush_output(struct dist_conn *c);

/* Closes the socket and cancels timers and look-ups; calls hooks->closed once.
 * Idempotent. The memory stays valid until the owner frees it. */
void dist_conn_close(struct dist_conn *c, const char *why);

/* Frees the buffers of a closed connection; the struct itself is the
 * caller's, who allocated it (dist_conn_new, or the connection's own tests
 * and fuzz target, which embed it: dist_conn_internal.h). */
void dist_conn_free(struct dist_conn *c);

/* A connection not yet set up, for dist_conn_accept or dist_conn_connect;
 * NULL when out of memory. The owner ends it with dist_conn_destroy. */
struct dist_conn *dist_conn_new(void);

/* dist_conn_free, then the memory of dist_conn_new. NULL: nothing. */
void dist_conn_destroy(struct dist_conn *c);

/* ---- what the owner may ask of a connection ---- */

/* The peer's node name; "" until an acceptor hears send_name. */
const char *dist_conn_peer(const struct dist_conn *c);

/* Whether the handshake is complete and the connection not closed. */
bool dist_conn_is_up(const struct dist_conn *c);

/* Whether the connection is closed (it waits for the owner to free it). */
bool dist_conn_is_closed(const struct dist_conn *c);

/* Whether our attempt lost a simultaneous connect and waits for the
 * peer's connection to come up, which takes its packets (CONN_NOK_WAIT). */
bool dist_conn_lost_race(const struct dist_conn *c);

/* Whether we initiated the connection (rather than accepted it). */
bool dist_conn_initiated(const struct dist_conn *c);

/* Whether it was up at some point. */
bool dist_conn_was_up(const struct dist_conn *c);

/* Packets queued before the connection came up (dropped if it never
 * does). */
uint64_t dist_conn_pending_packets(const struct dist_conn *c);

/* The peer's creation, as its handshake said (0 until it did): the
 * incarnation of the node at the other end. */
uint32_t dist_conn_peer_creation(const struct dist_conn *c);

/* Whether the peer's handshake flags include `flag` (DFLAG_*): 0 until
 * the handshake says. */
bool dist_conn_peer_has(const struct dist_conn *c, uint64_t flag);

/* What went through the connection so far (inside TLS, the plaintext). */
struct dist_conn_traffic {
	uint64_t bytes_in, bytes_out, packets_in, packets_out;
};
void dist_conn_get_traffic(const struct dist_conn *c, struct dist_conn_traffic *out);

/* Marks control operation `op` as seen on this connection: true the first
 * time (so the owner logs an unknown one once per connection), false
 * after. Operations outside 0..62 share one mark. */
bool dist_conn_first_sight_of_op(struct dist_conn *c, long op);


#endif
