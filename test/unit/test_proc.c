/*
 * test_proc.c — the process table: pids, registered names, and the remote
 * monitors and links that watch a proc.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "protocol/proc.h"
#include "unit_helpers.h"

#define SELF "shardnode@127.0.0.1"
#define PEER "peer@127.0.0.1"
#define OTHER "other@127.0.0.1"
#define CREATION 5

static int handled;

static void handler(void *ctx, struct proc *self, const struct proc_msg *m)
{
	(void)ctx;
	(void)self;
	(void)m;
	handled++;
}

static struct proc *spawn(struct proc_table *t, const char *name)
{
	int err = 1;
	struct proc *p = proc_spawn(t, SELF, CREATION, name, handler, &handled, &err);
	cr_assert_not_null(p, "spawn %s failed: %d", name ? name : "(anonymous)", err);
	cr_assert_eq(err, 0);
	return p;
}

static size_t count_watchers(const struct watcher *w)
{
	size_t n = 0;
	for (; w; w = w->next)
		n++;
	return n;
}

/* An encoded reference, as the raw bytes a MONITOR_P carries. */
static void encode_ref(ei_x_buff *x, unsigned id)
{
	erlang_ref r = sn_ref(PEER, id);
	sn_x_new(x);
	cr_assert_eq(ei_x_encode_ref(x, &r), 0);
}

/* ---- spawning and finding ---- */

Test(proc, spawn_gives_pids_of_this_node)
{
	struct proc_table t = {0};
	struct proc *a = spawn(&t, "net_kernel");
	struct proc *b = spawn(&t, NULL);
	cr_assert_str_eq(a->pid.node, SELF);
	cr_assert_eq(a->pid.creation, CREATION);
	cr_assert_eq(a->pid.num, 1);
	cr_assert_eq(b->pid.num, 2);
	cr_assert_str_eq(a->name, "net_kernel");
	cr_assert_eq(b->name[0], '\0');
	cr_assert_eq(a->handler, handler);
	cr_assert_eq(a->ctx, &handled);
	cr_assert_null(a->watchers);

	struct proc_msg m = {.from = NULL, .term = "", .len = 0};
	a->handler(a->ctx, a, &m);
	cr_assert_eq(handled, 1);
	proc_table_free(&t);
	cr_assert_null(t.slots);
}

Test(proc, by_name)
{
	struct proc_table t = {0};
	struct proc *a = spawn(&t, "net_kernel");
	struct proc *b = spawn(&t, "shardnode");
	spawn(&t, NULL);
	cr_assert_eq(proc_by_name(&t, "net_kernel"), a);
	cr_assert_eq(proc_by_name(&t, "shardnode"), b);
	cr_assert_null(proc_by_name(&t, "shard"));
	cr_assert_null(proc_by_name(&t, "shardnodf"), "same length, one byte differs");
	cr_assert_null(proc_by_name(&t, "shardnodes"), "one byte longer");
	cr_assert_null(proc_by_name(&t, "hardnode"), "one byte shorter");
	cr_assert_null(proc_by_name(&t, ""), "anonymous procs have no name to find");

	int err = 0;
	cr_assert_null(proc_spawn(&t, SELF, CREATION, "shardnode", handler, NULL, &err));
	cr_assert_eq(err, -EEXIST);

	/* A removed proc's name is free again. */
	watcher_list_free(proc_remove(&t, b));
	cr_assert_null(proc_by_name(&t, "shardnode"));
	struct proc *c = spawn(&t, "shardnode");
	cr_assert_eq(proc_by_name(&t, "shardnode"), c);
	proc_table_free(&t);
}

Test(proc, by_pid)
{
	struct proc_table t = {0};
	struct proc *a = spawn(&t, NULL);
	struct proc *b = spawn(&t, NULL);
	cr_assert_eq(proc_by_pid(&t, &a->pid), a);
	cr_assert_eq(proc_by_pid(&t, &b->pid), b);

	erlang_pid p = b->pid;
	strcpy(p.node, PEER);
	cr_assert_null(proc_by_pid(&t, &p), "a pid of another node");
	p = b->pid;
	p.creation = CREATION + 1;
	cr_assert_null(proc_by_pid(&t, &p), "a pid of an earlier incarnation");
	p = b->pid;
	p.serial++;
	cr_assert_null(proc_by_pid(&t, &p), "another serial");
	p = b->pid;
	p.num = 0;
	cr_assert_null(proc_by_pid(&t, &p), "number 0");
	p.num = (unsigned)t.nslots + 1;
	cr_assert_null(proc_by_pid(&t, &p), "a number past the table");
	p.num = 3;
	cr_assert_null(proc_by_pid(&t, &p), "a free slot");
	proc_table_free(&t);
}

