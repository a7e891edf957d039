/*
 * resolver.h — host names to addresses without blocking the loop: the
 * first IPv4 address of a host (a peer to connect to), or every IPv4 and
 * IPv6 address of a name (the seeds of --join-dns).
 *
 * getaddrinfo() blocks (DNS, NSS), so each look-up of a name runs on a
 * short-lived thread; the answer comes back through a pipe the event loop
 * watches, and the callback runs on the loop. A numeric address ("127.0.0.1")
 * is answered without a thread, still through the loop, so callers see one
 * behaviour. Threads touch only their own request until they hand it back.
 */
#ifndef SN_RESOLVER_H
#define SN_RESOLVER_H

#include <netinet/in.h>
#include <stdbool.h>

#include "base/evloop.h"

struct resolver;
struct resolve_req;

/* Called on the loop with err 0 and the address, or -ENOENT (no such host),
 * -ENOMEM. */
typedef void (*resolve_fn)(int err, struct in_addr addr, void *arg);

/* The text of an IPv4 or IPv6 address, NUL-terminated (INET6_ADDRSTRLEN). */
#define RESOLVER_ADDR_BUF 46
/* Addresses resolver_start_all reports at most. */
#define RESOLVER_ADDRS_MAX 64

/* Called on the loop with err 0 and the n (>= 1) addresses `name` resolves
 * to, as text, each once, in the order getaddrinfo gave them (valid during
 * the call); or err -ENOENT (no such name, or no address), -ENOMEM. */
typedef void (*resolve_all_fn)(int err, const char (*addrs)[RESOLVER_ADDR_BUF], size_t n, void *arg);

/* Returns a resolver watching its pipe on `loop`, or NULL (errno set). */
struct resolver *resolver_new(struct evloop *loop);

/* Frees the resolver. Look-ups still running finish on their threads and
 * are discarded; the resolver's memory is kept until the last one ends. */
void resolver_free(struct resolver *r);

/* Starts resolving `host`. Returns a handle for resolver_cancel, or NULL with
 * *err set (-ENOMEM, -EAGAIN: 16 look-ups of names already running on
 * threads, or 256 numeric answers not yet read, -EINVAL for an over-long
 * name); `done` is then not called. A numeric IPv4 address takes no thread
 * and is answered on the next turn. */
struct resolve_req *resolver_start(struct resolver *r, const char *host, resolve_fn done, void *arg,
				   int *err);

/* As resolver_start, for every A and AAAA address of `name` (at most
 * RESOLVER_ADDRS_MAX), answered by `done`. */
struct resolve_req *resolver_start_all(struct resolver *r, const char *name, resolve_all_fn done, void *arg,
				       int *err);

/* The callback of req will not be called. Safe until the callback has run. */
void resolver_cancel(struct resolve_req *req);

#endif
