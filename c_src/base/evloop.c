/* evloop.c — see evloop.h. */
#include "base/evloop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

struct fd_watch {
	evloop_io_fn fn;
	void *arg;
	uint32_t events;
	bool active;
};

struct evloop {
	int epfd;
	bool stopping;
	uint64_t now_ms;
	uint64_t now_ns; /* the same instant, in nanoseconds */
	struct fd_watch *watches; /* indexed by fd */
	size_t nwatches;
	struct evloop_timer **heap;
	size_t heap_len, heap_cap;
	/* The hooks run before every wait, in the order added. Several: each
	 * dist node on the loop has its own (a harness runs several nodes on
	 * one loop). */
	struct {
		evloop_idle_fn fn;
		void *arg;
	} idle[EVLOOP_MAX_IDLE];
	size_t nidle;
};

static uint64_t boottime_ns(void)
{
	struct timespec ts;
	/* BOOTTIME, not MONOTONIC: it keeps counting while the machine is
	 * suspended, so a quorum lease (membership.h) cannot outlive a
	 * suspend. */
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t monotonic_ms(void) { return boottime_ns() / 1000000u; }

/* Reads the clock for the iteration that starts. */
static void loop_tick(struct evloop *loop)
{
	loop->now_ns = boottime_ns();
	loop->now_ms = loop->now_ns / 1000000u;
}

struct evloop *evloop_new(void)
{
	struct evloop *loop = calloc(1, sizeof *loop);
	if (loop == NULL)
		return NULL;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		free(loop);
		return NULL;
	}
	loop_tick(loop);
	return loop;
}

void evloop_free(struct evloop *loop)
{
	if (loop == NULL)
		return;
	close(loop->epfd);
	free(loop->watches);
	free(loop->heap);
	free(loop);
}

uint64_t evloop_now_ms(const struct evloop *loop) { return loop->now_ms; }

uint64_t evloop_now_ns(const struct evloop *loop) { return loop->now_ns; }

uint64_t evloop_clock_ns(void) { return boottime_ns(); }

uint64_t evloop_clock_ms(void) { return monotonic_ms(); }

uint64_t evloop_wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t evloop_delay_to_multiple_ms(uint64_t wall_us, uint64_t interval_ms)
{
	if (interval_ms == 0)
		return 0;
	uint64_t wall_ms = wall_us / 1000;
	uint64_t delay = interval_ms - wall_ms % interval_ms;
	return delay < (interval_ms + 1) / 2 ? delay + interval_ms : delay;
}

int evloop_watch(struct evloop *loop, int fd, uint32_t events, evloop_io_fn fn, void *arg)
{
	if (fd < 0)
		return -EBADF;
	if ((size_t)fd >= loop->nwatches) {
		size_t n = loop->nwatches ? loop->nwatches : 64;
		while (n <= (size_t)fd)
			n *= 2;
		struct fd_watch *w = realloc(loop->watches, n * sizeof *w);
		if (w == NULL)
			return -ENOMEM;
		memset(w + loop->nwatches, 0, (n - loop->nwatches) * sizeof *w);
		loop->watches = w;
		loop->nwatches = n;
	}
	struct epoll_event ev = {.events = events, .data.fd = fd};
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	loop->watches[fd] = (struct fd_watch){.fn = fn, .arg = arg, .events = events, .active = true};
	return 0;
}

int evloop_rewatch(struct evloop *loop, int fd, uint32_t events)
{
	if (fd < 0 || (size_t)fd >= loop->nwatches || !loop->watches[fd].active)
		return -EBADF;
	if (loop->watches[fd].events == events)
		return 0;
	struct epoll_event ev = {.events = events, .data.fd = fd};
	if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	loop->watches[fd].events = events;
	return 0;
}

void evloop_unwatch(struct evloop *loop, int fd)
{
	if (fd < 0 || (size_t)fd >= loop->nwatches || !loop->watches[fd].active)
		return;
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
	loop->watches[fd].active = false;
}

/* ---- timer heap ---- */

static void heap_set(struct evloop *loop, size_t i, struct evloop_timer *t)
{
	loop->heap[i] = t;
	t->heap_index = i;
}

static void heap_up(struct evloop *loop, size_t i)
{
	struct evloop_timer *t = loop->heap[i];
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (loop->heap[parent]->deadline_ms <= t->deadline_ms)
			break;
		heap_set(loop, i, loop->heap[parent]);
		i = parent;
	}
	heap_set(loop, i, t);
}

