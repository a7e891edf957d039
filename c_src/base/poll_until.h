/*
 * poll_until.h — look at a condition every few milliseconds until it holds
 * or a deadline passes, then act once.
 *
 * A leave waits for its shards to be handed off: a leaving node for all of
 * them, a region stopped by graceful_shutdown for its own. Neither has an
 * event that says "the last one went", so each looks every 50 ms and gives
 * up at the handoff timeout. This is that loop, written once.
 *
 * The struct is the caller's (embedded); poll_until_init sets it up,
 * poll_until_stop cancels it. Nothing is allocated.
 */
#ifndef SN_POLL_UNTIL_H
#define SN_POLL_UNTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/evloop.h"

/* True when what is waited for has happened. */
typedef bool poll_until_check_fn(void *arg);
/* Called once when the wait ends: in_time is true if check said so, false
 * if the deadline passed first. The poll is over when it is called; it may
 * be started again from here. */
typedef void poll_until_done_fn(void *arg, bool in_time);

struct poll_until {
	struct evloop *loop;
	struct evloop_timer timer;
	uint64_t deadline_ms;
	uint32_t every_ms;
	poll_until_check_fn *check;
	poll_until_done_fn *done;
	void *arg;
	bool active;
};

/* Sets up an idle poll. Call once, before any other poll_until_ call. */
void poll_until_init(struct poll_until *p, struct evloop *loop, poll_until_check_fn *check,
		     poll_until_done_fn *done, void *arg);

/* Starts (or restarts) the wait: the first check runs after first_ms (0:
 * on the next loop turn, so that replies already queued go out first),
 * then every every_ms until check is true or timeout_ms from now has
 * passed. Returns 0, or the negative errno of arming the timer (the poll
 * is then not active). */
int poll_until_start(struct poll_until *p, uint32_t first_ms, uint32_t every_ms, uint32_t timeout_ms);

/* Cancels the wait; done is not called. Harmless when idle. */
void poll_until_stop(struct poll_until *p);

/* True between poll_until_start and the end of the wait. */
static inline bool poll_until_active(const struct poll_until *p) { return p->active; }

#endif
