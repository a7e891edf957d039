/* dist_conn.c — see dist_conn.h. */
#include "distribution/dist_conn.h"
#include "base/byteorder.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bytes read from a socket per readiness event: bounds the work one busy
 * peer can make the loop do before others get a turn. */
#define READ_CHUNK (64 * 1024)
/* Malformed packets logged per connection before going quiet. */
#define MALFORMED_LOG_LIMIT 5

static const char *const state_names[] = {
	[CONN_RESOLVING] = "resolving",       [CONN_CONNECTING] = "connecting",
	[CONN_STATUS_WAIT] = "status_wait",   [CONN_CHALLENGE_WAIT] = "challenge_wait",
	[CONN_ACK_WAIT] = "ack_wait",         [CONN_NOK_WAIT] = "nok_wait",
	[CONN_NAME_WAIT] = "name_wait",       [CONN_ALIVE_WAIT] = "alive_wait",
	[CONN_REPLY_WAIT] = "reply_wait",     [CONN_UP] = "up",
	[CONN_CLOSED] = "closed",
};

const char *conn_state_name(enum conn_state s) { return state_names[s]; }

static const char *peer_label(const struct dist_conn *c)
{
	return c->peer[0] ? c->peer : "(unnamed peer)";
}

/* The one place a state changes, so every transition is in the log. */
static void conn_set_state(struct dist_conn *c, enum conn_state to, const char *why)
{
	log_debug(c->settings->log, "connection %s: %s -> %s (%s)", peer_label(c), state_names[c->state],
		  state_names[to], why);
	c->state = to;
}

static bool in_handshake(const struct dist_conn *c)
{
	return c->state != CONN_UP && c->state != CONN_CLOSED && c->state != CONN_NOK_WAIT &&
	       c->state != CONN_RESOLVING && c->state != CONN_CONNECTING;
}

static void conn_on_io(struct evloop *loop, int fd, uint32_t events, void *arg);

/* Appends the handshake message an encoder just wrote, 2-byte framed, into
 * c->hs_msg (`encoded` its result), to the output with the connection's
 * framing: as it is over TCP, 4-byte framed inside TLS (dist_tls.h).
 * Returns 0, or -ENOMEM (or the encoder's error). */
static int queue_handshake(struct dist_conn *c, int encoded)
{
	struct bytebuf *m = &c->hs_msg;
	int rc = encoded;
	if (rc == 0 && c->tls == NULL) {
		rc = bytebuf_append(&c->out, bytebuf_head(m), bytebuf_size(m));
	} else if (rc == 0) {
		uint8_t head[4];
		be32_write(head, (uint32_t)(bytebuf_size(m) - 2));
		rc = bytebuf_append(&c->out, head, sizeof head);
		if (rc == 0)
			rc = bytebuf_append(&c->out, bytebuf_head(m) + 2, bytebuf_size(m) - 2);
	}
	bytebuf_consume(m, bytebuf_size(m));
	return rc;
}

static uint32_t random_u32(void)
{
	uint32_t v = 0;
	if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
		v = (uint32_t)rand(); /* never expected; still a valid challenge */
	return v;
}

/* Recomputes the epoll mask from what the connection needs now. */
static void conn_update_watch(struct dist_conn *c)
{
	if (c->fd < 0)
		return;
	uint32_t ev = 0;
	if (!c->reading_paused || c->tls_write_wants_read)
		ev |= EPOLLIN;
	if (bytebuf_size(&c->out) > 0 || c->state == CONN_CONNECTING || c->tls_read_wants_write)
		ev |= EPOLLOUT;
	evloop_rewatch(c->settings->loop, c->fd, ev);
}

/* Writes as much of `out` as the socket takes. Returns 0, or -errno when the
 * socket failed (the caller closes). */
