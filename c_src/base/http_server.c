/* http_server.c — see http_server.h. */
#include "base/http_server.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <bsd/string.h>

#include "base/http_request.h"

/* How long a closing connection's input is drained before it is closed
 * anyway. */
#define LINGER_MS 2000

/* A rendered page, shared by the connections sending it. */
struct page {
	struct bytebuf body;
	unsigned refs;        /* the server's (while current) and each sender's */
	uint64_t rendered_ms; /* the loop's clock when rendered */
};

struct http_conn {
	struct http_conn *prev, *next;
	struct http_server *srv;
	int fd;
	struct evloop_timer timer;
	bool writing;       /* a response is going out: input waits */
	bool close_after;   /* close once it is out */
	bool draining;      /* it is out and our side shut: input is read and dropped until the client closes */
	size_t consumed;    /* bytes of `in` the response answers */
	char head[256];     /* the response's status line and headers */
	size_t head_len, head_off;
	struct page *page;  /* the body, when it is the page */
	const char *body;   /* the body: the page's, a static text or `text` */
	char text[256];     /* a check's answer */
	size_t body_len, body_off;
	size_t in_len;
	char in[];          /* max_head bytes */
};

struct http_server {
	struct http_server_config cfg;
	int fd;
	uint16_t port;
	struct http_conn *conns;
	struct page *current; /* the last rendering, while scrapes may share it */
	struct page *spare;   /* a page no one sends, kept for its memory */
	struct http_server_stats stats;
};

static uint64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- pages ---- */

static void page_release(struct http_server *s, struct page *p)
{
	if (p == NULL || --p->refs > 0)
		return;
	if (s->spare == NULL) {
		p->body.off = p->body.len = 0;
		s->spare = p;
	} else {
		bytebuf_free(&p->body);
		free(p);
	}
}

/* The page to send now, with a reference for the caller; NULL when it
 * cannot be rendered (out of memory). */
static struct page *page_now(struct http_server *s)
{
	uint64_t now = evloop_now_ms(s->cfg.loop);
	if (s->current != NULL && s->current->rendered_ms == now) {
		s->current->refs++;
		return s->current;
	}
	page_release(s, s->current);
	s->current = NULL;
	struct page *p = s->spare;
	s->spare = NULL;
	if (p == NULL && (p = calloc(1, sizeof *p)) == NULL)
		return NULL;
	uint64_t t0 = clock_ns();
	int rc = s->cfg.render(s->cfg.render_arg, &p->body);
	s->stats.last_render_ns = clock_ns() - t0;
	s->stats.renders++;
	p->refs = 1;
	if (rc != 0) {
		page_release(s, p);
		return NULL;
	}
	p->rendered_ms = now;
	p->refs = 2; /* the server's, the caller's */
	s->current = p;
	return p;
}

/* ---- connections ---- */

static void conn_close(struct http_conn *c)
{
	struct http_server *s = c->srv;
	evloop_unwatch(s->cfg.loop, c->fd);
	close(c->fd);
	evloop_timer_stop(s->cfg.loop, &c->timer);
	page_release(s, c->page);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->stats.open--;
	free(c);
}

static void on_timeout(struct evloop *loop, void *arg)
{
	(void)loop;
	struct http_conn *c = arg;
	if (c->draining) {
		conn_close(c);
		return;
	}
	c->srv->stats.timeouts++;
	log_debug(c->srv->cfg.log, "metrics endpoint: a connection sent no whole request in %u ms: closed",
		  c->srv->cfg.request_timeout_ms);
	conn_close(c);
}

static void conn_watch(struct http_conn *c)
{
	evloop_rewatch(c->srv->cfg.loop, c->fd, c->writing ? EPOLLOUT : EPOLLIN);
}

/* Fills head for a response of `status` whose body is body_len bytes. */
static void respond(struct http_conn *c, const char *status, const char *content_type, const char *extra,
		    size_t body_len)
{
	int n = snprintf(c->head, sizeof c->head,
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s\r\n", status, content_type,
			 body_len, extra ? extra : "", c->close_after ? "Connection: close\r\n" : "");
	c->head_len = n > 0 && (size_t)n < sizeof c->head ? (size_t)n : 0;
	c->head_off = 0;
	c->body_off = 0;
	c->writing = true;
	c->srv->stats.requests++;
	/* The response, too, must be taken within the timeout: a client that
	 * never reads does not keep its slot. */
	evloop_timer_start(c->srv->cfg.loop, &c->timer, c->srv->cfg.request_timeout_ms);
}

static void respond_text(struct http_conn *c, const char *status, const char *text, const char *extra)
{
	c->page = NULL;
	c->body = text;
	c->body_len = strlen(text);
	respond(c, status, "text/plain; charset=utf-8", extra, c->body_len);
}

