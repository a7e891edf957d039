/* dist_conn.c — see dist_conn.h: a connection's core — its states, the
 * output queues and their writes, going up, closing — and what its owner
 * calls. Set-up and input are in dist_conn_io.c, the handshake's steps in
 * dist_conn_handshake.c (dist_conn_internal.h). */
#include "distribution/dist_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/byteorder.h"
#include "distribution/dist_conn_internal.h"

static const char *const state_names[] = {
	[CONN_RESOLVING] = "resolving",       [CONN_CONNECTING] = "connecting",
	[CONN_STATUS_WAIT] = "status_wait",   [CONN_CHALLENGE_WAIT] = "challenge_wait",
	[CONN_ACK_WAIT] = "ack_wait",         [CONN_NOK_WAIT] = "nok_wait",
	[CONN_NAME_WAIT] = "name_wait",       [CONN_ALIVE_WAIT] = "alive_wait",
	[CONN_REPLY_WAIT] = "reply_wait",     [CONN_UP] = "up",
	[CONN_CLOSED] = "closed",
};

const char *conn_state_name(enum conn_state s) { return state_names[s]; }

const char *dist_conn_peer_label(const struct dist_conn *c)
{
	return c->peer[0] ? c->peer : "(unnamed peer)";
}

/* The one place a state changes, so every transition is in the log. */
void dist_conn_set_state(struct dist_conn *c, enum conn_state to, const char *why)
{
	log_debug(c->settings->log, "connection %s: %s -> %s (%s)", dist_conn_peer_label(c), state_names[c->state],
		  state_names[to], why);
	c->state = to;
}

bool dist_conn_in_handshake(const struct dist_conn *c)
{
	return c->state != CONN_UP && c->state != CONN_CLOSED && c->state != CONN_NOK_WAIT &&
	       c->state != CONN_RESOLVING && c->state != CONN_CONNECTING;
}

/* Appends the handshake message an encoder just wrote, 2-byte framed, into
 * c->hs_msg (`encoded` its result), to the output with the connection's
 * framing: as it is over TCP, 4-byte framed inside TLS (dist_tls.h).
 * Returns 0, or -ENOMEM (or the encoder's error). */
int dist_conn_queue_handshake(struct dist_conn *c, int encoded)
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

/* Recomputes the epoll mask from what the connection needs now. */
void dist_conn_update_watch(struct dist_conn *c)
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
int dist_conn_flush_now(struct dist_conn *c)
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
		log_info(c->settings->log, "connection %s: output drained, reading again", dist_conn_peer_label(c));
	}
	dist_conn_update_watch(c);
	return 0;
}

/* Why an I/O call that returned rc < 0 failed. */
const char *dist_conn_io_error(const struct dist_conn *c, int rc)
{
	if (rc == -EPROTO && c->tls != NULL)
		return dist_tls_error(c->tls);
	return strerror(-rc);
}

/* Flushes and closes on socket failure. Returns false if the connection closed. */
bool dist_conn_flush_or_close(struct dist_conn *c)
{
	int rc = dist_conn_flush_now(c);
	if (rc) {
		dist_conn_close(c, dist_conn_io_error(c, rc));
		return false;
	}
	return true;
}

int dist_conn_queue_tick(struct dist_conn *c)
{
	static const uint8_t tick[4] = {0, 0, 0, 0};
	return bytebuf_append(&c->out, tick, sizeof tick);
}

void dist_conn_go_up(struct dist_conn *c)
{
	evloop_timer_stop(c->settings->loop, &c->setup_timer);
	dist_conn_set_state(c, CONN_UP, "handshake complete");
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
	if (!dist_conn_flush_or_close(c))
		return;
	c->hooks->up(c->hooks->owner, c);
}

/* Our attempt lost to the peer's own: drop the socket, keep our packets for
 * the peer's connection, which takes them over when it comes up (or they are
 * dropped at the setup deadline). */
