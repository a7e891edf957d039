/*
 * test_dist_node_reach.c — sending only over a connection that is up
 * (dist_node_send_connected) and the reach listeners (dist_node.h): a
 * message the node could not write to an up connection is the sender's
 * still, never queued behind a handshake that may fail; the listener says
 * when a connection came up and when an attempt failed. Real nodes on
 * 127.0.0.1, registered with epmd, in one loop.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "distribution/dist_node.h"
#include "unit_helpers.h"

#define WAIT_MS 5000

struct heard {
	char peer[128];
	bool up;
	int count;
};

struct downs {
	char peer[128];
	int count;
};

struct world {
	struct evloop *loop;
	struct logger log;
	struct dist_node *a, *b;
	struct proc *target; /* on b */
	int received;        /* messages the target got */
	struct heard heard;  /* a's reach listener */
	struct downs b_downs; /* b's nodedown listener */
	struct evloop_timer timer;
	uint64_t deadline;
	bool (*check)(struct world *w);
	bool met;
};

static void on_reach(void *arg, const char *peer, bool up)
{
	struct heard *h = arg;
	snprintf(h->peer, sizeof h->peer, "%s", peer);
	h->up = up;
	h->count++;
}

static void target_handle(void *ctx, struct proc *self, const struct proc_msg *m)
{
	(void)self;
	(void)m;
	((struct world *)ctx)->received++;
}

static struct dist_node *start_node(struct world *w, const char *tag)
{
	char name[96];
	snprintf(name, sizeof name, "reach_%s_%ld_%llu@127.0.0.1", tag, (long)getpid(),
		 (unsigned long long)(evloop_clock_ns() % 1000000));
	struct dist_node_config cfg = {
		.loop = w->loop, .log = &w->log, .name = name, .cookie = "reach",
		.max_message_bytes = 1u << 20, .outq_pause = 1u << 20, .outq_max_bytes = 8u << 20,
		.setup_ms = 3000, .ticktime_ms = 60000, .max_connections = 16,
	};
	int err = 0;
	struct dist_node *n = dist_node_start(&cfg, &err);
	cr_assert_not_null(n, "dist_node_start %s: %d", name, err);
	return n;
}

static void world_start(struct world *w)
{
	memset(w, 0, sizeof *w);
	w->loop = evloop_new();
	cr_assert_not_null(w->loop);
	w->log = (struct logger){.min_level = LOG_WARN, .out = stderr, .node = "reach"};
	w->a = start_node(w, "a");
	w->b = start_node(w, "b");
	int err = 0;
	w->target = dist_node_spawn(w->b, "target", target_handle, w, &err);
	cr_assert_not_null(w->target, "spawn: %d", err);
	cr_assert_eq(dist_node_on_reach(w->a, on_reach, &w->heard), 0);
}

static void world_stop(struct world *w)
{
	dist_node_off_reach(w->a, on_reach, &w->heard);
	dist_node_free(w->a);
	dist_node_free(w->b);
	evloop_free(w->loop);
}

static void on_check(struct evloop *loop, void *arg)
{
	struct world *w = arg;
	if (w->check(w)) {
		w->met = true;
		evloop_stop(loop);
	} else if (evloop_clock_ms() >= w->deadline) {
		evloop_stop(loop);
	} else {
		evloop_timer_start(loop, &w->timer, 1);
	}
}

/* Turns the loop until check(w) or WAIT_MS pass; asserts it came true. */
static void run_until(struct world *w, bool (*check)(struct world *w), const char *what)
{
	w->check = check;
	w->met = false;
	w->deadline = evloop_clock_ms() + WAIT_MS;
	evloop_timer_init(&w->timer, on_check, w);
	evloop_timer_start(w->loop, &w->timer, 1);
	cr_assert_eq(evloop_run(w->loop), 0);
	evloop_timer_stop(w->loop, &w->timer);
	cr_assert(w->met, "never: %s", what);
}

static bool heard_something(struct world *w) { return w->heard.count > 0; }
static bool target_got_one(struct world *w) { return w->received >= 1; }

static const char MSG[] = {(char)131, 'a', 7}; /* 7, with version byte */

