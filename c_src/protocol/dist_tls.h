/*
 * dist_tls.h — TLS for distribution connections, as inet_tls_dist does it
 * (OpenSSL): the node's TLS settings as one context, and per connection a
 * non-blocking TLS session over a socket the connection owns, driven by
 * the event loop's readiness — no blocking handshake, no thread.
 *
 * What changes inside TLS (OTP's inet_tls_dist.erl): the distribution
 * handshake's messages are framed by a 4-byte length, not 2, since its
 * socket is in {packet, 4} mode from the start; the packets after it are
 * framed as over TCP. The cookie check still runs inside TLS.
 *
 * Reads and writes may each need the other direction (a TLS handshake or
 * renegotiation step): after -EAGAIN, dist_tls_wants() says which
 * readiness to wait for before calling the same function again.
 */
#ifndef SN_DIST_TLS_H
#define SN_DIST_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define DIST_TLS_ERR_BUF 256

/* The node's settings; paths are read once, by dist_tls_ctx_new. */
struct dist_tls_config {
	const char *certfile;   /* this node's certificate chain (PEM) */
	const char *keyfile;    /* its private key (PEM) */
	const char *cacertfile; /* the CAs a peer's certificate must chain to (PEM) */
	/* true (tls_verify = peer): a peer must present a certificate that
	 * chains to the CA, in both roles (mutual TLS), and a client checks
	 * the server's name (dist_tls_new); false (none): no check. */
	bool verify_peer;
};

struct dist_tls_ctx;
struct dist_tls;

/* Loads the certificate, key and CA of cfg into one context for both
 * roles, TLS 1.2 and 1.3. Returns it, or NULL with a one-line reason in
 * err (a file that cannot be read, a key that does not match). */
struct dist_tls_ctx *dist_tls_ctx_new(const struct dist_tls_config *cfg, char err[DIST_TLS_ERR_BUF]);

/* NULL is fine. Sessions made from ctx must be freed first. */
void dist_tls_ctx_free(struct dist_tls_ctx *ctx);

/* A session over the connected, non-blocking socket fd (not owned: the
 * caller closes it after dist_tls_free). `server`: this side accepted the
 * connection. A client verifies that the peer's certificate names
 * `peer_host` (a DNS name or an IP address: the host part of the node
 * name, as inet_tls_dist's server_name_indication) when the context
 * verifies peers; NULL: no name check. The TLS handshake runs within the
 * first reads and writes. Returns NULL when out of memory. */
struct dist_tls *dist_tls_new(struct dist_tls_ctx *ctx, int fd, bool server, const char *peer_host);

/* NULL is fine. Sends no close_notify: the caller is dropping the
 * connection. */
void dist_tls_free(struct dist_tls *t);

/* Reads up to n decrypted bytes. Returns > 0; 0 when the peer closed the
 * connection; -EAGAIN (nothing now: see dist_tls_wants); -EPROTO for a
 * TLS failure (a certificate refused, bad records: dist_tls_error says
 * which); or -errno of the socket. */
ssize_t dist_tls_read(struct dist_tls *t, void *buf, size_t n);

/* Writes n > 0 bytes, or part of them. Returns how many were taken (> 0),
 * or as dist_tls_read. After -EAGAIN the same bytes must be offered again. */
ssize_t dist_tls_write(struct dist_tls *t, const void *buf, size_t n);

/* After -EAGAIN: the last call waits for the socket to be readable
 * (DIST_TLS_WANTS_READ) or writable (DIST_TLS_WANTS_WRITE). */
enum dist_tls_wants { DIST_TLS_WANTS_NOTHING, DIST_TLS_WANTS_READ, DIST_TLS_WANTS_WRITE };
enum dist_tls_wants dist_tls_wants(const struct dist_tls *t);

/* Bytes already held, decrypted or read ahead from the socket: readable
 * without the socket being so, so the caller must read them now. */
bool dist_tls_pending(const struct dist_tls *t);

/* Why the last call failed, one line ("" if it did not). */
const char *dist_tls_error(const struct dist_tls *t);

#endif
