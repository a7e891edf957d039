/* dist_node.c — see dist_node.h: the node's start and stop, its listener
 * and epmd registration, ticks, the flush before the loop sleeps, procs
 * and listeners. Routing, sending and the connection table are in
 * dist_node_routing.c, dist_node_send.c and dist_node_conns.c
 * (dist_node_internal.h). */
#include "distribution/dist_node.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bsd/string.h>

#include "distribution/dist_node_internal.h"
#include "protocol/epmd.h"

/* Adds the listener `l` (one of its functions set). Returns 0 or -ENOMEM. */
static int add_listener(struct dist_node *n, struct peer_listener l)
{
	if (n->nlisteners == n->listeners_cap) {
		size_t cap = n->listeners_cap ? 2 * n->listeners_cap : 8;
		struct peer_listener *grown = realloc(n->listeners, cap * sizeof *grown);
		if (grown == NULL)
			return -ENOMEM;
		n->listeners = grown;
		n->listeners_cap = cap;
	}
	n->listeners[n->nlisteners++] = l;
	return 0;
}

static void remove_listener(struct dist_node *n, struct peer_listener l)
{
	for (size_t k = 0; k < n->nlisteners; k++) {
		struct peer_listener *at = &n->listeners[k];
		if (at->down == l.down && at->reach == l.reach && at->arg == l.arg) {
			*at = n->listeners[--n->nlisteners];
			return;
		}
	}
}

int dist_node_on_nodedown(struct dist_node *n, nodedown_fn fn, void *arg)
{
	return add_listener(n, (struct peer_listener){.down = fn, .arg = arg});
}

void dist_node_off_nodedown(struct dist_node *n, nodedown_fn fn, void *arg)
{
	remove_listener(n, (struct peer_listener){.down = fn, .arg = arg});
}

int dist_node_on_reach(struct dist_node *n, reach_fn fn, void *arg)
{
	return add_listener(n, (struct peer_listener){.reach = fn, .arg = arg});
}

void dist_node_off_reach(struct dist_node *n, reach_fn fn, void *arg)
{
	remove_listener(n, (struct peer_listener){.reach = fn, .arg = arg});
}

void dist_node_set_flushed(struct dist_node *n, flushed_fn fn, void *arg)
{
	n->flushed = fn;
	n->flushed_arg = arg;
}

void dist_node_set_flushing(struct dist_node *n, flushed_fn fn, void *arg)
{
	n->flushing = fn;
	n->flushing_arg = arg;
}

/* ---- procs ---- */

struct proc *dist_node_spawn(struct dist_node *n, const char *name, proc_handler_fn handler, void *ctx,
			     int *err)
{
	return proc_spawn(&n->procs, n->name, n->settings.creation, name, handler, ctx, err);
}

void dist_node_exit(struct dist_node *n, struct proc *p, const char *reason)
{
	erlang_pid from = p->pid;
	struct watcher *ws = proc_remove(&n->procs, p);
	for (struct watcher *w = ws; w; w = w->next) {
		if (w->kind == WATCH_MONITOR)
			dist_node_send_monitor_exit(n, w->watched, w->watched_len, &w->pid, w->ref, w->ref_len, reason);
		else
			dist_node_send_exit(n, &from, &w->pid, reason);
	}
	watcher_list_free(ws);
}

/* ---- listening, ticks, idle work ---- */

static void on_accept(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	(void)loop;
	(void)events;
	struct dist_node *n = arg;
	/* Bounded per event, so a connection flood cannot starve the loop. */
	for (int k = 0; k < 64; k++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_warn(n->settings.log, "accept: %s", strerror(errno));
			return;
		}
		if (n->nconns >= n->max_connections) {
			if (n->stats.connections_refused++ % 1000 == 0)
				log_warn(n->settings.log, "connection refused: %u connections open (max_connections)",
					 n->nconns);
			close(cfd);
			continue;
		}
		struct dist_conn *c = dist_conn_new();
		if (c == NULL) {
			close(cfd);
			continue;
		}
		if (dist_conn_accept(c, &n->settings, &n->hooks, cfd)) {
			dist_conn_destroy(c);
			continue;
		}
		if (dist_node_link_conn(n, c) != 0) {
			/* Out of memory: as if refused (the peer tries again). */
			dist_conn_close(c, "out of memory");
			dist_conn_destroy(c);
			continue;
		}
		n->stats.connections_accepted++;
	}
}