static int conn_flush(struct dist_conn *c)
{
	c->tls_write_wants_read = false;
	while (bytebuf_size(&c->out) > 0) {
		ssize_t w;
		if (c->tls != NULL) {
			w = dist_tls_write(c->tls, bytebuf_head(&c->out), bytebuf_size(&c->out));
			if (w == -EAGAIN) {
				c->tls_write_wants_read = dist_tls_wants(c->tls) == DIST_TLS_WANTS_READ;
				break;
			}
			if (w <= 0)
				return w < 0 ? (int)w : -EPIPE;
		} else {
			w = send(c->fd, bytebuf_head(&c->out), bytebuf_size(&c->out), MSG_NOSIGNAL);
		}
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			return -errno;
		}
		bytebuf_consume(&c->out, (size_t)w);
		c->bytes_out += (uint64_t)w;
		c->last_tx_ms = evloop_now_ms(c->settings->loop);
	}
	if (bytebuf_size(&c->out) == 0)
		bytebuf_shrink_idle(&c->out, 256 * 1024);
	if (c->reading_paused && bytebuf_size(&c->out) <= c->settings->outq_pause / 2) {
		c->reading_paused = false;
		log_info(c->settings->log, "connection %s: output drained, reading again", peer_label(c));
	}
	conn_update_watch(c);
	return 0;
}

/* Why an I/O call that returned rc < 0 failed. */
static const char *io_error(const struct dist_conn *c, int rc)
{
	if (rc == -EPROTO && c->tls != NULL)
		return dist_tls_error(c->tls);
	return strerror(-rc);
}

/* Flushes and closes on socket failure. Returns false if the connection closed. */
static bool conn_flush_or_close(struct dist_conn *c)
{
	int rc = conn_flush(c);
	if (rc) {
		dist_conn_close(c, io_error(c, rc));
		return false;
	}
	return true;
}

static void conn_on_setup_timeout(struct evloop *loop, void *arg)
{
	(void)loop;
	struct dist_conn *c = arg;
	char why[64];
	snprintf(why, sizeof why, "handshake timed out in %s", state_names[c->state]);
	dist_conn_close(c, why);
}

static void conn_init(struct dist_conn *c, const struct dist_settings *settings, const struct dist_conn_hooks *hooks)
{
	memset(c, 0, sizeof *c);
	c->settings = settings;
	c->hooks = hooks;
	c->fd = -1;
	/* Closed until accept or connect moves it on, through conn_set_state. */
	c->state = CONN_CLOSED;
	evloop_timer_init(&c->setup_timer, conn_on_setup_timeout, c);
	c->last_rx_ms = c->last_tx_ms = evloop_now_ms(settings->loop);
}

