/* resolver.c — see resolver.h. */
#include "base/resolver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Look-ups running on threads at once; more fail with -EAGAIN rather than
 * pile up threads behind a dead DNS server. */
#define MAX_THREADS 16
/* Numeric addresses answered through the pipe and not yet read: a member
 * that connects to many peers at once (127.0.0.1 or an IP in every name)
 * must not be refused for the 16 threads, yet the loop, the pipe's only
 * reader, must never block on a full pipe (4 KiB, 512 answers, at the
 * least): with the threads' 16, 272 answers at most are in it. */
#define MAX_NUMERIC 256

struct resolve_req {
	struct resolver *owner;
	resolve_fn done;         /* one IPv4 address; or */
	resolve_all_fn done_all; /* every address, into addrs */
	void *arg;
	bool cancelled;    /* loop side only */
	bool on_thread;    /* loop side only: counted in the resolver's threads */
	int err;           /* written by the thread before it hands the request back */
	struct in_addr addr;
	char host[256];
	size_t naddrs;
	char (*addrs)[RESOLVER_ADDR_BUF]; /* done_all only: RESOLVER_ADDRS_MAX of them */
};

struct resolver {
	struct evloop *loop;
	int pipe_rd, pipe_wr;
	unsigned threads; /* look-ups on threads not yet delivered; loop side only */
	unsigned numeric; /* numeric answers in the pipe not yet delivered; loop side only */
	/* One reference for the loop's owner and one per running thread; the
	 * last to let go frees the resolver, so a thread never writes to a
	 * closed pipe. */
	atomic_uint refs;
};

static void req_free(struct resolve_req *req)
{
	free(req->addrs);
	free(req);
}

/* Frees the resolver and any answers nobody will read. Only the holder of
 * the last reference calls it. */
static void destroy(struct resolver *r)
{
	struct resolve_req *req;
	while (read(r->pipe_rd, &req, sizeof req) == (ssize_t)sizeof req)
		req_free(req);
	close(r->pipe_rd);
	close(r->pipe_wr);
	free(r);
}

static void deliver(struct resolver *r, struct resolve_req *req)
{
	if (req->on_thread)
		r->threads--;
	else
		r->numeric--;
	if (!req->cancelled && req->done)
		req->done(req->err, req->addr, req->arg);
	if (!req->cancelled && req->done_all)
		req->done_all(req->err, (const char (*)[RESOLVER_ADDR_BUF])req->addrs, req->naddrs, req->arg);
	req_free(req);
}

static void on_pipe(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	(void)loop;
	(void)events;
	struct resolver *r = arg;
	struct resolve_req *reqs[32];
	ssize_t n = read(fd, reqs, sizeof reqs);
	if (n <= 0)
		return;
	/* Pointer writes of at most PIPE_BUF bytes are atomic, so only whole
	 * pointers arrive. */
	for (size_t k = 0; k < (size_t)n / sizeof reqs[0]; k++)
		deliver(r, reqs[k]);
}

