/*
 * evloop.h — the node's single-threaded event loop: epoll readiness plus
 * one-shot timers, in the manner of Redis's ae.c.
 *
 * Everything the node does runs in a callback from evloop_run(). Callbacks
 * must not block. Timers are caller-owned `struct evloop_timer` objects kept in a
 * binary heap, so arming and cancelling never allocate after the heap has
 * grown. Timers fire in deadline order; a timer may be re-armed from its own
 * callback.
 */
#ifndef SN_EVLOOP_H
#define SN_EVLOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evloop;

/* Readiness callback: `events` is a mask of EPOLLIN/EPOLLOUT/EPOLLERR/EPOLLHUP. */
typedef void (*evloop_io_fn)(struct evloop *loop, int fd, uint32_t events, void *arg);
typedef void (*evloop_timer_fn)(struct evloop *loop, void *arg);
/* Runs once per loop iteration before waiting for events. Returns true if it
 * left work queued, so the loop polls without sleeping and calls it again. */
typedef bool (*evloop_idle_fn)(struct evloop *loop, void *arg);

struct evloop_timer {
	uint64_t deadline_ms;
	size_t heap_index; /* SIZE_MAX when not armed */
	evloop_timer_fn fn;
	void *arg;
};

/* Returns a new loop, or NULL with errno set. */
struct evloop *evloop_new(void);
/* Closes the epoll descriptor and frees the loop; registered fds are not closed. */
void evloop_free(struct evloop *loop);

/* The loop's clock is CLOCK_BOOTTIME in milliseconds: monotonic, and unlike
 * CLOCK_MONOTONIC it keeps counting while the machine is suspended, so a
 * deadline or a quorum lease (cluster/membership.h) measured on it cannot
 * outlive a suspend. Timer deadlines are on the same clock.
 *
 * evloop_now_ms: that clock as read at the start of the current iteration
 * (cheap to call; every callback of one iteration sees the same time). */
uint64_t evloop_now_ms(const struct evloop *loop);

/* The instant of evloop_now_ms in nanoseconds, and the clock read at this
 * call in nanoseconds: together they time what happens between a wakeup
 * and now (the metrics' reply latency). */
uint64_t evloop_now_ns(const struct evloop *loop);
uint64_t evloop_clock_ns(void);

/* The same clock (CLOCK_BOOTTIME) read at this call: for checks that must not trust a time taken before the
 * process may have been paused. */
uint64_t evloop_clock_ms(void);

/* The wall clock (CLOCK_REALTIME) in microseconds since the epoch, as
 * os:system_time(microsecond) reads it: for times other nodes compare
 * (versions, reports), never for deadlines, which it may jump across. */
uint64_t evloop_wall_us(void);

/* The delay from wall-clock time `wall_us` to the next whole multiple of
 * `interval_ms` since the epoch, at least half an interval away: timers of
 * many nodes whose clocks agree (NTP) then fire together, so what they
 * send each other arrives in a burst that one wake-up reads, instead of
 * one wake-up each as timers spread over the interval would take. Pure;
 * cannot fail; 0 interval gives 0. */
uint64_t evloop_delay_to_multiple_ms(uint64_t wall_us, uint64_t interval_ms);

/* Watches fd for `events` (EPOLLIN and/or EPOLLOUT). Returns 0 or -errno. */
int evloop_watch(struct evloop *loop, int fd, uint32_t events, evloop_io_fn fn, void *arg);
/* Changes the event mask of a watched fd. Returns 0 or -errno. */
int evloop_rewatch(struct evloop *loop, int fd, uint32_t events);
/* Stops watching fd. Safe to call for an fd that is not watched. Pending
 * events for fd in the current iteration are discarded. */
void evloop_unwatch(struct evloop *loop, int fd);

/* Initialises a timer (not armed). */
void evloop_timer_init(struct evloop_timer *t, evloop_timer_fn fn, void *arg);
/* Arms (or re-arms) t to fire after `after_ms`. Returns 0 or -ENOMEM. */
int evloop_timer_start(struct evloop *loop, struct evloop_timer *t, uint64_t after_ms);
/* Disarms t if armed. */
void evloop_timer_stop(struct evloop *loop, struct evloop_timer *t);
static inline bool evloop_timer_armed(const struct evloop_timer *t) { return t->heap_index != SIZE_MAX; }

/* The most idle hooks a loop holds. */
#define EVLOOP_MAX_IDLE 8

/* Adds a hook that runs before every wait, after those added before it
 * (returning true: it has more work, so the wait does not block). Returns
 * 0, or -ENOSPC when EVLOOP_MAX_IDLE are set. */
int evloop_add_idle(struct evloop *loop, evloop_idle_fn fn, void *arg);

/* Removes the hook added with exactly fn and arg; nothing if there is
 * none. Not from within a hook. */
void evloop_remove_idle(struct evloop *loop, evloop_idle_fn fn, void *arg);

/* Runs until evloop_stop(). Returns 0, or -errno if epoll_wait fails. */
int evloop_run(struct evloop *loop);
void evloop_stop(struct evloop *loop);

#endif
