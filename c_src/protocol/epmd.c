/* epmd.c — see epmd.h. */
#include "protocol/epmd.h"
#include "base/byteorder.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
	EPMD_ALIVE2_REQ = 120,
	EPMD_ALIVE2_X_RESP = 118,
	EPMD_ALIVE2_RESP = 121,
	EPMD_PORT_PLEASE2_REQ = 122,
	EPMD_PORT2_RESP = 119,
	NODE_TYPE_HIDDEN = 72,
	DIST_VERSION = 6,
};

extern char **environ;

uint16_t epmd_port(void)
{
	const char *env = getenv("ERL_EPMD_PORT");
	if (env != NULL) {
		char *end;
		long v = strtol(env, &end, 10);
		if (*env != '\0' && *end == '\0' && v > 0 && v < 65536)
			return (uint16_t)v;
	}
	return 4369;
}

int epmd_encode_alive2_req(struct bytebuf *out, uint16_t port, const char *alive)
{
	size_t n = strlen(alive);
	if (n == 0 || n > 255)
		return -EINVAL;
	/* Len:2 | 120 Port:2 Type:1 Proto:1 High:2 Low:2 NLen:2 Name ELen:2 */
	uint8_t msg[2 + 13 + 255];
	size_t body = 13 + n;
	be16_write(msg, (uint32_t)body);
	msg[2] = EPMD_ALIVE2_REQ;
	be16_write(msg + 3, port);
	msg[5] = NODE_TYPE_HIDDEN;
	msg[6] = 0; /* TCP/IPv4 */
	be16_write(msg + 7, DIST_VERSION);
	be16_write(msg + 9, DIST_VERSION);
	be16_write(msg + 11, (uint32_t)n);
	memcpy(msg + 13, alive, n);
	be16_write(msg + 13 + n, 0); /* no extra */
	return bytebuf_append(out, msg, 2 + body);
}

int epmd_decode_alive2_resp(const uint8_t *buf, size_t len, uint8_t *result, uint32_t *creation)
{
	if (len < 1)
		return 0;
	if (buf[0] == EPMD_ALIVE2_X_RESP) {
		if (len < 6)
			return 0;
		*result = buf[1];
		*creation = be32_read(buf + 2);
		return 1;
	}
	if (buf[0] == EPMD_ALIVE2_RESP) {
		if (len < 4)
			return 0;
		*result = buf[1];
		*creation = be16_read(buf + 2);
		return 1;
	}
	return -EPROTO;
}

int epmd_encode_port_please2_req(struct bytebuf *out, const char *alive)
{
	size_t n = strlen(alive);
	if (n == 0 || n > 255)
		return -EINVAL;
	uint8_t msg[3 + 255];
	be16_write(msg, (uint32_t)(n + 1));
	msg[2] = EPMD_PORT_PLEASE2_REQ;
	memcpy(msg + 3, alive, n);
	return bytebuf_append(out, msg, 3 + n);
}

int epmd_decode_port2_resp(const uint8_t *buf, size_t len, uint8_t *result, uint16_t *port,
			   uint16_t *high_version)
{
	if (len < 1)
		return 0;
	if (buf[0] != EPMD_PORT2_RESP)
		return -EPROTO;
	if (len < 2)
		return 0;
	*result = buf[1];
	if (buf[1] != 0)
		return 1;
	/* 119 Result Port:2 Type:1 Proto:1 High:2 Low:2 NLen:2 Name ELen:2 Extra */
	if (len < 12)
		return 0;
	size_t nlen = be16_read(buf + 10);
	if (len < 12 + nlen + 2)
		return 0;
	size_t elen = be16_read(buf + 12 + nlen);
	if (len < 14 + nlen + elen)
		return 0;
	*port = be16_read(buf + 2);
	*high_version = be16_read(buf + 6);
	return 1;
}

/* ---- registration (start-up, bounded waits) ---- */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Connects to the local epmd, waiting at most `ms`. Returns fd or -errno. */
static int connect_local(int ms)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(epmd_port()),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS) {
		int e = errno;
		close(fd);
		return -e;
	}
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	int r = poll(&p, 1, ms);
	int soerr = 0;
	socklen_t sl = sizeof soerr;
	if (r <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr != 0) {
		close(fd);
		return r == 0 ? -ETIMEDOUT : -(soerr ? soerr : ECONNREFUSED);
	}
	return fd;
}

static void spawn_epmd_daemon(const struct logger *log)
{
	char *argv[] = {"epmd", "-daemon", NULL};
	pid_t pid;
	int rc = posix_spawnp(&pid, "epmd", NULL, NULL, argv, environ);
	if (rc != 0) {
		log_error(log, "cannot start epmd: %s", strerror(rc));
		return;
	}
	/* `epmd -daemon` forks and its first process exits at once. */
	waitpid(pid, NULL, 0);
	log_info(log, "started epmd (none was running)");
}