void dist_conn_go_nok_wait(struct dist_conn *c, const char *why)
{
	evloop_unwatch(c->settings->loop, c->fd);
	close(c->fd);
	c->fd = -1;
	bytebuf_free(&c->in);
	bytebuf_free(&c->out);
	dist_conn_set_state(c, CONN_NOK_WAIT, why);
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
		log_warn(c->settings->log, "connection %s: %s", dist_conn_peer_label(c), why);
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
			 dist_conn_peer_label(c), c->settings->outq_pause);
		dist_conn_update_watch(c);
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
		if (dist_conn_queue_tick(c) == 0)
			dist_conn_flush_or_close(c);
	}
	/* Buffers of a connection with nothing in them go back: a node of a
	 * large cluster has a connection to every member, most of them idle,
	 * and each kept its largest read chunk (64 KB or more) for good. One
	 * that carries traffic gets them back at its next read or write. */
	if (c->state == CONN_UP) {
		if (bytebuf_size(&c->in) == 0)
			bytebuf_shrink_idle(&c->in, 0);
		if (bytebuf_size(&c->out) == 0)
			bytebuf_shrink_idle(&c->out, 0);
	}
}

void dist_conn_flush_output(struct dist_conn *c)
{
	if (c->state == CONN_UP && bytebuf_size(&c->out) > 0)
		dist_conn_flush_or_close(c);
}

void dist_conn_close(struct dist_conn *c, const char *why)
{
	if (c->state == CONN_CLOSED)
		return;
	enum conn_state was = c->state;
	dist_conn_set_state(c, CONN_CLOSED, why);
	if (was == CONN_UP)
		log_info(c->settings->log, "disconnected from %s: %s", dist_conn_peer_label(c), why);
	else if (c->initiator)
		log_debug(c->settings->log, "connection %s failed in %s: %s", dist_conn_peer_label(c), state_names[was], why);
	else if (c->peer[0])
		/* Two nodes that call each other at once: one connection goes,
		 * as the protocol has it, and nothing failed. */
		log_at(c->settings->log, strncmp(why, "simultaneous connect", 20) == 0 ? LOG_DEBUG : LOG_INFO,
		       "connection %s failed in %s: %s", dist_conn_peer_label(c), state_names[was], why);
	/* A refused certificate, a peer speaking plain TCP to TLS: one line,
	 * also for a peer that never said its name. */
	if (c->tls != NULL && dist_tls_error(c->tls)[0] != '\0') {
		struct sockaddr_in sa = {0};
		socklen_t sl = sizeof sa;
		char addr[INET_ADDRSTRLEN] = "?";
		if (getpeername(c->fd, (struct sockaddr *)&sa, &sl) == 0 && sa.sin_family == AF_INET)
			inet_ntop(AF_INET, &sa.sin_addr, addr, sizeof addr);
		log_warn(c->settings->log, "TLS connection %s (%s) failed: %s", dist_conn_peer_label(c), addr,
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

struct dist_conn *dist_conn_new(void) { return calloc(1, sizeof(struct dist_conn)); }

void dist_conn_destroy(struct dist_conn *c)
{
	if (c == NULL)
		return;
	dist_conn_free(c);
	free(c);
}

/* ---- what the owner may ask ---- */

const char *dist_conn_peer(const struct dist_conn *c) { return c->peer; }
bool dist_conn_is_up(const struct dist_conn *c) { return c->state == CONN_UP; }
bool dist_conn_is_closed(const struct dist_conn *c) { return c->state == CONN_CLOSED; }
bool dist_conn_lost_race(const struct dist_conn *c) { return c->state == CONN_NOK_WAIT; }
bool dist_conn_initiated(const struct dist_conn *c) { return c->initiator; }
bool dist_conn_was_up(const struct dist_conn *c) { return c->was_up; }
uint64_t dist_conn_pending_packets(const struct dist_conn *c) { return c->pending_packets; }
uint32_t dist_conn_peer_creation(const struct dist_conn *c) { return c->peer_creation; }
bool dist_conn_peer_has(const struct dist_conn *c, uint64_t flag) { return (c->peer_flags & flag) != 0; }

void dist_conn_get_traffic(const struct dist_conn *c, struct dist_conn_traffic *out)
{
	*out = (struct dist_conn_traffic){c->bytes_in, c->bytes_out, c->packets_in, c->packets_out};
}

bool dist_conn_first_sight_of_op(struct dist_conn *c, long op)
{
	uint64_t bit = op >= 0 && op < 63 ? 1ULL << op : 1ULL << 63;
	if (c->logged_ops & bit)
		return false;
	c->logged_ops |= bit;
	return true;
}