static void set_socket_options(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* Watches c->fd for `events` and arms the handshake deadline. Returns 0,
 * or -errno: then the socket is closed and c is CLOSED, `why`. */
static int conn_watch_socket(struct dist_conn *c, uint32_t events, const char *why)
{
	int rc = evloop_watch(c->settings->loop, c->fd, events, conn_on_io, c);
	if (rc == 0)
		rc = evloop_timer_start(c->settings->loop, &c->setup_timer, c->settings->setup_ms);
	if (rc) {
		evloop_unwatch(c->settings->loop, c->fd);
		close(c->fd);
		c->fd = -1;
		conn_set_state(c, CONN_CLOSED, why);
	}
	return rc;
}

int dist_conn_accept(struct dist_conn *c, const struct dist_settings *settings,
		     const struct dist_conn_hooks *hooks, int fd)
{
	conn_init(c, settings, hooks);
	c->fd = fd;
	conn_set_state(c, CONN_NAME_WAIT, "accepted");
	set_socket_options(fd);
	if (settings->tls != NULL && (c->tls = dist_tls_new(settings->tls, fd, true, NULL)) == NULL) {
		close(fd);
		c->fd = -1;
		conn_set_state(c, CONN_CLOSED, "out of memory");
		return -ENOMEM;
	}
	return conn_watch_socket(c, EPOLLIN, "cannot watch the accepted socket");
}

static void conn_on_lookup(int err, uint16_t port, void *arg);
static void conn_on_resolved(int err, struct in_addr addr, void *arg);

int dist_conn_connect(struct dist_conn *c, const struct dist_settings *settings,
		      const struct dist_conn_hooks *hooks, const char *peer)
{
	conn_init(c, settings, hooks);
	size_t n = strlen(peer);
	if (!node_name_valid(peer, n))
		return -EINVAL;
	memcpy(c->peer, peer, n + 1);
	c->initiator = true;
	conn_set_state(c, CONN_RESOLVING, "connecting");

	const char *at = strchr(c->peer, '@');
	int rc = 0;
	c->resolving = resolver_start(settings->resolver, at + 1, conn_on_resolved, c, &rc);
	if (c->resolving == NULL)
		return rc;
	rc = evloop_timer_start(settings->loop, &c->setup_timer, settings->setup_ms);
	if (rc) {
		resolver_cancel(c->resolving);
		c->resolving = NULL;
		return rc;
	}
	return 0;
}

static void conn_on_resolved(int err, struct in_addr addr, void *arg)
{
	struct dist_conn *c = arg;
	c->resolving = NULL;
	if (err) {
		dist_conn_close(c, "cannot resolve the host name");
		return;
	}
	c->peer_addr = addr;
	const char *at = strchr(c->peer, '@');
	char alive[NODE_NAME_BUF];
	memcpy(alive, c->peer, (size_t)(at - c->peer));
	alive[at - c->peer] = '\0';
	int rc = epmd_lookup_start(&c->lookup, c->settings->loop, addr, alive, (int)c->settings->setup_ms,
				   conn_on_lookup, c);
	if (rc)
		dist_conn_close(c, strerror(-rc));
}

int dist_conn_connect_socket(struct dist_conn *c, const struct dist_settings *settings,
			     const struct dist_conn_hooks *hooks, const char *peer, int fd)
{
	conn_init(c, settings, hooks);
	size_t n = strlen(peer);
	if (!node_name_valid(peer, n)) {
		close(fd);
		return -EINVAL;
	}
	memcpy(c->peer, peer, n + 1);
	c->initiator = true;
	c->fd = fd;
	set_socket_options(fd);
	conn_set_state(c, CONN_CONNECTING, "connected by the caller");
	return conn_watch_socket(c, EPOLLOUT, "cannot watch the socket");
}

static void conn_on_lookup(int err, uint16_t port, void *arg)
{
	struct dist_conn *c = arg;
	if (err) {
		char why[96];
		snprintf(why, sizeof why, "epmd look-up failed: %s",
			 err == -ENOENT ? "name not registered" : strerror(-err));
		dist_conn_close(c, why);
		return;
	}
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0) {
		dist_conn_close(c, strerror(errno));
		return;
	}
	set_socket_options(c->fd);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = c->peer_addr};
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS) {
		dist_conn_close(c, strerror(errno));
		return;
	}
	conn_set_state(c, CONN_CONNECTING, "epmd gave the port");
	if (evloop_watch(c->settings->loop, c->fd, EPOLLOUT, conn_on_io, c))
		dist_conn_close(c, "cannot watch socket");
}

/* ---- handshake steps ---- */

static bool flags_acceptable(struct dist_conn *c, uint64_t flags)
{
	if ((flags & DFLAG_MANDATORY_25) != DFLAG_MANDATORY_25) {
		log_warn(c->settings->log, "connection %s refused: peer lacks mandatory distribution flags "
			 "(has 0x%llx)", peer_label(c), (unsigned long long)flags);
		return false;
	}
	return true;
}

static void send_challenge(struct dist_conn *c)
{
	c->our_challenge = random_u32();
	if (queue_handshake(c, handshake_encode_challenge(&c->hs_msg, DFLAG_OURS, c->our_challenge, c->settings->creation,
							  c->settings->name))) {
		dist_conn_close(c, "out of memory");
		return;
	}
	conn_set_state(c, CONN_REPLY_WAIT, "challenge sent");
	conn_flush_or_close(c);
}

static void send_status(struct dist_conn *c, const char *status)
{
	if (queue_handshake(c, handshake_encode_status(&c->hs_msg, status)))
		dist_conn_close(c, "out of memory");
}