static bool path_is(const struct http_request *req, const char *path)
{
	return path != NULL && req->path_len == strlen(path) && memcmp(req->path, path, req->path_len) == 0;
}

/* The check served at the request's path, or NULL. */
static const struct http_check *check_of(const struct http_server *s, const struct http_request *req)
{
	for (size_t k = 0; k < HTTP_SERVER_CHECKS_MAX; k++)
		if (s->cfg.checks[k].path != NULL && path_is(req, s->cfg.checks[k].path))
			return &s->cfg.checks[k];
	return NULL;
}

/* 200 "ok", or 503 with the check's reason, from c->text. */
static void answer_check(struct http_conn *c, const struct http_check *check, bool head_only)
{
	char reason[sizeof c->text - 1];
	reason[0] = '\0';
	bool well = check->check(check->arg, reason, sizeof reason);
	if (!well && reason[0] == '\0')
		strlcpy(reason, "not ready", sizeof reason);
	int n = snprintf(c->text, sizeof c->text, "%s\n", well ? "ok" : reason);
	c->srv->stats.checks++;
	c->page = NULL;
	c->body = c->text;
	c->body_len = n > 0 ? strlen(c->text) : 0;
	respond(c, well ? "200 OK" : "503 Service Unavailable", "text/plain; charset=utf-8", NULL, c->body_len);
	if (head_only)
		c->body_len = 0;
}

/* Answers the request whose head is the first `len` bytes of c->in. */
static void answer(struct http_conn *c, const struct http_request *req, size_t len)
{
	struct http_server *s = c->srv;
	c->consumed = len;
	c->close_after = !req->keep_alive;
	bool head_only = req->method_len == 4 && memcmp(req->method, "HEAD", 4) == 0;
	bool get = req->method_len == 3 && memcmp(req->method, "GET", 3) == 0;
	const struct http_check *check = check_of(s, req);
	if (check == NULL && !path_is(req, s->cfg.path)) {
		respond_text(c, "404 Not Found", "not found\n", NULL);
		return;
	}
	if (!get && !head_only) {
		respond_text(c, "405 Method Not Allowed", "method not allowed\n", "Allow: GET, HEAD\r\n");
		return;
	}
	if (check != NULL) {
		answer_check(c, check, head_only);
		return;
	}
	struct page *p = page_now(s);
	if (p == NULL) {
		respond_text(c, "503 Service Unavailable", "out of memory\n", NULL);
		return;
	}
	s->stats.pages++;
	c->page = p;
	c->body = (const char *)bytebuf_head(&p->body);
	size_t size = bytebuf_size(&p->body);
	respond(c, "200 OK", s->cfg.content_type, NULL, size);
	c->body_len = head_only ? 0 : size;
}

static void bad_request(struct http_conn *c, const char *why)
{
	c->srv->stats.bad_requests++;
	log_debug(c->srv->cfg.log, "metrics endpoint: bad request: %s", why);
	c->close_after = true;
	c->consumed = c->in_len;
	respond_text(c, "400 Bad Request", "bad request\n", NULL);
}

/* Parses what c->in holds: answers a whole head, refuses a bad one, or
 * waits for more. */
static void conn_parse(struct http_conn *c)
{
	struct http_request req;
	const char *why = "bad request";
	long rc = http_request_parse(c->in, c->in_len, c->srv->cfg.max_head, &req, &why);
	if (rc > 0)
		answer(c, &req, (size_t)rc);
	else if (rc != HTTP_PARSE_INCOMPLETE)
		bad_request(c, why);
}

static bool conn_flush(struct http_conn *c);

/* After a response: close (lingering), or take the next request
 * (pipelined bytes may hold it already). Returns false if the connection
 * closed or is closing: nothing more is written to it. */
static bool conn_next(struct http_conn *c)
{
	page_release(c->srv, c->page);
	c->page = NULL;
	c->writing = false;
	if (c->close_after) {
		/* A lingering close: closing with unread input would send a
		 * reset that can destroy the response before the client reads
		 * it (a 400 for an oversized head, say). So shut our side, drop
		 * what still comes, and close when the client does, or at the
		 * timeout. */
		if (shutdown(c->fd, SHUT_WR) != 0) {
			conn_close(c);
			return false;
		}
		c->draining = true;
		evloop_timer_start(c->srv->cfg.loop, &c->timer, LINGER_MS);
		conn_watch(c);
		return false;
	}
	memmove(c->in, c->in + c->consumed, c->in_len - c->consumed);
	c->in_len -= c->consumed;
	c->consumed = 0;
	evloop_timer_start(c->srv->cfg.loop, &c->timer, c->srv->cfg.request_timeout_ms);
	conn_parse(c);
	return true;
}

/* Writes what the socket takes, and goes on to the next request. Returns
 * false if the connection closed or is closing. */
