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

/* Look-ups running at once; more fail with -EAGAIN rather than pile up
 * threads behind a dead DNS server. */
#define MAX_IN_FLIGHT 16

struct resolve_req {
	struct resolver *owner;
	resolve_fn done;
	void *arg;
	bool cancelled;    /* loop side only */
	int err;           /* written by the thread before it hands the request back */
	struct in_addr addr;
	char host[256];
};

struct resolver {
	struct evloop *loop;
	int pipe_rd, pipe_wr;
	unsigned in_flight; /* loop side only */
	/* One reference for the loop's owner and one per running thread; the
	 * last to let go frees the resolver, so a thread never writes to a
	 * closed pipe. */
	atomic_uint refs;
};

/* Frees the resolver and any answers nobody will read. Only the holder of
 * the last reference calls it. */
static void destroy(struct resolver *r)
{
	struct resolve_req *req;
	while (read(r->pipe_rd, &req, sizeof req) == (ssize_t)sizeof req)
		free(req);
	close(r->pipe_rd);
	close(r->pipe_wr);
	free(r);
}

static void deliver(struct resolver *r, struct resolve_req *req)
{
	r->in_flight--;
	if (!req->cancelled && req->done)
		req->done(req->err, req->addr, req->arg);
	free(req);
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

static void *lookup_thread(void *p)
{
	struct resolve_req *req = p;
	struct resolver *r = req->owner;
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	if (getaddrinfo(req->host, NULL, &hints, &res) == 0 && res != NULL) {
		req->addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr;
		req->err = 0;
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

struct resolve_req *resolver_start(struct resolver *r, const char *host, resolve_fn done, void *arg,
				   int *err)
{
	size_t n = strlen(host);
	if (n == 0 || n >= sizeof ((struct resolve_req *)0)->host) {
		*err = -EINVAL;
		return NULL;
	}
	if (r->in_flight >= MAX_IN_FLIGHT) {
		*err = -EAGAIN;
		return NULL;
	}
	struct resolve_req *req = calloc(1, sizeof *req);
	if (req == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	req->owner = r;
	req->done = done;
	req->arg = arg;
	memcpy(req->host, host, n + 1);
	r->in_flight++;
	if (inet_pton(AF_INET, host, &req->addr) == 1) {
		/* No thread needed; answer through the pipe all the same. */
		if (write(r->pipe_wr, &req, sizeof req) != (ssize_t)sizeof req) {
			r->in_flight--;
			free(req);
			*err = -ENOMEM;
			return NULL;
		}
		return req;
	}
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	atomic_fetch_add(&r->refs, 1);
	pthread_t t;
	int rc = pthread_create(&t, &attr, lookup_thread, req);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		atomic_fetch_sub(&r->refs, 1);
		r->in_flight--;
		free(req);
		*err = -rc;
		return NULL;
	}
	return req;
}

void resolver_cancel(struct resolve_req *req)
{
	if (req != NULL)
		req->cancelled = true;
}