static void conn_go_up(struct dist_conn *c)
{
	evloop_timer_stop(c->settings->loop, &c->setup_timer);
	conn_set_state(c, CONN_UP, "handshake complete");
	c->was_up = true;
	log_info(c->settings->log, "connected to %s (%s)", c->peer, c->initiator ? "we initiated" : "peer initiated");
	c->last_rx_ms = c->last_tx_ms = evloop_now_ms(c->settings->loop);
	if (bytebuf_size(&c->pending) > 0) {
		if (bytebuf_append(&c->out, bytebuf_head(&c->pending), bytebuf_size(&c->pending))) {
			dist_conn_close(c, "out of memory");
			return;
		}
		bytebuf_free(&c->pending);
		c->pending_packets = 0;
	}
	if (!conn_flush_or_close(c))
		return;
	c->hooks->up(c->hooks->owner, c);
}

static void on_name(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	struct handshake_name name;
	if (handshake_decode_name(msg, len, &name)) {
		dist_conn_close(c, "malformed send_name");
		return;
	}
	memcpy(c->peer, name.node, sizeof c->peer);
	c->peer_flags = name.flags;
	c->peer_creation = name.creation;
	if (!flags_acceptable(c, name.flags)) {
		dist_conn_close(c, "missing mandatory flags");
		return;
	}
	switch (c->hooks->arbitrate(c->hooks->owner, c)) {
	case CONN_ARB_OK:
		send_status(c, "ok");
		send_challenge(c);
		break;
	case CONN_ARB_OK_SIMULTANEOUS:
		send_status(c, "ok_simultaneous");
		send_challenge(c);
		break;
	case CONN_ARB_NOK:
		send_status(c, "nok");
		conn_flush(c);
		dist_conn_close(c, "simultaneous connect: ours wins");
		break;
	case CONN_ARB_ALIVE:
		send_status(c, "alive");
		conn_set_state(c, CONN_ALIVE_WAIT, "a connection to this peer is up");
		conn_flush_or_close(c);
		break;
	case CONN_ARB_REFUSE:
		send_status(c, "not_allowed");
		conn_flush(c);
		dist_conn_close(c, "not allowed");
		break;
	}
}

static void on_alive_answer(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	char status[32];
	if (handshake_decode_status(msg, len, status, sizeof status)) {
		dist_conn_close(c, "malformed alive answer");
		return;
	}
	if (strcmp(status, "true") != 0) {
		dist_conn_close(c, "peer keeps its old connection");
		return;
	}
	c->hooks->replace(c->hooks->owner, c);
	if (c->state != CONN_CLOSED)
		send_challenge(c);
}

static void on_reply(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	uint32_t their_challenge;
	uint8_t digest[HANDSHAKE_DIGEST_LEN], expected[HANDSHAKE_DIGEST_LEN];
	if (handshake_decode_reply(msg, len, &their_challenge, digest)) {
		dist_conn_close(c, "malformed challenge_reply");
		return;
	}
	handshake_digest(c->settings->cookie, c->our_challenge, expected);
	if (!handshake_digest_equal(digest, expected)) {
		log_warn(c->settings->log, "connection from %s refused: wrong cookie", peer_label(c));
		dist_conn_close(c, "wrong cookie");
		return;
	}
	handshake_digest(c->settings->cookie, their_challenge, expected);
	if (queue_handshake(c, handshake_encode_ack(&c->hs_msg, expected))) {
		dist_conn_close(c, "out of memory");
		return;
	}
	conn_go_up(c);
}

/* Our attempt lost to the peer's own: drop the socket, keep our packets for
 * the peer's connection, which takes them over when it comes up (or they are
 * dropped at the setup deadline). */
static void go_nok_wait(struct dist_conn *c, const char *why)
{
	evloop_unwatch(c->settings->loop, c->fd);
	close(c->fd);
	c->fd = -1;
	bytebuf_free(&c->in);
	bytebuf_free(&c->out);
	conn_set_state(c, CONN_NOK_WAIT, why);
}

static void on_status(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	char status[32];
	if (handshake_decode_status(msg, len, status, sizeof status)) {
		dist_conn_close(c, "malformed status");
		return;
	}
	if (strcmp(status, "ok") == 0 || strcmp(status, "ok_simultaneous") == 0) {
		conn_set_state(c, CONN_CHALLENGE_WAIT, status);
	} else if (strcmp(status, "alive") == 0) {
		/* The peer still has a connection it believes is ours. We are
		 * connecting, so that one is stale: say so. */
		send_status(c, "true");
		conn_set_state(c, CONN_CHALLENGE_WAIT, "answered alive with true");
		conn_flush_or_close(c);
	} else if (strcmp(status, "nok") == 0) {
		go_nok_wait(c, "simultaneous connect: peer's wins");
	} else {
		char why[64];
		snprintf(why, sizeof why, "peer refused with status \"%s\"", status);
		dist_conn_close(c, why);
	}
}

