/*
 * test_dist_tls.c — TLS sessions of dist_tls.h over a real socket pair,
 * both ends non-blocking, with certificates scripts/tls-certs.sh makes:
 * a mutual handshake and a megabyte each way through partial writes; a
 * client certificate of another CA refused by the server; a server whose
 * certificate does not name the host the client expects refused; settings
 * that cannot load named.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "protocol/dist_tls.h"

static char dir[] = "/tmp/sn-tls-XXXXXX";

static void make_certs(void)
{
	/* As in the node (node_app.c): a write to a closed peer is an error
	 * returned, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	cr_assert_not_null(mkdtemp(dir));
	char cmd[256];
	snprintf(cmd, sizeof cmd, "scripts/tls-certs.sh %s", dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void remove_certs(void)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static struct dist_tls_ctx *ctx_of(const char *cert, const char *ca, bool verify)
{
	char certfile[128], keyfile[128], cafile[128], err[DIST_TLS_ERR_BUF];
	snprintf(certfile, sizeof certfile, "%s/%s.pem", dir, cert);
	snprintf(keyfile, sizeof keyfile, "%s/%s.key", dir, cert);
	snprintf(cafile, sizeof cafile, "%s/%s.pem", dir, ca);
	struct dist_tls_config cfg = {certfile, keyfile, cafile, verify};
	struct dist_tls_ctx *ctx = dist_tls_ctx_new(&cfg, err);
	cr_assert_not_null(ctx, "%s", err);
	return ctx;
}

/* One end: its session, what it still has to send and what it got. */
struct end {
	struct dist_tls *tls;
	const char *out;
	size_t out_len, sent;
	char *in;
	size_t in_len, in_cap;
	ssize_t failed; /* < 0: the error that ended it */
};

/* One step of an end: write what is left, then read what is there.
 * Returns whether it moved. */
static bool step(struct end *e)
{
	bool moved = false;
	if (e->failed)
		return false;
	if (e->sent < e->out_len) {
		ssize_t w = dist_tls_write(e->tls, e->out + e->sent, e->out_len - e->sent);
		if (w > 0) {
			e->sent += (size_t)w;
			moved = true;
		} else if (w != -EAGAIN) {
			e->failed = w < 0 ? w : -EPIPE;
			return true;
		}
	}
	for (;;) {
		if (e->in_len == e->in_cap) {
			e->in_cap = e->in_cap ? 2 * e->in_cap : 65536;
			e->in = realloc(e->in, e->in_cap);
			cr_assert_not_null(e->in);
		}
		ssize_t r = dist_tls_read(e->tls, e->in + e->in_len, e->in_cap - e->in_len);
		if (r > 0) {
			e->in_len += (size_t)r;
			moved = true;
			continue;
		}
		if (r != -EAGAIN)
			e->failed = r < 0 ? r : -EPIPE;
		return moved || r != -EAGAIN;
	}
}

/* Runs both ends until neither moves (each socket is non-blocking, so a
 * step never waits). */
static void pump(struct end *a, struct end *b)
{
	for (int still = 0; still < 3;)
		still = step(a) | step(b) ? 0 : still + 1;
}

static void pair(int fds[2])
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
}

static char *pattern(size_t n, unsigned seed)
{
	char *p = malloc(n);
	cr_assert_not_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = (char)(seed + i * 7 + (i >> 10));
	return p;
}

Test(dist_tls, mutual_handshake_and_a_megabyte_each_way, .init = make_certs, .fini = remove_certs)
{
	struct dist_tls_ctx *ctx = ctx_of("node", "ca", true);
	int fds[2];
	pair(fds);
	enum { N = 1 << 20 };
	char *to_server = pattern(N, 1), *to_client = pattern(N, 2);
	struct end client = {.tls = dist_tls_new(ctx, fds[0], false, "127.0.0.1"), .out = to_server, .out_len = N};
	struct end server = {.tls = dist_tls_new(ctx, fds[1], true, NULL), .out = to_client, .out_len = N};
	cr_assert(client.tls && server.tls);
	pump(&client, &server);
	cr_assert_eq(client.failed, 0, "%s", dist_tls_error(client.tls));
	cr_assert_eq(server.failed, 0, "%s", dist_tls_error(server.tls));
	cr_assert_eq(server.in_len, (size_t)N);
	cr_assert_eq(client.in_len, (size_t)N);
	cr_assert_arr_eq(server.in, to_server, N);
	cr_assert_arr_eq(client.in, to_client, N);
	/* The peer gone: end of stream, as over TCP. */
	dist_tls_free(client.tls);
	close(fds[0]);
	char byte;
	ssize_t r = dist_tls_read(server.tls, &byte, 1);
	cr_assert_eq(r, 0, "%zd: %s", r, dist_tls_error(server.tls));
	dist_tls_free(server.tls);
	close(fds[1]);
	dist_tls_ctx_free(ctx);
	free(to_server), free(to_client), free(client.in), free(server.in);
}

