/*
 * dist_conn_fuzz.c — libFuzzer target for a distribution connection as a
 * whole (`make fuzz`): the handshake state machine in either role, fed a
 * peer's whole conversation over a real socket pair, then its packets.
 *
 * Input: byte 0 picks the role (bit 0: 0 acceptor, 1 initiator) and, for
 * the acceptor, the owner's arbitration answer (bits 1-3). Then the peer's
 * side as chunks, [ctl, len, len bytes]...:
 *   ctl bit 0  the bytes are one handshake message: the harness frames it
 *              and, when it is a challenge_reply ('r', 21 bytes) or a
 *              challenge_ack ('a', 17 bytes), writes in it the digest of
 *              the challenge the node sent, so a conversation can get past
 *              the cookie check and reach the packets after it;
 *   ctl bit 1  the peer closes its side after this chunk;
 *   otherwise  raw bytes, as they are.
 * After each chunk the node's loop runs until nothing changes. Checked:
 * nothing reads outside a buffer or leaks (ASan), no undefined behaviour
 * (UBSan), and a connection that comes up names a valid peer with the
 * mandatory flags.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/bytebuf.h"
#include "base/byteorder.h"
#include "base/evloop.h"
#include "base/log.h"
#include "distribution/dist_conn.h"
#include "distribution/dist_conn_internal.h" /* the connection's own target: it reads its state */
#include "protocol/gen_call.h"
#include "protocol/handshake.h"
#include "protocol/node_name.h"

#include "fuzz_checks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define COOKIE "fuzzcookie"
#define PEER "peer@127.0.0.1"


/* One run: the connection under test and the peer's end of the pair. */
struct run {
	struct evloop *loop;
	struct dist_conn conn;
	int peer_fd;
	enum conn_arbitration arbitration;
	bool closed, up;
	uint64_t packets;
	/* The node's output as the peer reads it, and how far its handshake
	 * messages have been read. */
	uint8_t out[8192];
	size_t out_len, out_at;
	bool node_challenge_seen;
	uint32_t node_challenge; /* the challenge whose digest the peer owes */
	int still;               /* loop iterations without change */
	uint64_t signature;
};

static enum conn_arbitration on_arbitrate(void *owner, struct dist_conn *incoming)
{
	(void)incoming;
	return ((struct run *)owner)->arbitration;
}

static void on_replace(void *owner, struct dist_conn *incoming)
{
	(void)owner;
	(void)incoming;
}

static void on_up(void *owner, struct dist_conn *c)
{
	struct run *r = owner;
	r->up = true;
	check(node_name_valid(c->peer, strlen(c->peer)));
	check((c->peer_flags & DFLAG_MANDATORY_25) == DFLAG_MANDATORY_25);
}

static void on_packet(void *owner, struct dist_conn *c, const struct dist_msg *m)
{
	(void)c;
	struct run *r = owner;
	r->packets++;
	if (m->payload != NULL) {
		struct gen_call call;
		(void)gen_call_parse(m->payload, m->payload_len, &call);
	}
}

static void on_oversized(void *owner, struct dist_conn *c, const uint8_t *head, size_t head_len, size_t total)
{
	(void)owner;
	(void)c;
	check(head_len <= DIST_CONN_OVERSIZED_HEAD && head_len <= total);
	(void)head;
}

static void on_closed(void *owner, struct dist_conn *c, const char *why)
{
	(void)c;
	check(why != NULL);
	((struct run *)owner)->closed = true;
}

static const struct dist_conn_hooks hooks_template = {
	.arbitrate = on_arbitrate,
	.replace = on_replace,
	.up = on_up,
	.packet = on_packet,
	.oversized = on_oversized,
	.closed = on_closed,
};

/* Reads what the node wrote and, while the handshake lasts, the
 * challenge in it the peer must answer. */
static void drain_output(struct run *r)
{
	for (;;) {
		uint8_t buf[4096];
		ssize_t n = read(r->peer_fd, buf, sizeof buf);
		if (n <= 0)
			break;
		size_t keep = (size_t)n;
		if (keep > sizeof r->out - r->out_len)
			keep = sizeof r->out - r->out_len; /* past the handshake: not read */
		memcpy(r->out + r->out_len, buf, keep);
		r->out_len += keep;
	}
	for (;;) {
		const uint8_t *msg;
		size_t len, consumed;
		if (handshake_frame(r->out + r->out_at, r->out_len - r->out_at, &msg, &len, &consumed) != 1)
			return;
		r->out_at += consumed;
		struct handshake_challenge ch;
		uint32_t challenge;
		uint8_t digest[HANDSHAKE_DIGEST_LEN];
		if (handshake_decode_challenge(msg, len, &ch) == 0) {
			r->node_challenge = ch.challenge; /* the acceptor's */
			r->node_challenge_seen = true;
		} else if (handshake_decode_reply(msg, len, &challenge, digest) == 0) {
			r->node_challenge = challenge; /* the initiator's */
			r->node_challenge_seen = true;
		}
	}
}

