/*
 * http_server.h — a small HTTP/1.1 server on the event loop that serves one
 * page, rendered by a callback (the metrics endpoint), and a few checks
 * that answer 200 or 503 with one line (the health probes; docs/contract.md,
 * "Metrics" and "Health").
 *
 * It can never slow or stop the loop it runs on:
 *   - request heads are parsed by http_request.h (strict; a malformed or
 *     oversized head gets 400 and the connection is closed); nothing is
 *     allocated per request: a connection's buffers come with it;
 *   - the page is rendered at most once per millisecond of the loop's
 *     clock: scrapes that arrive together share one rendering, which each
 *     connection sends from without a copy (and the last page's memory is
 *     kept for the next rendering);
 *   - a connection that has not sent a whole request head within
 *     request_timeout_ms of its accept (or of its last response) is closed,
 *     so a client sending one byte a second holds one slot for a while and
 *     nothing else; beyond max_connections, new connections are closed at
 *     once;
 *   - responses are written as the socket takes them; a client that does
 *     not read holds only its own connection.
 *
 * GET and HEAD of `path` (the query ignored) get 200; of a check's path,
 * 200 "ok" or 503 with the check's reason; another path 404; another method
 * on a served path 405. Keep-alive and pipelined requests are served in
 * order.
 */
#ifndef SN_HTTP_SERVER_H
#define SN_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bytebuf.h"
#include "base/evloop.h"
#include "base/log.h"

/* Appends the page's body to `out` (empty when called). Returns 0, or
 * -ENOMEM: the request gets 503. */
typedef int (*http_render_fn)(void *arg, struct bytebuf *out);

/* A check: returns true when well, or false with a one-line reason (no
 * newline) written into reason (cap bytes, NUL-terminated). Runs on the
 * loop for each request: it must be cheap. */
typedef bool (*http_check_fn)(void *arg, char *reason, size_t cap);

struct http_check {
	const char *path; /* "/health/ready"; not owned */
	http_check_fn check;
	void *arg;
};

#define HTTP_SERVER_CHECKS_MAX 4

struct http_server_config {
	struct evloop *loop;         /* not owned; outlives the server */
	const struct logger *log;    /* not owned; outlives the server */
	uint16_t port;               /* 0: an ephemeral port (http_server_port says which) */
	const char *path;            /* the page's path, "/metrics"; not owned */
	const char *content_type;    /* of the page; not owned */
	http_render_fn render;
	void *render_arg;
	struct http_check checks[HTTP_SERVER_CHECKS_MAX]; /* those with a path are served */
	uint32_t max_connections;    /* open at once; more are closed at accept */
	uint32_t request_timeout_ms; /* for a whole request head */
	size_t max_head;             /* bytes of a request head (and of a connection's input buffer) */
};

struct http_server_stats {
	uint64_t requests;     /* answered, whatever the status */
	uint64_t pages;        /* 200s of the page */
	uint64_t checks;       /* check requests answered */
	uint64_t renders;      /* pages rendered (scrapes arriving together share one) */
	uint64_t bad_requests; /* 400s: malformed or oversized heads */
	uint64_t timeouts;     /* connections closed for want of a whole head */
	uint64_t refused;      /* closed at accept: max_connections open */
	uint64_t last_render_ns;
	uint32_t open;         /* connections open now */
};

struct http_server;

/* Listens on cfg->port on every address and serves on cfg->loop. Returns
 * the server, or NULL with *err a negative errno (the port taken:
 * -EADDRINUSE). The config is copied; the strings it points to are not. */
struct http_server *http_server_start(const struct http_server_config *cfg, int *err);

/* The port listened on. */
uint16_t http_server_port(const struct http_server *s);

void http_server_get_stats(const struct http_server *s, struct http_server_stats *out);

/* Closes the listener and every connection, and frees the server. NULL is
 * ignored. */
void http_server_free(struct http_server *s);

#endif