/* A handshake that must fail: the error each end reports. */
static void refused(struct dist_tls_ctx *client_ctx, const char *expect_host, struct dist_tls_ctx *server_ctx,
		    ssize_t *client_rc, ssize_t *server_rc, char client_err[DIST_TLS_ERR_BUF],
		    char server_err[DIST_TLS_ERR_BUF])
{
	int fds[2];
	pair(fds);
	struct end client = {.tls = dist_tls_new(client_ctx, fds[0], false, expect_host), .out = "hello", .out_len = 5};
	struct end server = {.tls = dist_tls_new(server_ctx, fds[1], true, NULL), .out = "hi", .out_len = 2};
	pump(&client, &server);
	*client_rc = client.failed;
	*server_rc = server.failed;
	snprintf(client_err, DIST_TLS_ERR_BUF, "%s", dist_tls_error(client.tls));
	snprintf(server_err, DIST_TLS_ERR_BUF, "%s", dist_tls_error(server.tls));
	cr_assert_eq(server.in_len, 0, "nothing reaches the server");
	dist_tls_free(client.tls);
	dist_tls_free(server.tls);
	close(fds[0]);
	close(fds[1]);
	free(client.in), free(server.in);
}

Test(dist_tls, a_client_of_another_ca_is_refused, .init = make_certs, .fini = remove_certs)
{
	struct dist_tls_ctx *server = ctx_of("node", "ca", true);
	/* The client trusts both CAs; its own certificate is the other CA's. */
	struct dist_tls_ctx *client = ctx_of("other", "ca", false);
	ssize_t crc, src;
	char cerr[DIST_TLS_ERR_BUF], serr[DIST_TLS_ERR_BUF];
	refused(client, NULL, server, &crc, &src, cerr, serr);
	cr_assert_eq(src, -EPROTO);
	cr_assert_not_null(strstr(serr, "certificate"), "%s", serr);
	cr_assert_neq(crc, 0, "the client learns it too");
	dist_tls_ctx_free(server);
	dist_tls_ctx_free(client);
}

Test(dist_tls, a_server_of_another_ca_or_name_is_refused, .init = make_certs, .fini = remove_certs)
{
	struct dist_tls_ctx *client = ctx_of("node", "ca", true);
	struct dist_tls_ctx *foreign = ctx_of("other", "ca", false);
	struct dist_tls_ctx *server = ctx_of("node", "ca", false);
	ssize_t crc, src;
	char cerr[DIST_TLS_ERR_BUF], serr[DIST_TLS_ERR_BUF];
	refused(client, "127.0.0.1", foreign, &crc, &src, cerr, serr);
	cr_assert_eq(crc, -EPROTO);
	cr_assert_not_null(strstr(cerr, "certificate"), "%s", cerr);
	/* The right CA, but a certificate for another host. */
	refused(client, "10.1.2.3", server, &crc, &src, cerr, serr);
	cr_assert_eq(crc, -EPROTO);
	cr_assert_not_null(strstr(cerr, "certificate"), "%s", cerr);
	refused(client, "elsewhere.example", server, &crc, &src, cerr, serr);
	cr_assert_eq(crc, -EPROTO);
	dist_tls_ctx_free(client);
	dist_tls_ctx_free(foreign);
	dist_tls_ctx_free(server);
}

Test(dist_tls, settings_that_cannot_load_are_named, .init = make_certs, .fini = remove_certs)
{
	char node[128], key[128], other_key[128], ca[128], err[DIST_TLS_ERR_BUF];
	snprintf(node, sizeof node, "%s/node.pem", dir);
	snprintf(key, sizeof key, "%s/node.key", dir);
	snprintf(other_key, sizeof other_key, "%s/other.key", dir);
	snprintf(ca, sizeof ca, "%s/ca.pem", dir);
	struct dist_tls_config cfg = {"/nonexistent.pem", key, ca, true};
	cr_assert_null(dist_tls_ctx_new(&cfg, err));
	cr_assert_not_null(strstr(err, "tls_certfile"), "%s", err);
	cfg = (struct dist_tls_config){node, "/nonexistent.key", ca, true};
	cr_assert_null(dist_tls_ctx_new(&cfg, err));
	cr_assert_not_null(strstr(err, "tls_keyfile"), "%s", err);
	cfg = (struct dist_tls_config){node, other_key, ca, true};
	cr_assert_null(dist_tls_ctx_new(&cfg, err));
	cr_assert_not_null(strstr(err, "tls_keyfile"), "%s", err);
	cfg = (struct dist_tls_config){node, key, "/nonexistent-ca.pem", true};
	cr_assert_null(dist_tls_ctx_new(&cfg, err));
	cr_assert_not_null(strstr(err, "tls_cacertfile"), "%s", err);
}