static void tick_conn(struct dist_conn *c, void *arg) { dist_conn_tick(c, *(const uint64_t *)arg); }

static void flush_conn(struct dist_conn *c, void *arg)
{
	(void)arg;
	dist_conn_flush_output(c);
}

static void on_tick(struct evloop *loop, void *arg)
{
	struct dist_node *n = arg;
	uint64_t interval = n->ticktime_ms / 4;
	dist_node_each_conn(n, tick_conn, &interval);
	drop_log_tick(&n->drops, evloop_now_ms(loop));
	/* On whole multiples of the interval: each peer's ticks on the
	 * connections it has nothing else for come at the same moment as
	 * every other peer's, one wake-up for all (a node of a large cluster
	 * has many such connections). A connection then goes at most two
	 * intervals without a tick, well inside net_ticktime. */
	evloop_timer_start(loop, &n->tick_timer, evloop_delay_to_multiple_ms(evloop_wall_us(), interval));
}

static void on_epmd_io(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	struct dist_node *n = arg;
	char buf[64];
	ssize_t r = recv(fd, buf, sizeof buf, 0);
	if (r > 0 || (r < 0 && (errno == EAGAIN || errno == EINTR)))
		return;
	(void)events;
	log_warn(n->settings.log, "epmd closed our registration; peers can no longer find this node by name");
	evloop_unwatch(loop, fd);
	close(fd);
	n->epmd_fd = -1;
}

/* Before the loop sleeps: deliver local messages, flush output in one write
 * per connection, free closed connections. */
static bool on_idle(struct evloop *loop, void *arg)
{
	(void)loop;
	struct dist_node *n = arg;
	/* Only the messages queued so far: handlers may queue more, which run
	 * on the next turn, so one chatty proc cannot hold the loop. */
	struct local_msg *batch = n->local_head;
	n->local_head = n->local_tail = NULL;
	while (batch) {
		struct local_msg *m = batch;
		batch = m->next;
		erlang_pid to, from;
		const erlang_pid *sender = dist_node_local_pids(n, m, &to, &from);
		struct proc *p = proc_by_pid(&n->procs, &to);
		if (p != NULL) {
			dist_node_deliver(p, n->name, sender, m->data, m->len);
		} else {
			/* One of ours that has stopped: routine, counted only. */
			(void)drop_log_note(&n->drops, "unknown_pid");
		}
		free(m);
	}
	if (n->flushing != NULL)
		n->flushing(n->flushing_arg);
	reply_batches_flush(&n->reply_batches); /* what the turn's handlers answered */
	dist_node_each_conn(n, flush_conn, NULL);
	if (n->flushed != NULL)
		n->flushed(n->flushed_arg);
	dist_node_free_dead(n);
	return n->local_head != NULL;
}

static int listen_on(uint16_t port, uint16_t *bound)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t sl = sizeof sa;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 512) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	*bound = ntohs(sa.sin_port);
	return fd;
}