/* Every address of res, as text, each once, into req->addrs. */
static void collect_all(struct resolve_req *req, const struct addrinfo *res)
{
	for (const struct addrinfo *a = res; a != NULL && req->naddrs < RESOLVER_ADDRS_MAX; a = a->ai_next) {
		char text[RESOLVER_ADDR_BUF];
		const void *bin = a->ai_family == AF_INET ? (const void *)&((const struct sockaddr_in *)a->ai_addr)->sin_addr
							   : (const void *)&((const struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
		if ((a->ai_family != AF_INET && a->ai_family != AF_INET6) ||
		    inet_ntop(a->ai_family, bin, text, sizeof text) == NULL)
			continue;
		bool seen = false;
		for (size_t k = 0; k < req->naddrs && !seen; k++)
			seen = strcmp(req->addrs[k], text) == 0;
		if (!seen)
			memcpy(req->addrs[req->naddrs++], text, sizeof text);
	}
}

static void *lookup_thread(void *p)
{
	struct resolve_req *req = p;
	struct resolver *r = req->owner;
	bool all = req->done_all != NULL;
	struct addrinfo hints = {.ai_family = all ? AF_UNSPEC : AF_INET, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	if (getaddrinfo(req->host, NULL, &hints, &res) == 0 && res != NULL) {
		if (all)
			collect_all(req, res);
		else
			req->addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
		req->err = all && req->naddrs == 0 ? -ENOENT : 0;
	} else {
		req->err = -ENOENT;
	}
	freeaddrinfo(res);
	ssize_t w;
	do {
		w = write(r->pipe_wr, &req, sizeof req);
	} while (w < 0 && errno == EINTR);
	if (atomic_fetch_sub(&r->refs, 1) == 1)
		destroy(r); /* the owner let go first; this answer goes unheard */
	return NULL;
}

struct resolver *resolver_new(struct evloop *loop)
{
	struct resolver *r = calloc(1, sizeof *r);
	if (r == NULL)
		return NULL;
	int fds[2];
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) {
		free(r);
		return NULL;
	}
	/* The thread's end blocks: a handed-back request must not be lost. */
	fcntl(fds[1], F_SETFL, 0);
	r->loop = loop;
	atomic_init(&r->refs, 1);
	r->pipe_rd = fds[0];
	r->pipe_wr = fds[1];
	if (evloop_watch(loop, r->pipe_rd, EPOLLIN, on_pipe, r) != 0) {
		destroy(r);
		return NULL;
	}
	return r;
}

void resolver_free(struct resolver *r)
{
	if (r == NULL)
		return;
	evloop_unwatch(r->loop, r->pipe_rd);
	if (atomic_fetch_sub(&r->refs, 1) == 1)
		destroy(r);
}

/* Starts a look-up of req (filled but for its owner) on a thread, or
 * answers a numeric IPv4 address (one-address look-ups only) through the
 * pipe. Takes req: on failure it is freed and *err set. */
static struct resolve_req *start(struct resolver *r, struct resolve_req *req, int *err)
{
	req->owner = r;
	if (req->done != NULL && inet_pton(AF_INET, req->host, &req->addr) == 1) {
		/* No thread needed; answer through the pipe all the same. */
		if (r->numeric >= MAX_NUMERIC) {
			req_free(req);
			*err = -EAGAIN;
			return NULL;
		}
		if (write(r->pipe_wr, &req, sizeof req) != (ssize_t)sizeof req) {
			req_free(req);
			*err = -ENOMEM;
			return NULL;
		}
		r->numeric++;
		return req;
	}
	if (r->threads >= MAX_THREADS) {
		req_free(req);
		*err = -EAGAIN;
		return NULL;
	}
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	atomic_fetch_add(&r->refs, 1);
	req->on_thread = true; /* before the thread may hand it back */
	r->threads++;
	pthread_t t;
	int rc = pthread_create(&t, &attr, lookup_thread, req);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		atomic_fetch_sub(&r->refs, 1);
		r->threads--;
		req_free(req);
		*err = -rc;
		return NULL;
	}
	return req;
}

/* A request for `host`, or NULL with *err set. */
static struct resolve_req *new_req(const char *host, void *arg, int *err)
{
	size_t n = strlen(host);
	if (n == 0 || n >= sizeof ((struct resolve_req *)0)->host) {
		*err = -EINVAL;
		return NULL;
	}
	struct resolve_req *req = calloc(1, sizeof *req);
	if (req == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	req->arg = arg;
	memcpy(req->host, host, n + 1);
	return req;
}

struct resolve_req *resolver_start(struct resolver *r, const char *host, resolve_fn done, void *arg,
				   int *err)
{
	struct resolve_req *req = new_req(host, arg, err);
	if (req == NULL)
		return NULL;
	req->done = done;
	return start(r, req, err);
}

struct resolve_req *resolver_start_all(struct resolver *r, const char *name, resolve_all_fn done, void *arg,
				       int *err)
{
	struct resolve_req *req = new_req(name, arg, err);
	if (req == NULL)
		return NULL;
	req->done_all = done;
	req->addrs = calloc(RESOLVER_ADDRS_MAX, sizeof *req->addrs);
	if (req->addrs == NULL) {
		req_free(req);
		*err = -ENOMEM;
		return NULL;
	}
	return start(r, req, err);
}

void resolver_cancel(struct resolve_req *req)
{
	if (req != NULL)
		req->cancelled = true;
}
