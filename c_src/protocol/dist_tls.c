/* dist_tls.c — see dist_tls.h. */
#include "protocol/dist_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct dist_tls_ctx {
	SSL_CTX *ssl;
	bool verify_peer;
};

struct dist_tls {
	SSL *ssl;
	enum dist_tls_wants wants;
	char error[DIST_TLS_ERR_BUF];
};

/* The reason of OpenSSL's oldest queued error, after `what`; the queue
 * is emptied, so the next call starts clean. */
static void openssl_reason(char *out, size_t outsz, const char *what)
{
	unsigned long e = ERR_get_error();
	char reason[160] = "unknown reason";
	if (e != 0)
		ERR_error_string_n(e, reason, sizeof reason);
	if (ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) == SSL_R_WRONG_VERSION_NUMBER)
		snprintf(reason, sizeof reason, "the peer does not speak TLS (a plain TCP node?)");
	ERR_clear_error();
	snprintf(out, outsz, "%s: %s", what, reason);
}

struct dist_tls_ctx *dist_tls_ctx_new(const struct dist_tls_config *cfg, char err[DIST_TLS_ERR_BUF])
{
	struct dist_tls_ctx *ctx = calloc(1, sizeof *ctx);
	if (ctx == NULL || (ctx->ssl = SSL_CTX_new(TLS_method())) == NULL) {
		snprintf(err, DIST_TLS_ERR_BUF, "TLS: out of memory");
		free(ctx);
		return NULL;
	}
	ctx->verify_peer = cfg->verify_peer;
	SSL_CTX *s = ctx->ssl;
	SSL_CTX_set_min_proto_version(s, TLS1_2_VERSION);
	/* Writes from a buffer that may move between retries (bytebuf), and
	 * partial writes accepted: the connection keeps the rest queued. */
	SSL_CTX_set_mode(s, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);
	/* A distribution connection lives long and is never resumed: no
	 * session cache, no TLS 1.3 tickets sent after the handshake. */
	SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(s, 0);
	/* A peer that closes without close_notify (a BEAM's TLS distribution
	 * does) has ended the stream, as over TCP; not a TLS failure. */
	SSL_CTX_set_options(s, SSL_OP_IGNORE_UNEXPECTED_EOF);
	/* Read the socket in large pieces, not a record header and then its
	 * body: two system calls per record otherwise. What is read ahead is
	 * held where epoll cannot see it: dist_tls_pending says so. */
	SSL_CTX_set_read_ahead(s, 1);
	const char *what = NULL;
	if (SSL_CTX_use_certificate_chain_file(s, cfg->certfile) != 1)
		what = "tls_certfile";
	else if (SSL_CTX_use_PrivateKey_file(s, cfg->keyfile, SSL_FILETYPE_PEM) != 1)
		what = "tls_keyfile";
	else if (SSL_CTX_check_private_key(s) != 1)
		what = "tls_keyfile does not match tls_certfile";
	else if (cfg->cacertfile != NULL && SSL_CTX_load_verify_locations(s, cfg->cacertfile, NULL) != 1)
		what = "tls_cacertfile";
	if (what != NULL) {
		openssl_reason(err, DIST_TLS_ERR_BUF, what);
		dist_tls_ctx_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(s, cfg->verify_peer ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_NONE,
			   NULL);
	return ctx;
}

void dist_tls_ctx_free(struct dist_tls_ctx *ctx)
{
	if (ctx == NULL)
		return;
	SSL_CTX_free(ctx->ssl);
	free(ctx);
}

struct dist_tls *dist_tls_new(struct dist_tls_ctx *ctx, int fd, bool server, const char *peer_host)
{
	struct dist_tls *t = calloc(1, sizeof *t);
	if (t == NULL || (t->ssl = SSL_new(ctx->ssl)) == NULL || SSL_set_fd(t->ssl, fd) != 1) {
		if (t != NULL)
			SSL_free(t->ssl);
		free(t);
		ERR_clear_error();
		return NULL;
	}
	if (server) {
		SSL_set_accept_state(t->ssl);
	} else {
		SSL_set_connect_state(t->ssl);
		if (peer_host != NULL) {
			unsigned char ip[16];
			bool is_ip = inet_pton(AF_INET, peer_host, ip) == 1 || inet_pton(AF_INET6, peer_host, ip) == 1;
			/* SNI is for names only (RFC 6066); the check is for both. */
			int ok = is_ip ? 1 : SSL_set_tlsext_host_name(t->ssl, peer_host);
			if (ok == 1 && ctx->verify_peer) {
				X509_VERIFY_PARAM *param = SSL_get0_param(t->ssl);
				ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, peer_host)
					   : X509_VERIFY_PARAM_set1_host(param, peer_host, 0);
			}
			if (ok != 1) {
				dist_tls_free(t);
				ERR_clear_error();
				return NULL;
			}
		}
	}
	return t;
}

void dist_tls_free(struct dist_tls *t)
{
	if (t == NULL)
		return;
	SSL_free(t->ssl);
	free(t);
}

/* Maps the result of SSL_read or SSL_write. */
static ssize_t result(struct dist_tls *t, int rc, const char *op)
{
	if (rc > 0) {
		t->wants = DIST_TLS_WANTS_NOTHING;
		return rc;
	}
	int e = SSL_get_error(t->ssl, rc);
	switch (e) {
	case SSL_ERROR_WANT_READ:
		t->wants = DIST_TLS_WANTS_READ;
		return -EAGAIN;
	case SSL_ERROR_WANT_WRITE:
		t->wants = DIST_TLS_WANTS_WRITE;
		return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return 0; /* close_notify */
	case SSL_ERROR_SYSCALL: {
		int saved = errno;
		if (ERR_peek_error() != 0) {
			openssl_reason(t->error, sizeof t->error, op);
			return -EPROTO;
		}
		ERR_clear_error();
		/* EOF without close_notify: as TCP's end of stream. */
		return saved == 0 ? 0 : -saved;
	}
	default: {
		long verify = SSL_get_verify_result(t->ssl);
		if (verify != X509_V_OK)
			snprintf(t->error, sizeof t->error, "TLS %s: peer certificate refused: %s", op,
				 X509_verify_cert_error_string(verify));
		else
			openssl_reason(t->error, sizeof t->error, op);
		ERR_clear_error();
		return -EPROTO;
	}
	}
}

ssize_t dist_tls_read(struct dist_tls *t, void *buf, size_t n)
{
	ERR_clear_error();
	errno = 0;
	int want = n > INT32_MAX ? INT32_MAX : (int)n;
	return result(t, SSL_read(t->ssl, buf, want), "read");
}

ssize_t dist_tls_write(struct dist_tls *t, const void *buf, size_t n)
{
	ERR_clear_error();
	errno = 0;
	int want = n > INT32_MAX ? INT32_MAX : (int)n;
	return result(t, SSL_write(t->ssl, buf, want), "write");
}

enum dist_tls_wants dist_tls_wants(const struct dist_tls *t) { return t->wants; }

bool dist_tls_pending(const struct dist_tls *t) { return SSL_has_pending(t->ssl) == 1; }

const char *dist_tls_error(const struct dist_tls *t) { return t->error; }