static bool conn_flush(struct http_conn *c)
{
	while (c->writing) {
		struct iovec iov[2];
		int n = 0;
		if (c->head_off < c->head_len)
			iov[n++] = (struct iovec){c->head + c->head_off, c->head_len - c->head_off};
		if (c->body_off < c->body_len)
			iov[n++] = (struct iovec){(void *)(c->body + c->body_off), c->body_len - c->body_off};
		if (n == 0) {
			if (!conn_next(c))
				return false;
			continue;
		}
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			conn_close(c);
			return false;
		}
		size_t left = (size_t)w, h = c->head_len - c->head_off;
		size_t from_head = left < h ? left : h;
		c->head_off += from_head;
		c->body_off += left - from_head;
	}
	conn_watch(c);
	return true;
}

static void conn_on_io(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	(void)loop;
	(void)fd;
	struct http_conn *c = arg;
	if (c->writing) {
		if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			conn_flush(c);
		return;
	}
	if (c->draining) {
		char sink[4096];
		ssize_t r = recv(c->fd, sink, sizeof sink, 0);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			conn_close(c);
		return;
	}
	size_t room = c->srv->cfg.max_head - c->in_len;
	ssize_t r = room > 0 ? recv(c->fd, c->in + c->in_len, room, 0) : 0;
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0 && room > 0) {
		conn_close(c); /* the client closed, or the socket failed */
		return;
	}
	c->in_len += (size_t)r;
	conn_parse(c);
	if (c->writing)
		conn_flush(c);
}

/* ---- the listener ---- */

static void on_accept(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	(void)events;
	struct http_server *s = arg;
	/* Bounded per event, so a connection flood cannot starve the loop. */
	for (int k = 0; k < 64; k++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn(s->cfg.log, "metrics endpoint: accept: %s", strerror(errno));
			return;
		}
		struct http_conn *c = NULL;
		if (s->stats.open >= s->cfg.max_connections || (c = calloc(1, sizeof *c + s->cfg.max_head)) == NULL) {
			if (s->stats.refused++ % 1000 == 0)
				log_warn(s->cfg.log, "metrics endpoint: connection refused: %u open", s->stats.open);
			close(cfd);
			continue;
		}
		c->srv = s;
		c->fd = cfd;
		evloop_timer_init(&c->timer, on_timeout, c);
		if (evloop_watch(loop, cfd, EPOLLIN, conn_on_io, c) != 0) {
			close(cfd);
			free(c);
			continue;
		}
		evloop_timer_start(loop, &c->timer, s->cfg.request_timeout_ms);
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->stats.open++;
	}
}

struct http_server *http_server_start(const struct http_server_config *cfg, int *err)
{
	struct http_server *s = calloc(1, sizeof *s);
	if (s == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	s->cfg = *cfg;
	s->fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	bool v6 = s->fd >= 0;
	if (!v6)
		s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		*err = -errno;
		free(s);
		return NULL;
	}
	int one = 1, zero = 0;
	setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	int rc;
	if (v6) {
		/* every address, IPv4 ones too */
		setsockopt(s->fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
		struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons(cfg->port), .sin6_addr = in6addr_any};
		rc = bind(s->fd, (struct sockaddr *)&a, sizeof a);
	} else {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(cfg->port),
					.sin_addr.s_addr = htonl(INADDR_ANY)};
		rc = bind(s->fd, (struct sockaddr *)&a, sizeof a);
	}
	union {
		struct sockaddr sa;
		struct sockaddr_in in4;
		struct sockaddr_in6 in6;
	} bound;
	memset(&bound, 0, sizeof bound);
	socklen_t blen = sizeof bound;
	if (rc != 0 || listen(s->fd, 1024) != 0 || getsockname(s->fd, &bound.sa, &blen) != 0 ||
	    (rc = evloop_watch(cfg->loop, s->fd, EPOLLIN, on_accept, s)) != 0) {
		*err = rc < 0 && rc != -1 ? rc : -errno;
		close(s->fd);
		free(s);
		return NULL;
	}
	s->port = ntohs(bound.sa.sa_family == AF_INET6 ? bound.in6.sin6_port : bound.in4.sin_port);
	return s;
}

uint16_t http_server_port(const struct http_server *s) { return s->port; }

void http_server_get_stats(const struct http_server *s, struct http_server_stats *out) { *out = s->stats; }

void http_server_free(struct http_server *s)
{
	if (s == NULL)
		return;
	for (struct http_conn *c = s->conns, *next; c != NULL; c = next) {
		next = c->next;
		conn_close(c);
	}
	evloop_unwatch(s->cfg.loop, s->fd);
	close(s->fd);
	page_release(s, s->current);
	if (s->spare) {
		bytebuf_free(&s->spare->body);
		free(s->spare);
	}
	free(s);
}