int epmd_register(const struct logger *log, const char *alive, uint16_t port, int timeout_ms,
		  uint32_t *creation)
{
	int64_t deadline = now_ms() + timeout_ms;
	bool spawned = false;
	int fd;
	for (;;) {
		fd = connect_local(500);
		if (fd >= 0)
			break;
		if (now_ms() >= deadline)
			return fd;
		if (!spawned) {
			spawn_epmd_daemon(log);
			spawned = true;
		}
		struct timespec ts = {0, 50 * 1000000L};
		nanosleep(&ts, NULL); /* start-up only: waiting for epmd to listen */
	}
	struct bytebuf req = {0};
	int rc = epmd_encode_alive2_req(&req, port, alive);
	if (rc) {
		bytebuf_free(&req);
		close(fd);
		return rc;
	}
	size_t sent = 0;
	uint8_t resp[16];
	size_t got = 0;
	uint8_t result = 0;
	rc = 0;
	while (rc == 0) {
		int left = (int)(deadline - now_ms());
		if (left <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		struct pollfd p = {.fd = fd, .events = sent < bytebuf_size(&req) ? POLLOUT : POLLIN};
		if (poll(&p, 1, left) <= 0)
			continue;
		if (sent < bytebuf_size(&req)) {
			ssize_t w = send(fd, bytebuf_head(&req) + sent, bytebuf_size(&req) - sent, MSG_NOSIGNAL);
			if (w < 0 && errno != EAGAIN && errno != EINTR)
				rc = -errno;
			else if (w > 0)
				sent += (size_t)w;
			continue;
		}
		ssize_t r = recv(fd, resp + got, sizeof resp - got, 0);
		if (r == 0) {
			rc = -ECONNRESET;
		} else if (r < 0) {
			if (errno != EAGAIN && errno != EINTR)
				rc = -errno;
		} else {
			got += (size_t)r;
			rc = epmd_decode_alive2_resp(resp, got, &result, creation);
		}
	}
	bytebuf_free(&req);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	if (result != 0) {
		close(fd);
		return -EEXIST; /* the name is taken: not the port's EADDRINUSE */
	}
	return fd;
}

/* ---- asynchronous look-up ---- */

static void lookup_finish(struct epmd_lookup *l, int err, uint16_t port)
{
	epmd_lookup_fn done = l->done;
	void *arg = l->arg;
	epmd_lookup_cancel(l);
	if (done)
		done(err, port, arg);
}

static void lookup_on_timeout(struct evloop *loop, void *arg)
{
	(void)loop;
	lookup_finish(arg, -ETIMEDOUT, 0);
}

static void lookup_on_io(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	struct epmd_lookup *l = arg;
	if (bytebuf_size(&l->out) > 0) {
		int soerr = 0;
		socklen_t sl = sizeof soerr;
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
		if (soerr) {
			lookup_finish(l, -soerr, 0);
			return;
		}
		ssize_t w = send(fd, bytebuf_head(&l->out), bytebuf_size(&l->out), MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			lookup_finish(l, -errno, 0);
			return;
		}
		if (w > 0)
			bytebuf_consume(&l->out, (size_t)w);
		if (bytebuf_size(&l->out) == 0)
			evloop_rewatch(loop, fd, EPOLLIN);
		return;
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	if (bytebuf_reserve(&l->in, 512)) {
		lookup_finish(l, -ENOMEM, 0);
		return;
	}
	ssize_t r = recv(fd, l->in.data + l->in.len, l->in.cap - l->in.len, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r > 0)
		l->in.len += (size_t)r;
	uint8_t result = 0;
	uint16_t port = 0, high = 0;
	int rc = epmd_decode_port2_resp(bytebuf_head(&l->in), bytebuf_size(&l->in), &result, &port, &high);
	if (rc < 0 || (rc == 0 && r <= 0) || bytebuf_size(&l->in) > 4096) {
		lookup_finish(l, -EPROTO, 0);
	} else if (rc == 1) {
		if (result != 0)
			lookup_finish(l, -ENOENT, 0);
		else if (high < DIST_VERSION)
			lookup_finish(l, -EPROTONOSUPPORT, 0);
		else
			lookup_finish(l, 0, port);
	}
}

int epmd_lookup_start(struct epmd_lookup *l, struct evloop *loop, struct in_addr host,
		      const char *alive, int timeout_ms, epmd_lookup_fn done, void *arg)
{
	memset(l, 0, sizeof *l);
	l->loop = loop;
	l->fd = -1;
	l->done = done;
	l->arg = arg;
	evloop_timer_init(&l->timer, lookup_on_timeout, l);
	int rc = epmd_encode_port_please2_req(&l->out, alive);
	if (rc)
		goto fail;
	l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (l->fd < 0) {
		rc = -errno;
		goto fail;
	}
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(epmd_port()), .sin_addr = host};
	if (connect(l->fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS) {
		rc = -errno;
		goto fail;
	}
	rc = evloop_watch(loop, l->fd, EPOLLOUT, lookup_on_io, l);
	if (rc)
		goto fail;
	rc = evloop_timer_start(loop, &l->timer, (uint64_t)timeout_ms);
	if (rc)
		goto fail;
	return 0;
fail:
	l->done = NULL;
	epmd_lookup_cancel(l);
	return rc;
}

void epmd_lookup_cancel(struct epmd_lookup *l)
{
	if (l->loop == NULL)
		return;
	evloop_timer_stop(l->loop, &l->timer);
	if (l->fd >= 0) {
		evloop_unwatch(l->loop, l->fd);
		close(l->fd);
		l->fd = -1;
	}
	bytebuf_free(&l->out);
	bytebuf_free(&l->in);
	l->done = NULL;
	l->loop = NULL;
}