Test(dist_node_reach, a_message_for_a_node_not_connected_yet_stays_the_senders_until_it_is)
{
	struct world w;
	world_start(&w);
	const erlang_pid *to = &w.target->pid;
	/* No connection: one is set up, and the message is not queued on it. */
	cr_assert_eq(dist_node_send_connected(w.a, to, MSG, sizeof MSG), -ENOTCONN);
	run_until(&w, heard_something, "the connection's coming up heard");
	cr_assert(w.heard.up);
	cr_assert_str_eq(w.heard.peer, dist_node_name(w.b));
	/* A pid of an earlier incarnation of b: nothing there would take it. */
	erlang_pid old = *to;
	old.creation = to->creation + 1;
	cr_assert_eq(dist_node_send_connected(w.a, &old, MSG, sizeof MSG), -ESRCH);
	/* Up now: the message goes, once (the first try was never sent). */
	cr_assert_eq(dist_node_send_connected(w.a, to, MSG, sizeof MSG), 0);
	run_until(&w, target_got_one, "the message delivered");
	cr_assert_eq(w.received, 1);
	world_stop(&w);
}

Test(dist_node_reach, a_failed_attempt_is_heard_and_the_node_backed_off_drops_nothing)
{
	struct world w;
	world_start(&w);
	erlang_pid nobody = w.target->pid;
	snprintf(nobody.node, sizeof nobody.node, "reach_nobody_%ld@127.0.0.1", (long)getpid());
	cr_assert_eq(dist_node_send_connected(w.a, &nobody, MSG, sizeof MSG), -ENOTCONN);
	run_until(&w, heard_something, "the failed attempt heard");
	cr_assert_not(w.heard.up);
	cr_assert_str_eq(w.heard.peer, nobody.node);
	/* Backed off: nothing is tried, and nothing was dropped — the
	 * messages are the sender's. */
	cr_assert_eq(dist_node_send_connected(w.a, &nobody, MSG, sizeof MSG), -EHOSTUNREACH);
	struct dist_node_stats st;
	dist_node_get_stats(w.a, &st);
	cr_assert_eq(st.undeliverable, 0u);
	cr_assert_eq(st.connections_open, 0u, "no attempt while backed off");
	cr_assert_eq(w.heard.count, 1);
	world_stop(&w);
}

static void on_down(void *arg, const char *peer)
{
	struct downs *d = arg;
	snprintf(d->peer, sizeof d->peer, "%s", peer);
	d->count++;
}

static bool b_heard_a_down(struct world *w) { return w->b_downs.count > 0; }

Test(dist_node_reach, a_dropped_connection_is_a_nodedown_on_both_sides)
{
	struct world w;
	world_start(&w);
	struct downs a_downs = {0};
	cr_assert_eq(dist_node_on_nodedown(w.a, on_down, &a_downs), 0);
	cr_assert_eq(dist_node_on_nodedown(w.b, on_down, &w.b_downs), 0);
	/* No connection: nothing to close, and the nodedown is said all the
	 * same (what waits for b is failed either way). */
	cr_assert_eq(dist_node_disconnect(w.a, dist_node_name(w.b), "no connection yet"), 0);
	cr_assert_eq(a_downs.count, 1);
	cr_assert_eq(dist_node_send(w.a, &w.target->pid, MSG, sizeof MSG), 0);
	run_until(&w, target_got_one, "the message delivered");
	/* Dropped by a: a's listeners hear it once before the call returns,
	 * b's when its side of the socket closes. */
	cr_assert_eq(dist_node_disconnect(w.a, dist_node_name(w.b), "a test drops it"), 1);
	cr_assert_eq(a_downs.count, 2);
	cr_assert_str_eq(a_downs.peer, dist_node_name(w.b));
	run_until(&w, b_heard_a_down, "b's nodedown of a");
	cr_assert_str_eq(w.b_downs.peer, dist_node_name(w.a));
	cr_assert_eq(w.b_downs.count, 1);
	cr_assert_eq(dist_node_disconnect(w.a, dist_node_name(w.b), "again"), 0, "closed once");
	dist_node_off_nodedown(w.a, on_down, &a_downs);
	dist_node_off_nodedown(w.b, on_down, &w.b_downs);
	world_stop(&w);
}