Test(proc, stale_pid_of_a_reused_slot)
{
	struct proc_table t = {0};
	struct proc *a = spawn(&t, NULL);
	erlang_pid old = a->pid;
	watcher_list_free(proc_remove(&t, a));
	cr_assert_null(proc_by_pid(&t, &old), "the proc is gone");

	struct proc *b = spawn(&t, NULL);
	cr_assert_eq(b->pid.num, old.num, "the slot is reused");
	cr_assert_neq(b->pid.serial, old.serial, "with a new serial");
	cr_assert_null(proc_by_pid(&t, &old), "the stale pid does not reach the new proc");
	cr_assert_eq(proc_by_pid(&t, &b->pid), b);
	proc_table_free(&t);
}

Test(proc, many_procs_grow_the_table)
{
	struct proc_table t = {0};
	struct proc *ps[100];
	for (int i = 0; i < 100; i++)
		ps[i] = spawn(&t, NULL);
	cr_assert_geq(t.nslots, 100);
	for (int i = 0; i < 100; i++) {
		cr_assert_eq(ps[i]->pid.num, (unsigned)i + 1);
		cr_assert_eq(proc_by_pid(&t, &ps[i]->pid), ps[i]);
	}
	/* Free every other one; the holes are filled first. */
	for (int i = 0; i < 100; i += 2)
		watcher_list_free(proc_remove(&t, ps[i]));
	struct proc *n = spawn(&t, NULL);
	cr_assert_eq(n->pid.num, 1);
	for (int i = 1; i < 100; i += 2)
		cr_assert_eq(proc_by_pid(&t, &ps[i]->pid), ps[i]);
	proc_table_free(&t);
}

/* ---- watchers ---- */

Test(proc, monitor_watch_and_unwatch_by_ref)
{
	struct proc_table t = {0};
	struct proc *p = spawn(&t, "shardnode");
	erlang_pid w1 = sn_pid(PEER, 10, 0), w2 = sn_pid(PEER, 11, 0);
	ei_x_buff r1, r2, r3, name;
	encode_ref(&r1, 1);
	encode_ref(&r2, 2);
	encode_ref(&r3, 3);
	sn_x_new(&name);
	cr_assert_eq(ei_x_encode_atom(&name, "shardnode"), 0);

	cr_assert_eq(proc_watch(p, WATCH_MONITOR, &w1, r1.buff, (size_t)r1.index, name.buff, (size_t)name.index), 0);
	cr_assert_eq(proc_watch(p, WATCH_MONITOR, &w2, r2.buff, (size_t)r2.index, name.buff, (size_t)name.index), 0);
	cr_assert_eq(count_watchers(p->watchers), 2);

	/* The bytes were copied: changing the caller's buffer changes nothing. */
	struct watcher *w = p->watchers;
	cr_assert_neq(w->ref, r2.buff);
	cr_assert_eq(w->ref_len, (size_t)r2.index);
	cr_assert_eq(memcmp(w->ref, r2.buff, w->ref_len), 0);
	cr_assert_eq(w->watched_len, (size_t)name.index);
	cr_assert_eq(memcmp(w->watched, name.buff, w->watched_len), 0);
	cr_assert_eq(w->kind, WATCH_MONITOR);
	cr_assert_eq(w->pid.num, 11);

	cr_assert_not(proc_unwatch_monitor(p, r3.buff, (size_t)r3.index), "an unknown ref");
	cr_assert_not(proc_unwatch_monitor(p, r1.buff, (size_t)r1.index - 1), "a prefix of a ref");
	cr_assert(proc_unwatch_monitor(p, r1.buff, (size_t)r1.index));
	cr_assert_eq(count_watchers(p->watchers), 1);
	cr_assert_not(proc_unwatch_monitor(p, r1.buff, (size_t)r1.index), "already gone");
	cr_assert(proc_unwatch_monitor(p, r2.buff, (size_t)r2.index));
	cr_assert_null(p->watchers);

	ei_x_free(&r1);
	ei_x_free(&r2);
	ei_x_free(&r3);
	ei_x_free(&name);
	proc_table_free(&t);
}

Test(proc, link_watch_and_unwatch)
{
	struct proc_table t = {0};
	struct proc *p = spawn(&t, NULL);
	erlang_pid a = sn_pid(PEER, 10, 0), b = sn_pid(PEER, 11, 0);
	cr_assert_eq(proc_watch(p, WATCH_LINK, &a, NULL, 0, NULL, 0), 0);
	cr_assert_eq(proc_watch(p, WATCH_LINK, &b, NULL, 0, NULL, 0), 0);
	cr_assert_null(p->watchers->ref, "a link has no ref");

	/* A monitor with the same pid is not a link. */
	ei_x_buff r;
	encode_ref(&r, 1);
	cr_assert_eq(proc_watch(p, WATCH_MONITOR, &a, r.buff, (size_t)r.index, "", 0), 0);

	erlang_pid a_other_serial = a;
	a_other_serial.serial = 1;
	cr_assert_not(proc_unwatch_link(p, &a_other_serial));
	erlang_pid a_other_node = a;
	strcpy(a_other_node.node, OTHER);
	cr_assert_not(proc_unwatch_link(p, &a_other_node));
	cr_assert(proc_unwatch_link(p, &a));
	cr_assert_not(proc_unwatch_link(p, &a), "the link is gone; the monitor remains");
	cr_assert_eq(count_watchers(p->watchers), 2);
	cr_assert(proc_unwatch_monitor(p, r.buff, (size_t)r.index));
	cr_assert(proc_unwatch_link(p, &b));
	cr_assert_null(p->watchers);
	ei_x_free(&r);
	proc_table_free(&t);
}