/* The loop's idle hook: keeps it polling without sleeping, and stops it
 * once three iterations in a row changed nothing. */
static bool run_until_still(struct evloop *loop, void *arg)
{
	struct run *r = arg;
	drain_output(r);
	uint64_t sig = (uint64_t)r->conn.state ^ ((uint64_t)bytebuf_size(&r->conn.in) << 8) ^
		       ((uint64_t)r->out_len << 32) ^ (r->conn.packets_in << 20) ^ ((uint64_t)r->closed << 63) ^
		       ((uint64_t)r->conn.oversize_left << 40);
	if (sig == r->signature)
		r->still++;
	else
		r->still = 0;
	r->signature = sig;
	if (r->still >= 3 || r->closed)
		evloop_stop(loop);
	return true;
}

static void send_chunk(struct run *r, uint8_t ctl, const uint8_t *bytes, size_t len)
{
	uint8_t buf[2 + 255];
	size_t n = 0;
	if (ctl & 1) {
		be16_write(buf, (uint16_t)len);
		n = 2;
	}
	memcpy(buf + n, bytes, len);
	if ((ctl & 1) && r->node_challenge_seen) {
		uint8_t *msg = buf + n;
		if (len == 1 + 4 + HANDSHAKE_DIGEST_LEN && msg[0] == 'r')
			handshake_digest(COOKIE, r->node_challenge, msg + 5);
		else if (len == 1 + HANDSHAKE_DIGEST_LEN && msg[0] == 'a')
			handshake_digest(COOKIE, r->node_challenge, msg + 1);
	}
	n += len;
	size_t at = 0;
	while (at < n) {
		/* MSG_NOSIGNAL: the node may have closed its end already. */
		ssize_t w = send(r->peer_fd, buf + at, n - at, MSG_NOSIGNAL);
		if (w <= 0)
			return; /* the node closed, or its buffer is full: the rest is lost */
		at += (size_t)w;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const struct logger debug_log = {.min_level = LOG_DEBUG, .out = stderr};
	struct run *r = calloc(1, sizeof *r);
	check(r != NULL);
	r->loop = evloop_new();
	check(r->loop != NULL);
	r->arbitration = (enum conn_arbitration)((data[0] >> 1) % 5);
	struct dist_settings settings = {
		.loop = r->loop,
		.log = getenv("DIST_CONN_FUZZ_LOG") ? &debug_log : NULL, /* to follow one input */
		.name = "fuzz@127.0.0.1",
		.cookie = COOKIE,
		.creation = 7,
		.max_message_bytes = 1024,
		.outq_pause = 1 << 20,
		.outq_max_bytes = 1 << 22,
		.setup_ms = 60000,
		.resolver = NULL,
	};
	struct dist_conn_hooks hooks = hooks_template;
	hooks.owner = r;
	int fds[2];
	check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
	r->peer_fd = fds[1];
	if (data[0] & 1) {
		check(dist_conn_connect_socket(&r->conn, &settings, &hooks, PEER, fds[0]) == 0);
		/* A packet the node queues before the connection is up. */
		static const char ctl[] = {(char)131, 104, 2, 97, 18, 100, 0, 1, 'x'};
		check(dist_conn_send(&r->conn, ctl, sizeof ctl, NULL, 0) == 0);
	} else {
		check(dist_conn_accept(&r->conn, &settings, &hooks, fds[0]) == 0);
	}
	check(evloop_add_idle(r->loop, run_until_still, r) == 0);
	check(evloop_run(r->loop) == 0);
	size_t at = 1;
	while (!r->closed && at + 2 <= size) {
		uint8_t ctl = data[at], len = data[at + 1];
		at += 2;
		if (len > size - at)
			len = (uint8_t)(size - at);
		send_chunk(r, ctl, data + at, len);
		at += len;
		if (ctl & 2)
			shutdown(r->peer_fd, SHUT_WR);
		r->still = 0;
		check(evloop_run(r->loop) == 0);
		if (ctl & 2)
			break;
	}
	dist_conn_close(&r->conn, "the fuzz input ended");
	check(r->closed);
	dist_conn_free(&r->conn);
	close(r->peer_fd);
	evloop_free(r->loop);
	free(r);
	return 0;
}