static void heap_down(struct evloop *loop, size_t i)
{
	struct evloop_timer *t = loop->heap[i];
	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= loop->heap_len)
			break;
		if (child + 1 < loop->heap_len &&
		    loop->heap[child + 1]->deadline_ms < loop->heap[child]->deadline_ms)
			child++;
		if (t->deadline_ms <= loop->heap[child]->deadline_ms)
			break;
		heap_set(loop, i, loop->heap[child]);
		i = child;
	}
	heap_set(loop, i, t);
}

void evloop_timer_init(struct evloop_timer *t, evloop_timer_fn fn, void *arg)
{
	t->deadline_ms = 0;
	t->heap_index = SIZE_MAX;
	t->fn = fn;
	t->arg = arg;
}

void evloop_timer_stop(struct evloop *loop, struct evloop_timer *t)
{
	size_t i = t->heap_index;
	if (i == SIZE_MAX)
		return;
	t->heap_index = SIZE_MAX;
	loop->heap_len--;
	if (i == loop->heap_len)
		return;
	struct evloop_timer *moved = loop->heap[loop->heap_len];
	heap_set(loop, i, moved);
	heap_up(loop, i);
	heap_down(loop, moved->heap_index);
}

int evloop_timer_start(struct evloop *loop, struct evloop_timer *t, uint64_t after_ms)
{
	evloop_timer_stop(loop, t);
	if (loop->heap_len == loop->heap_cap) {
		size_t cap = loop->heap_cap ? loop->heap_cap * 2 : 64;
		struct evloop_timer **h = realloc(loop->heap, cap * sizeof *h);
		if (h == NULL)
			return -ENOMEM;
		loop->heap = h;
		loop->heap_cap = cap;
	}
	t->deadline_ms = loop->now_ms + after_ms;
	size_t i = loop->heap_len++;
	heap_set(loop, i, t);
	heap_up(loop, i);
	return 0;
}

int evloop_add_idle(struct evloop *loop, evloop_idle_fn fn, void *arg)
{
	if (loop->nidle == EVLOOP_MAX_IDLE)
		return -ENOSPC;
	loop->idle[loop->nidle].fn = fn;
	loop->idle[loop->nidle].arg = arg;
	loop->nidle++;
	return 0;
}

void evloop_remove_idle(struct evloop *loop, evloop_idle_fn fn, void *arg)
{
	for (size_t i = 0; i < loop->nidle; i++) {
		if (loop->idle[i].fn == fn && loop->idle[i].arg == arg) {
			memmove(&loop->idle[i], &loop->idle[i + 1], (loop->nidle - i - 1) * sizeof loop->idle[0]);
			loop->nidle--;
			return;
		}
	}
}

/* Runs every idle hook; true if any has more work. */
static bool run_idle(struct evloop *loop)
{
	bool more_work = false;
	for (size_t i = 0; i < loop->nidle && !loop->stopping; i++)
		more_work |= loop->idle[i].fn(loop, loop->idle[i].arg);
	return more_work;
}

void evloop_stop(struct evloop *loop) { loop->stopping = true; }

static void run_due_timers(struct evloop *loop)
{
	/* Cap the work per iteration so a storm of timers cannot starve I/O. */
	for (int budget = 1024; budget > 0 && loop->heap_len > 0; budget--) {
		struct evloop_timer *t = loop->heap[0];
		if (t->deadline_ms > loop->now_ms)
			break;
		evloop_timer_stop(loop, t);
		t->fn(loop, t->arg);
		if (loop->stopping)
			return;
	}
}

int evloop_run(struct evloop *loop)
{
	enum { MAX_EVENTS = 128 };
	struct epoll_event events[MAX_EVENTS];
	loop->stopping = false;
	while (!loop->stopping) {
		bool more_work = run_idle(loop);
		if (loop->stopping)
			break;
		loop_tick(loop);
		int timeout = -1;
		if (more_work) {
			timeout = 0;
		} else if (loop->heap_len > 0) {
			uint64_t d = loop->heap[0]->deadline_ms;
			timeout = d <= loop->now_ms ? 0 : (int)(d - loop->now_ms > 60000 ? 60000 : d - loop->now_ms);
		}
		int n = epoll_wait(loop->epfd, events, MAX_EVENTS, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		loop_tick(loop);
		for (int i = 0; i < n && !loop->stopping; i++) {
			int fd = events[i].data.fd;
			/* A callback earlier in this batch may have unwatched (and
			 * even reused) this fd; only dispatch to a live watch. */
			if ((size_t)fd >= loop->nwatches || !loop->watches[fd].active)
				continue;
			struct fd_watch w = loop->watches[fd];
			w.fn(loop, fd, events[i].events, w.arg);
		}
		if (!loop->stopping)
			run_due_timers(loop);
	}
	return 0;
}