Test(proc, forget_node)
{
	struct proc_table t = {0};
	struct proc *p = spawn(&t, "a");
	struct proc *q = spawn(&t, "b");
	erlang_pid peer1 = sn_pid(PEER, 1, 0), peer2 = sn_pid(PEER, 2, 0), other = sn_pid(OTHER, 1, 0);
	ei_x_buff r;
	encode_ref(&r, 7);
	cr_assert_eq(proc_watch(p, WATCH_LINK, &peer1, NULL, 0, NULL, 0), 0);
	cr_assert_eq(proc_watch(p, WATCH_LINK, &other, NULL, 0, NULL, 0), 0);
	cr_assert_eq(proc_watch(p, WATCH_MONITOR, &peer2, r.buff, (size_t)r.index, "x", 1), 0);
	cr_assert_eq(proc_watch(q, WATCH_MONITOR, &peer1, r.buff, (size_t)r.index, "x", 1), 0);
	cr_assert_eq(proc_watch(q, WATCH_MONITOR, &other, r.buff, (size_t)r.index, "x", 1), 0);

	proc_table_forget_node(&t, PEER);
	cr_assert_eq(count_watchers(p->watchers), 1);
	cr_assert_str_eq(p->watchers->pid.node, OTHER);
	cr_assert_eq(p->watchers->kind, WATCH_LINK);
	cr_assert_eq(count_watchers(q->watchers), 1);
	cr_assert_str_eq(q->watchers->pid.node, OTHER);

	proc_table_forget_node(&t, "nobody@nowhere");
	cr_assert_eq(count_watchers(p->watchers), 1);
	proc_table_forget_node(&t, OTHER);
	cr_assert_null(p->watchers);
	cr_assert_null(q->watchers);
	ei_x_free(&r);
	proc_table_free(&t);
}

Test(proc, remove_returns_the_watchers)
{
	struct proc_table t = {0};
	struct proc *p = spawn(&t, "shardnode");
	erlang_pid a = sn_pid(PEER, 1, 0), b = sn_pid(PEER, 2, 0);
	ei_x_buff r;
	encode_ref(&r, 3);
	cr_assert_eq(proc_watch(p, WATCH_LINK, &a, NULL, 0, NULL, 0), 0);
	cr_assert_eq(proc_watch(p, WATCH_MONITOR, &b, r.buff, (size_t)r.index, "\x77\x01x", 3), 0);
	erlang_pid pid = p->pid;

	struct watcher *w = proc_remove(&t, p);
	cr_assert_null(proc_by_pid(&t, &pid));
	cr_assert_null(proc_by_name(&t, "shardnode"), "unregistered");
	cr_assert_eq(count_watchers(w), 2);
	/* Newest first. */
	cr_assert_eq(w->kind, WATCH_MONITOR);
	cr_assert_eq(w->pid.num, 2);
	cr_assert_eq(memcmp(w->ref, r.buff, (size_t)r.index), 0);
	cr_assert_eq(memcmp(w->watched, "\x77\x01x", 3), 0);
	cr_assert_eq(w->next->kind, WATCH_LINK);
	cr_assert_eq(w->next->pid.num, 1);
	watcher_list_free(w);
	watcher_list_free(NULL);

	/* A proc without watchers returns none. */
	struct proc *q = spawn(&t, NULL);
	cr_assert_null(proc_remove(&t, q));
	ei_x_free(&r);
	proc_table_free(&t);
}

Test(proc, table_free_releases_watchers)
{
	/* Run under LeakSanitizer: every watcher, ref and proc is released. */
	struct proc_table t = {0};
	ei_x_buff r;
	encode_ref(&r, 1);
	for (int i = 0; i < 20; i++) {
		struct proc *p = spawn(&t, NULL);
		erlang_pid w = sn_pid(PEER, (unsigned)i, 0);
		cr_assert_eq(proc_watch(p, WATCH_MONITOR, &w, r.buff, (size_t)r.index, "y", 1), 0);
		cr_assert_eq(proc_watch(p, WATCH_LINK, &w, NULL, 0, NULL, 0), 0);
	}
	ei_x_free(&r);
	proc_table_free(&t);
	cr_assert_eq(t.nslots, 0);
	proc_table_free(&t); /* an empty table frees again harmlessly */
}