static void on_challenge(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	struct handshake_challenge ch;
	if (handshake_decode_challenge(msg, len, &ch)) {
		dist_conn_close(c, "malformed challenge");
		return;
	}
	if (strcmp(ch.node, c->peer) != 0) {
		dist_conn_close(c, "peer answered with another node name");
		return;
	}
	if (!flags_acceptable(c, ch.flags)) {
		dist_conn_close(c, "missing mandatory flags");
		return;
	}
	c->peer_flags = ch.flags;
	c->peer_creation = ch.creation;
	uint8_t digest[HANDSHAKE_DIGEST_LEN];
	handshake_digest(c->settings->cookie, ch.challenge, digest);
	c->our_challenge = random_u32();
	if (queue_handshake(c, handshake_encode_reply(&c->hs_msg, c->our_challenge, digest))) {
		dist_conn_close(c, "out of memory");
		return;
	}
	conn_set_state(c, CONN_ACK_WAIT, "reply sent");
	conn_flush_or_close(c);
}

static void on_ack(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	uint8_t digest[HANDSHAKE_DIGEST_LEN], expected[HANDSHAKE_DIGEST_LEN];
	if (handshake_decode_ack(msg, len, digest)) {
		dist_conn_close(c, "malformed challenge_ack");
		return;
	}
	handshake_digest(c->settings->cookie, c->our_challenge, expected);
	if (!handshake_digest_equal(digest, expected)) {
		log_warn(c->settings->log, "connection to %s refused: wrong cookie", peer_label(c));
		dist_conn_close(c, "wrong cookie");
		return;
	}
	conn_go_up(c);
}

static void on_handshake_message(struct dist_conn *c, const uint8_t *msg, size_t len)
{
	switch (c->state) {
	case CONN_NAME_WAIT: on_name(c, msg, len); break;
	case CONN_ALIVE_WAIT: on_alive_answer(c, msg, len); break;
	case CONN_REPLY_WAIT: on_reply(c, msg, len); break;
	case CONN_STATUS_WAIT: on_status(c, msg, len); break;
	case CONN_CHALLENGE_WAIT: on_challenge(c, msg, len); break;
	case CONN_ACK_WAIT: on_ack(c, msg, len); break;
	default: dist_conn_close(c, "unexpected handshake message"); break;
	}
}

/* ---- established connection ---- */

static int queue_tick(struct dist_conn *c)
{
	static const uint8_t tick[4] = {0, 0, 0, 0};
	return bytebuf_append(&c->out, tick, sizeof tick);
}

static void on_packet(struct dist_conn *c, const uint8_t *body, size_t len)
{
	struct dist_msg m;
	c->packets_in++;
	if (dist_frame_parse(body, len, &m)) {
		/* The framing is intact, so only this packet is lost; the
		 * connection and the peer's other messages carry on. */
		if (c->malformed++ < MALFORMED_LOG_LIMIT) {
			log_warn(c->settings->log, "connection %s: malformed packet of %zu bytes dropped",
				 peer_label(c), len);
		}
		return;
	}
	c->hooks->packet(c->hooks->owner, c, &m);
}

/* A packet over max_message_bytes begins (its 4-byte length is at the
 * head of `in`): it is read past as it comes, never held whole, keeping
 * its first bytes for the owner. The framing stays intact, so the
 * connection and the peer's other messages carry on. */
static void begin_oversized(struct dist_conn *c, const uint8_t *head)
{
	size_t n = be32_read(head);
	bytebuf_consume(&c->in, 4);
	c->oversize_left = c->oversize_total = n;
	c->oversize_have = 0;
	c->oversize_head = malloc(DIST_CONN_OVERSIZED_HEAD); /* NULL: discarded all the same */
	if (c->oversized++ < MALFORMED_LOG_LIMIT)
		log_warn(c->settings->log, "connection %s: a packet of %zu bytes, over max_message_bytes (%zu), "
			 "is discarded", peer_label(c), n, c->settings->max_message_bytes);
}