struct dist_node *dist_node_start(const struct dist_node_config *cfg, int *err)
{
	struct dist_node *n = calloc(1, sizeof *n);
	if (n == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	strlcpy(n->name, cfg->name, sizeof n->name);
	strlcpy(n->cookie, cfg->cookie, sizeof n->cookie);
	n->listen_fd = n->epmd_fd = -1;
	n->ticktime_ms = cfg->ticktime_ms < 400 ? 400 : cfg->ticktime_ms;
	n->max_connections = cfg->max_connections;
	n->settings = (struct dist_settings){
		.loop = cfg->loop, .log = cfg->log, .name = n->name, .cookie = n->cookie,
		.max_message_bytes = cfg->max_message_bytes, .outq_pause = cfg->outq_pause, .outq_max_bytes = cfg->outq_max_bytes,
		.setup_ms = cfg->setup_ms, .tls = cfg->tls,
	};
	n->hooks = (struct dist_conn_hooks){
		.owner = n, .arbitrate = dist_node_hook_arbitrate, .replace = dist_node_hook_replace,
		.up = dist_node_hook_up, .packet = dist_node_hook_packet, .oversized = dist_node_hook_oversized,
		.closed = dist_node_hook_closed,
	};
	evloop_timer_init(&n->tick_timer, on_tick, n);
	drop_log_init(&n->drops, cfg->log, n->name, LOG_INFO);
	scratch_init(&n->reply_buf);
	scratch_init(&n->ctl_buf);
	reply_batches_init(&n->reply_batches, dist_node_send_batch, n);
	n->settings.resolver = resolver_new(cfg->loop);
	if (n->settings.resolver == NULL) {
		*err = -errno;
		free(n);
		return NULL;
	}

	int rc = listen_on(cfg->port, &n->port);
	if (rc < 0)
		goto fail;
	n->listen_fd = rc;
	char alive[NODE_NAME_BUF];
	strlcpy(alive, n->name, sizeof alive);
	*strchr(alive, '@') = '\0';
	uint32_t creation = 1;
	if (!cfg->unregistered) {
		rc = epmd_register(cfg->log, alive, n->port, 10000, &creation);
		if (rc < 0)
			goto fail;
		n->epmd_fd = rc;
	}
	n->settings.creation = creation;
	if ((rc = evloop_watch(cfg->loop, n->listen_fd, EPOLLIN, on_accept, n)) != 0 ||
	    (n->epmd_fd >= 0 && (rc = evloop_watch(cfg->loop, n->epmd_fd, EPOLLIN, on_epmd_io, n)) != 0) ||
	    (rc = evloop_timer_start(cfg->loop, &n->tick_timer, n->ticktime_ms / 4)) != 0 ||
	    (rc = evloop_add_idle(cfg->loop, on_idle, n)) != 0)
		goto fail;
	*err = 0;
	return n;
fail:
	*err = rc;
	dist_node_free(n);
	return NULL;
}

void dist_node_free(struct dist_node *n)
{
	if (n == NULL)
		return;
	struct evloop *loop = n->settings.loop;
	/* Best effort: replies already queued (the answer to `leave`, say)
	 * leave before the sockets close. */
	dist_node_each_conn(n, flush_conn, NULL);
	while (n->nconns > 0)
		dist_conn_close(n->conns[n->nconns - 1], "node stopping");
	dist_node_free_dead(n);
	free(n->conns);
	evloop_timer_stop(loop, &n->tick_timer);
	if (n->listen_fd >= 0) {
		evloop_unwatch(loop, n->listen_fd);
		close(n->listen_fd);
	}
	if (n->epmd_fd >= 0) {
		evloop_unwatch(loop, n->epmd_fd);
		close(n->epmd_fd); /* epmd unregisters the name */
	}
	while (n->local_head) {
		struct local_msg *m = n->local_head;
		n->local_head = m->next;
		free(m);
	}
	proc_table_free(&n->procs);
	free(n->listeners);
	scratch_free(&n->reply_buf);
	scratch_free(&n->ctl_buf);
	reply_batches_free(&n->reply_batches);
	peer_backoff_free(&n->unreachable);
	node_set_free(&n->ever_up);
	resolver_free(n->settings.resolver);
	evloop_remove_idle(loop, on_idle, n);
	free(n);
}

const char *dist_node_name(const struct dist_node *n) { return n->name; }
uint16_t dist_node_port(const struct dist_node *n) { return n->port; }
uint32_t dist_node_creation(const struct dist_node *n) { return n->settings.creation; }

const struct drop_log *dist_node_drops(const struct dist_node *n) { return &n->drops; }

void dist_node_get_stats(const struct dist_node *n, struct dist_node_stats *out)
{
	*out = n->stats;
	out->undeliverable = drop_log_count(&n->drops);
	out->connections_up = 0;
	out->connections_open = 0;
	for (uint32_t i = 0; i < n->nconns; i++) {
		struct dist_conn_traffic t;
		dist_conn_get_traffic(n->conns[i], &t);
		out->connections_up += dist_conn_is_up(n->conns[i]);
		out->connections_open++;
		out->bytes_in += t.bytes_in;
		out->bytes_out += t.bytes_out;
		out->packets_in += t.packets_in;
		out->packets_out += t.packets_out;
	}
}
