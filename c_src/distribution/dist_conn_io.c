/* dist_conn_io.c — a connection's set-up (accepting, connecting after the
 * host and epmd look-ups) and its input: the socket's readiness, reading,
 * framing, oversized packets, handshake messages handed on
 * (dist_conn_internal.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/byteorder.h"
#include "distribution/dist_conn_internal.h"

/* Bytes read from a socket per readiness event: bounds the work one busy
 * peer can make the loop do before others get a turn. */
#define READ_CHUNK (64 * 1024)
/* A tick is answered only after this long without writing anything: long
 * enough that a peer echoing ticks cannot start a storm, short enough for
 * a peer whose net_ticktime is a second. */
#define TICK_ANSWER_QUIET_MS 200
/* Malformed packets logged per connection before going quiet. */
#define MALFORMED_LOG_LIMIT 5

static void conn_on_io(struct evloop *loop, int fd, uint32_t events, void *arg);

static void conn_on_setup_timeout(struct evloop *loop, void *arg)
{
	(void)loop;
	struct dist_conn *c = arg;
	char why[64];
	snprintf(why, sizeof why, "handshake timed out in %s", conn_state_name(c->state));
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
		dist_conn_set_state(c, CONN_CLOSED, why);
	}
	return rc;
}

int dist_conn_accept(struct dist_conn *c, const struct dist_settings *settings,
		     const struct dist_conn_hooks *hooks, int fd)
{
	conn_init(c, settings, hooks);
	c->fd = fd;
	dist_conn_set_state(c, CONN_NAME_WAIT, "accepted");
	set_socket_options(fd);
	if (settings->tls != NULL && (c->tls = dist_tls_new(settings->tls, fd, true, NULL)) == NULL) {
		close(fd);
		c->fd = -1;
		dist_conn_set_state(c, CONN_CLOSED, "out of memory");
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
	dist_conn_set_state(c, CONN_RESOLVING, "connecting");

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
	dist_conn_set_state(c, CONN_CONNECTING, "connected by the caller");
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
	dist_conn_set_state(c, CONN_CONNECTING, "epmd gave the port");
	if (evloop_watch(c->settings->loop, c->fd, EPOLLOUT, conn_on_io, c))
		dist_conn_close(c, "cannot watch socket");
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
				 dist_conn_peer_label(c), len);
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
			 "is discarded", dist_conn_peer_label(c), n, c->settings->max_message_bytes);
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
				/* Answer, so a peer with a short net_ticktime hears us —
				 * unless we wrote a moment ago: a peer built on ei answers
				 * every tick with a tick (ei_receive does), and answering
				 * each of those made a storm of tens of thousands of ticks
				 * a second with erl_call. */
				if (evloop_now_ms(c->settings->loop) - c->last_tx_ms >= TICK_ANSWER_QUIET_MS &&
				    dist_conn_queue_tick(c)) {
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
		} else if (dist_conn_in_handshake(c)) {
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
			dist_conn_on_handshake_message(c, msg, body_len);
		} else {
			return;
		}
	}
}

/* One read into `in`, and the packets it completes handled. Returns true
 * if the connection may have more to read now (it read, and is open). */
static bool read_once(struct dist_conn *c)
{
	if (bytebuf_reserve(&c->in, READ_CHUNK)) {
		dist_conn_close(c, "out of memory");
		return false;
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
				dist_conn_update_watch(c);
			}
			return false;
		}
		if (r < 0)
			err = (int)-r;
	} else {
		r = recv(c->fd, c->in.data + c->in.len, READ_CHUNK, 0);
		if (r < 0)
			err = errno == EAGAIN || errno == EINTR ? 0 : errno;
	}
	if (r == 0 || err != 0) {
		const char *why = r == 0 ? "peer closed the connection" : dist_conn_io_error(c, -err);
		if (c->state == CONN_STATUS_WAIT && bytebuf_size(&c->pending) > 0) {
			/* A BEAM that is itself connecting to us may drop our attempt
			 * without a status (net_kernel's already_pending). Its own
			 * connection is on the way: keep our packets for it, as
			 * after "nok", until the setup deadline. */
			dist_conn_go_nok_wait(c, why);
			return false;
		}
		dist_conn_close(c, why);
		return false;
	}
	if (r < 0)
		return false;
	c->in.len += (size_t)r;
	c->bytes_in += (uint64_t)r;
	c->last_rx_ms = evloop_now_ms(c->settings->loop);
	conn_process_input(c);
	if (c->state != CONN_CLOSED && bytebuf_size(&c->in) == 0)
		bytebuf_shrink_idle(&c->in, 256 * 1024);
	return c->state != CONN_CLOSED && c->state != CONN_NOK_WAIT;
}

/* Reads what the socket has; then, over TLS, what the session already
 * decrypted and holds, which raises no readiness: in a loop, each round
 * bounded by READ_CHUNK, until TLS holds nothing more. */
static void conn_on_readable(struct dist_conn *c)
{
	while (read_once(c) && c->tls != NULL && !c->reading_paused && dist_tls_pending(c->tls))
		;
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
	dist_conn_send_name(c);
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
	if (flush && !dist_conn_flush_or_close(c))
		return;
	if (read)
		conn_on_readable(c);
}