/* Reads past what has come of the packet being discarded. Returns true
 * once it is all past (the owner told), false while more is to come. */
static bool discard_oversized(struct dist_conn *c)
{
	size_t avail = bytebuf_size(&c->in);
	size_t take = avail < c->oversize_left ? avail : c->oversize_left;
	if (c->oversize_head != NULL && c->oversize_have < DIST_CONN_OVERSIZED_HEAD) {
		size_t keep = DIST_CONN_OVERSIZED_HEAD - c->oversize_have;
		if (keep > take)
			keep = take;
		memcpy(c->oversize_head + c->oversize_have, bytebuf_head(&c->in), keep);
		c->oversize_have += keep;
	}
	bytebuf_consume(&c->in, take);
	c->oversize_left -= take;
	if (c->oversize_left > 0)
		return false;
	uint8_t *kept = c->oversize_head;
	c->oversize_head = NULL;
	if (c->hooks->oversized)
		c->hooks->oversized(c->hooks->owner, c, kept, kept ? c->oversize_have : 0, c->oversize_total);
	free(kept);
	return true;
}

/* Consumes whole messages from `in` while the connection stays open. */
static void conn_process_input(struct dist_conn *c)
{
	while (c->state != CONN_CLOSED && c->state != CONN_NOK_WAIT) {
		const uint8_t *head = bytebuf_head(&c->in);
		size_t avail = bytebuf_size(&c->in);
		const uint8_t *body;
		size_t body_len, consumed;
		if (c->state == CONN_UP && c->oversize_left > 0) {
			if (!discard_oversized(c))
				return;
		} else if (c->state == CONN_UP) {
			switch (dist_frame_next(head, avail, c->settings->max_message_bytes, &body, &body_len, &consumed)) {
			case DIST_FRAME_NEED_MORE:
				return;
			case DIST_FRAME_TOO_BIG:
				begin_oversized(c, head);
				break;
			case DIST_FRAME_TICK:
				bytebuf_consume(&c->in, consumed);
				/* Answer, so a peer with a short net_ticktime hears us. */
				if (queue_tick(c)) {
					dist_conn_close(c, "out of memory");
					return;
				}
				break;
			case DIST_FRAME_PACKET:
				/* The body stays valid while it is handled: the buffer is
				 * consumed only afterwards. */
				on_packet(c, body, body_len);
				if (c->state == CONN_CLOSED)
					return;
				bytebuf_consume(&c->in, consumed);
				break;
			}
		} else if (in_handshake(c)) {
			int rc = handshake_frame_sized(head, avail, c->tls != NULL ? 4 : 2, &body, &body_len, &consumed);
			if (rc == 0)
				return;
			if (rc < 0) {
				dist_conn_close(c, "malformed handshake framing");
				return;
			}
			/* Copy: a handshake step may reset the input buffer. */
			uint8_t msg[HANDSHAKE_MAX_MESSAGE];
			memcpy(msg, body, body_len);
			bytebuf_consume(&c->in, consumed);
			on_handshake_message(c, msg, body_len);
		} else {
			return;
		}
	}
}

