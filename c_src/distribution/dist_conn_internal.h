/*
 * dist_conn_internal.h — what the three files of a connection (dist_conn.h)
 * share. Calls run one way:
 *
 *   dist_conn_io.c         set-up (accept, connect, look-ups), the socket's
 *                          readiness, reading and framing the input,
 *                          oversized packets
 *     -> dist_conn_handshake.c   the handshake's steps, as acceptor and
 *                                initiator
 *     -> dist_conn.c       the core: states, output queues and writes,
 *                          going up, closing, what the owner calls
 *
 * Nobody else includes this but the connection's own fuzz target, which
 * embeds a struct dist_conn and reads its state; the owner (dist_node)
 * sees the functions of dist_conn.h only.
 */
#ifndef SN_DIST_CONN_INTERNAL_H
#define SN_DIST_CONN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "distribution/dist_conn.h"

struct dist_conn {
	const struct dist_settings *settings;
	const struct dist_conn_hooks *hooks;
	enum conn_state state;
	bool initiator;
	int fd;
	struct dist_tls *tls;       /* the TLS session over fd; NULL: plain TCP */
	char peer[NODE_NAME_BUF]; /* empty until the acceptor hears send_name */
	uint64_t peer_flags;
	uint32_t peer_creation;
	uint32_t our_challenge;
	struct bytebuf in, out;
	struct bytebuf hs_msg;      /* a handshake message being encoded (queue_handshake) */
	struct bytebuf pending;     /* framed packets queued before UP */
	uint64_t pending_packets;   /* how many packets `pending` holds */
	struct evloop_timer setup_timer;
	struct resolve_req *resolving; /* host look-up in flight, or NULL */
	struct in_addr peer_addr;
	struct epmd_lookup lookup;
	uint64_t last_rx_ms, last_tx_ms;
	bool reading_paused;
	bool was_up;                /* reached CONN_UP at some point */
	/* A TLS write that waits for the socket to be readable, a read that
	 * waits for it to be writable (a TLS handshake step). */
	bool tls_write_wants_read, tls_read_wants_write;
	uint64_t logged_ops;        /* unknown control ops already logged, by bit */
	uint32_t malformed;         /* malformed packets dropped */
	uint32_t oversized;         /* packets over max_message_bytes discarded */
	/* The packet over max_message_bytes being discarded: bytes still to
	 * read past, its length, and its first bytes kept for the owner
	 * (oversize_have of them, in a buffer of DIST_CONN_OVERSIZED_HEAD;
	 * owned, NULL when none is under way or no memory was there). */
	size_t oversize_left, oversize_total, oversize_have;
	uint8_t *oversize_head;
	uint64_t packets_in, packets_out;
	uint64_t bytes_in, bytes_out; /* on the socket (inside TLS, the plaintext) */
};

/* Bytes waiting to be written, and waiting for UP. */
static inline size_t dist_conn_queued(const struct dist_conn *c)
{
	return bytebuf_size(&c->out) + bytebuf_size(&c->pending);
}

/* ---- dist_conn.c ---- */

/* The peer's name, or "(unnamed peer)" before the acceptor hears it. */
const char *dist_conn_peer_label(const struct dist_conn *c);

/* The one place a state changes, so every transition is in the log. */
void dist_conn_set_state(struct dist_conn *c, enum conn_state to, const char *why);

/* Whether the connection is exchanging handshake messages. */
bool dist_conn_in_handshake(const struct dist_conn *c);

/* Appends the handshake message an encoder just wrote into c->hs_msg
 * (`encoded` its result), 2-byte framed, to the output with the
 * connection's framing: as it is over TCP, 4-byte framed inside TLS
 * (dist_tls.h). Returns 0, or -ENOMEM (or the encoder's error). */
int dist_conn_queue_handshake(struct dist_conn *c, int encoded);

/* Queues a tick (an empty packet). Returns 0 or -ENOMEM. */
int dist_conn_queue_tick(struct dist_conn *c);

/* Recomputes the epoll mask from what the connection needs now. */
void dist_conn_update_watch(struct dist_conn *c);

/* Writes as much of `out` as the socket takes. Returns 0, or -errno when
 * the socket failed (the caller closes). */
int dist_conn_flush_now(struct dist_conn *c);

/* Flushes, and closes on socket failure. Returns false if it closed. */
bool dist_conn_flush_or_close(struct dist_conn *c);

/* Why an I/O call that returned rc < 0 failed. */
const char *dist_conn_io_error(const struct dist_conn *c, int rc);

/* The handshake is done: the packets held in `pending` go out, the owner
 * hears of it (hooks->up). */
void dist_conn_go_up(struct dist_conn *c);

/* Our attempt lost to the peer's own: drops the socket, keeps our packets
 * for the peer's connection, which takes them over when it comes up (or
 * they are dropped at the setup deadline). */
void dist_conn_go_nok_wait(struct dist_conn *c, const char *why);

/* ---- dist_conn_handshake.c ---- */

/* The initiator's first message, once its socket is connected. */
void dist_conn_send_name(struct dist_conn *c);

/* One whole handshake message for the state the connection is in. */
void dist_conn_on_handshake_message(struct dist_conn *c, const uint8_t *msg, size_t len);

#endif
