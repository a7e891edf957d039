/*
 * test_dist_node_local.c — a message to a process of the node itself
 * (dist_node_send, dist_node_reg_send): queued, then delivered from the
 * loop with its term and its sender as sent, whatever node the sender
 * names, in the order sent; a message to a process that stopped is
 * dropped. A real node on 127.0.0.1, registered with epmd, in one loop.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "distribution/dist_node.h"
#include "unit_helpers.h"

#define GOT_MAX 4

struct got {
	int n;
	bool has_from[GOT_MAX];
	erlang_pid from[GOT_MAX];
	long value[GOT_MAX];
	char via[GOT_MAX][64];
};

static void record(void *ctx, struct proc *self, const struct proc_msg *m)
{
	(void)self;
	struct got *g = ctx;
	cr_assert_lt(g->n, GOT_MAX);
	int i = 0;
	cr_assert_eq(ei_decode_long(m->term, &i, &g->value[g->n]), 0, "the term as sent (no version byte)");
	cr_assert_eq((size_t)i, m->len);
	g->has_from[g->n] = m->from != NULL;
	if (m->from != NULL)
		g->from[g->n] = *m->from;
	snprintf(g->via[g->n], sizeof g->via[g->n], "%s", m->via);
	g->n++;
}

static void stop_loop(struct evloop *loop, void *arg)
{
	(void)arg;
	evloop_stop(loop);
}

/* One turn of the loop and its idle work, where local messages go. */
static void one_turn(struct evloop *loop)
{
	struct evloop_timer t;
	evloop_timer_init(&t, stop_loop, NULL);
	evloop_timer_start(loop, &t, 1);
	cr_assert_eq(evloop_run(loop), 0);
	evloop_timer_stop(loop, &t);
}

Test(dist_node_local, a_local_message_keeps_its_term_and_its_sender_in_order)
{
	struct evloop *loop = evloop_new();
	cr_assert_not_null(loop);
	struct logger log = {.min_level = LOG_WARN, .out = stderr, .node = "local"};
	char name[96];
	snprintf(name, sizeof name, "local_%ld_%llu@127.0.0.1", (long)getpid(),
		 (unsigned long long)(evloop_clock_ns() % 1000000));
	struct dist_node_config cfg = {
		.loop = loop, .log = &log, .name = name, .cookie = "local",
		.max_message_bytes = 1u << 20, .outq_pause = 1u << 20, .outq_max_bytes = 8u << 20,
		.setup_ms = 3000, .ticktime_ms = 60000, .max_connections = 4,
	};
	int err = 0;
	struct dist_node *n = dist_node_start(&cfg, &err);
	cr_assert_not_null(n, "dist_node_start: %d", err);
	struct got got = {0};
	struct proc *target = dist_node_spawn(n, "target", record, &got, &err);
	cr_assert_not_null(target, "spawn: %d", err);
	struct proc *gone = dist_node_spawn(n, NULL, record, &got, &err);
	cr_assert_not_null(gone);
	erlang_pid gone_pid = gone->pid;

	/* A sender on another node, with the longest name a node may have. */
	erlang_pid far;
	memset(&far, 0, sizeof far);
	memset(far.node, 'x', 250);
	memcpy(far.node + 250, "@h", 3);
	far.num = 7;
	far.serial = 8;
	far.creation = 9;
	static const char one[] = {(char)131, 'a', 1}, two[] = {(char)131, 'a', 2}, three[] = {(char)131, 'a', 3};
	cr_assert_eq(dist_node_reg_send(n, &far, "target", name, one, sizeof one), 0);
	cr_assert_eq(dist_node_send(n, &target->pid, two, sizeof two), 0);
	cr_assert_eq(dist_node_reg_send(n, &target->pid, "target", name, three, sizeof three), 0);
	dist_node_exit(n, gone, "normal");
	cr_assert_eq(dist_node_send(n, &gone_pid, one, sizeof one), 0, "queued; dropped at delivery");
	cr_assert_eq(got.n, 0, "nothing is delivered re-entrantly");
	one_turn(loop);

	cr_assert_eq(got.n, 3, "the three to the target, none to the stopped process");
	cr_assert_eq(got.value[0], 1);
	cr_assert(got.has_from[0]);
	cr_assert_str_eq(got.from[0].node, far.node);
	cr_assert_eq(got.from[0].num, 7);
	cr_assert_eq(got.from[0].serial, 8);
	cr_assert_eq(got.from[0].creation, 9);
	cr_assert_eq(got.value[1], 2);
	cr_assert_not(got.has_from[1], "a plain send names no sender");
	cr_assert_eq(got.value[2], 3);
	cr_assert(got.has_from[2]);
	cr_assert_str_eq(got.from[2].node, name);
	cr_assert_eq(got.from[2].num, target->pid.num);
	cr_assert_eq(got.from[2].creation, target->pid.creation);
	for (int k = 0; k < got.n; k++)
		cr_assert_str_eq(got.via[k], name, "a local message comes via this node");
	dist_node_free(n);
	evloop_free(loop);
}