static void conn_on_readable(struct dist_conn *c)
{
	if (bytebuf_reserve(&c->in, READ_CHUNK)) {
		dist_conn_close(c, "out of memory");
		return;
	}
	ssize_t r;
	int err = 0;
	if (c->tls != NULL) {
		c->tls_read_wants_write = false;
		r = dist_tls_read(c->tls, c->in.data + c->in.len, READ_CHUNK);
		if (r == -EAGAIN) {
			/* A TLS step that must write first: EPOLLOUT brings us back. */
			bool wants_write = dist_tls_wants(c->tls) == DIST_TLS_WANTS_WRITE;
			if (wants_write != c->tls_read_wants_write) {
				c->tls_read_wants_write = wants_write;
				conn_update_watch(c);
			}
			return;
		}
		if (r < 0)
			err = (int)-r;
	} else {
		r = recv(c->fd, c->in.data + c->in.len, READ_CHUNK, 0);
		if (r < 0)
			err = errno == EAGAIN || errno == EINTR ? 0 : errno;
	}
	if (r == 0 || err != 0) {
		const char *why = r == 0 ? "peer closed the connection" : io_error(c, -err);
		if (c->state == CONN_STATUS_WAIT && bytebuf_size(&c->pending) > 0) {
			/* A BEAM that is itself connecting to us may drop our attempt
			 * without a status (net_kernel's already_pending). Its own
			 * connection is on the way: keep our packets for it, as
			 * after "nok", until the setup deadline. */
			go_nok_wait(c, why);
			return;
		}
		dist_conn_close(c, why);
		return;
	}
	if (r < 0)
		return;
	c->in.len += (size_t)r;
	c->bytes_in += (uint64_t)r;
	c->last_rx_ms = evloop_now_ms(c->settings->loop);
	conn_process_input(c);
	if (c->state != CONN_CLOSED && bytebuf_size(&c->in) == 0)
		bytebuf_shrink_idle(&c->in, 256 * 1024);
	/* Bytes TLS decrypted and holds raise no readiness: read them now. */
	if (c->state != CONN_CLOSED && c->tls != NULL && !c->reading_paused && dist_tls_pending(c->tls))
		conn_on_readable(c);
}

static void conn_on_connected(struct dist_conn *c)
{
	int soerr = 0;
	socklen_t sl = sizeof soerr;
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr != 0) {
		dist_conn_close(c, strerror(soerr ? soerr : errno));
		return;
	}
	if (c->settings->tls != NULL) {
		/* The server's certificate must name the host of the node name,
		 * as inet_tls_dist's server_name_indication. */
		c->tls = dist_tls_new(c->settings->tls, c->fd, false, strchr(c->peer, '@') + 1);
		if (c->tls == NULL) {
			dist_conn_close(c, "out of memory");
			return;
		}
	}
	if (queue_handshake(c, handshake_encode_name(&c->hs_msg, DFLAG_OURS, c->settings->creation, c->settings->name))) {
		dist_conn_close(c, "out of memory");
		return;
	}
	conn_set_state(c, CONN_STATUS_WAIT, "send_name sent");
	conn_flush_or_close(c);
}

static void conn_on_io(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	(void)loop;
	(void)fd;
	struct dist_conn *c = arg;
	if (c->state == CONN_CONNECTING) {
		if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			conn_on_connected(c);
		return;
	}
	/* A TLS write waiting for input is retried when input comes, a TLS
	 * read waiting to write when the socket is writable. */
	bool flush = (events & EPOLLOUT) || (c->tls_write_wants_read && (events & EPOLLIN));
	bool read = (events & (EPOLLHUP | EPOLLERR)) || ((events & EPOLLIN) && !c->reading_paused) ||
		    (c->tls_read_wants_write && (events & EPOLLOUT));
	if (flush && !conn_flush_or_close(c))
		return;
	if (read)
		conn_on_readable(c);
}

/* ---- the owner's side ---- */

int dist_conn_send(struct dist_conn *c, const char *ctl, size_t ctl_len, const char *msg, size_t msg_len)
{
	if (c->state == CONN_CLOSED)
		return -ENOTCONN;
	size_t body = 1 + ctl_len + msg_len;
	if (body > UINT32_MAX)
		return -EMSGSIZE;
	struct bytebuf *q = c->state == CONN_UP ? &c->out : &c->pending;
	if (dist_conn_queued(c) + 4 + body > c->settings->outq_max_bytes) {
		char why[96];
		snprintf(why, sizeof why, "output queue over %zu bytes: peer is not reading", c->settings->outq_max_bytes);
		log_warn(c->settings->log, "connection %s: %s", peer_label(c), why);
		dist_conn_close(c, why);
		return -ENOBUFS;
	}
	uint8_t head[5];
	be32_write(head, (uint32_t)body);
	head[4] = 'p';
	if (bytebuf_reserve(q, 4 + body))
		return -ENOMEM;
	bytebuf_append(q, head, sizeof head);
	bytebuf_append(q, ctl, ctl_len);
	if (msg_len)
		bytebuf_append(q, msg, msg_len);
	c->packets_out++;
	if (q == &c->pending)
		c->pending_packets++;
	if (c->state == CONN_UP && !c->reading_paused && bytebuf_size(&c->out) > c->settings->outq_pause) {
		c->reading_paused = true;
		log_info(c->settings->log, "connection %s: output queue over %zu bytes, pausing reads",
			 peer_label(c), c->settings->outq_pause);
		conn_update_watch(c);
	}
	/* No write here and no EPOLLOUT: the owner flushes every connection
	 * before the loop sleeps (dist_conn_flush_output), and only a
	 * flush that meets a full socket asks for writability. */
	return 0;
}

void dist_conn_adopt_pending(struct dist_conn *c, struct dist_conn *from)
{
	if (bytebuf_size(&from->pending) == 0)
		return;
	struct bytebuf *q = c->state == CONN_UP ? &c->out : &c->pending;
	if (bytebuf_append(q, bytebuf_head(&from->pending), bytebuf_size(&from->pending)) == 0) {
		if (q == &c->pending)
			c->pending_packets += from->pending_packets;
		bytebuf_free(&from->pending);
		from->pending_packets = 0;
	}
}

void dist_conn_tick(struct dist_conn *c, uint64_t interval_ms)
{
	if (c->state != CONN_UP)
		return;
	uint64_t now = evloop_now_ms(c->settings->loop);
	if (now - c->last_rx_ms > 4 * interval_ms) {
		dist_conn_close(c, "peer silent for net_ticktime");
		return;
	}
	if (now - c->last_tx_ms >= interval_ms && bytebuf_size(&c->out) == 0) {
		if (queue_tick(c) == 0)
			conn_flush_or_close(c);
	}
}

void dist_conn_flush_output(struct dist_conn *c)
{
	if (c->state == CONN_UP && bytebuf_size(&c->out) > 0)
		conn_flush_or_close(c);
}

void dist_conn_close(struct dist_conn *c, const char *why)
{
	if (c->state == CONN_CLOSED)
		return;
	enum conn_state was = c->state;
	conn_set_state(c, CONN_CLOSED, why);
	if (was == CONN_UP)
		log_info(c->settings->log, "disconnected from %s: %s", peer_label(c), why);
	else if (c->initiator)
		log_debug(c->settings->log, "connection %s failed in %s: %s", peer_label(c), state_names[was], why);
	else if (c->peer[0])
		log_info(c->settings->log, "connection %s failed in %s: %s", peer_label(c), state_names[was], why);
	/* A refused certificate, a peer speaking plain TCP to TLS: one line,
	 * also for a peer that never said its name. */
	if (c->tls != NULL && dist_tls_error(c->tls)[0] != '\0') {
		struct sockaddr_in sa = {0};
		socklen_t sl = sizeof sa;
		char addr[INET_ADDRSTRLEN] = "?";
		if (getpeername(c->fd, (struct sockaddr *)&sa, &sl) == 0 && sa.sin_family == AF_INET)
			inet_ntop(AF_INET, &sa.sin_addr, addr, sizeof addr);
		log_warn(c->settings->log, "TLS connection %s (%s) failed: %s", peer_label(c), addr,
			 dist_tls_error(c->tls));
	}
	dist_tls_free(c->tls);
	c->tls = NULL;
	evloop_timer_stop(c->settings->loop, &c->setup_timer);
	resolver_cancel(c->resolving);
	c->resolving = NULL;
	epmd_lookup_cancel(&c->lookup);
	if (c->fd >= 0) {
		evloop_unwatch(c->settings->loop, c->fd);
		close(c->fd);
		c->fd = -1;
	}
	c->hooks->closed(c->hooks->owner, c, why);
}

void dist_conn_free(struct dist_conn *c)
{
	free(c->oversize_head);
	c->oversize_head = NULL;
	bytebuf_free(&c->in);
	bytebuf_free(&c->out);
	bytebuf_free(&c->hs_msg);
	bytebuf_free(&c->pending);
}
