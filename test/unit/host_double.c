/*
 * host_double.c — the host stand-in (host_double.h).
 */
#include "host_double.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "distribution/dist_node.h"
#include "etf/shardnode_msg.h"

/* One entity's process. */
struct host_entity {
	struct host_entity *next;
	struct host_double *hd;
	struct proc *proc; /* NULL once it ended */
	erlang_pid region;
	long count;
	size_t id_len;
	char id[256]; /* the id term as sent (no version byte) */
};

struct host_double {
	struct evloop *loop;
	const struct logger *log;
	char name[64];
	struct dist_node *node; /* NULL once killed */
	struct proc *dispatcher;
	struct host_entity *entities;
	struct region_host region_host;
	bool hold;
	uint64_t starts;
	/* host_double_gather's: the completions kept back (each a term
	 * without version byte, one after another), how many, and the region
	 * the first goes to. */
	bool gather;
	ei_x_buff gathered;
	size_t ngathered;
	erlang_pid gathered_to;
};

/* ---- what the regions ask of their host ---- */

static bool dispatcher_of(void *arg, erlang_pid *out)
{
	struct host_double *hd = arg;
	if (hd->node == NULL)
		return false;
	*out = hd->dispatcher->pid;
	return true;
}

static bool is_up(void *arg) { return ((const struct host_double *)arg)->node != NULL; }

/* ---- an entity's process ---- */

/* {'$shardnode_done', Id, Pid, Seq, Reply, {state, New} | unchanged, continue} */
static void send_done(struct host_entity *he, unsigned long long seq, bool changed)
{
	ei_x_buff x;
	cr_assert_eq(ei_x_new_with_version(&x), 0);
	int rc = ei_x_encode_tuple_header(&x, 7) | ei_x_encode_atom(&x, SN_ATOM_DONE) |
		 ei_x_append_buf(&x, he->id, (int)he->id_len) | ei_x_encode_pid(&x, &he->proc->pid) |
		 ei_x_encode_ulonglong(&x, seq) | ei_x_encode_long(&x, he->count);
	if (changed)
		rc |= ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, "state") | ei_x_encode_long(&x, he->count);
	else
		rc |= ei_x_encode_atom(&x, "unchanged");
	rc |= ei_x_encode_atom(&x, "continue");
	cr_assert_eq(rc, 0);
	struct host_double *hd = he->hd;
	if (hd->gather) {
		if (hd->ngathered++ == 0)
			hd->gathered_to = he->region;
		cr_assert_eq(ei_x_append_buf(&hd->gathered, x.buff + 1, x.index - 1), 0);
	} else {
		(void)dist_node_send(hd->node, &he->region, x.buff, (size_t)x.index);
	}
	ei_x_free(&x);
}

/* Msg (at term[*i]) handled as the counter does. */
static void handle(struct host_entity *he, unsigned long long seq, const char *term, int *i)
{
	char msg[MAXATOMLEN_UTF8] = "";
	(void)ei_decode_atom(term, i, msg);
	bool incr = strcmp(msg, "incr") == 0;
	if (incr)
		he->count++;
	if (!he->hd->hold)
		send_done(he, seq, incr);
}

static void entity_handle(void *ctx, struct proc *self, const struct proc_msg *m)
{
	struct host_entity *he = ctx;
	int i = 0, arity = 0;
	char tag[MAXATOMLEN_UTF8];
	if (ei_decode_tuple_header(m->term, &i, &arity) != 0 || ei_decode_atom(m->term, &i, tag) != 0)
		return;
	if (strcmp(tag, SN_ATOM_STOP) == 0) {
		he->proc = NULL;
		dist_node_exit(he->hd->node, self, "normal");
		return;
	}
	unsigned long long seq = 0;
	if (strcmp(tag, SN_ATOM_ENTITY) == 0 && arity == 3 && ei_decode_ulonglong(m->term, &i, &seq) == 0)
		handle(he, seq, m->term, &i);
}

/* ---- the dispatcher ---- */

/* {'$shardnode_host', start, Region, Type, Id, Stored | undefined, Seq, Msg} */
static void start_entity(struct host_double *hd, const char *term, int i)
{
	struct host_entity *he = calloc(1, sizeof *he);
	cr_assert_not_null(he);
	he->hd = hd;
	cr_assert_eq(ei_decode_pid(term, &i, &he->region), 0);
	cr_assert_eq(ei_skip_term(term, &i), 0); /* Type */
	int id_at = i;
	cr_assert_eq(ei_skip_term(term, &i), 0);
	he->id_len = (size_t)(i - id_at);
	cr_assert_leq(he->id_len, sizeof he->id);
	memcpy(he->id, term + id_at, he->id_len);
	if (ei_decode_long(term, &i, &he->count) != 0)
		cr_assert_eq(ei_skip_term(term, &i), 0); /* undefined: from nothing */
	unsigned long long seq = 0;
	cr_assert_eq(ei_decode_ulonglong(term, &i, &seq), 0);
	int err = 0;
	he->proc = dist_node_spawn(hd->node, NULL, entity_handle, he, &err);
	cr_assert_not_null(he->proc, "spawn: %d", err);
	he->next = hd->entities;
	hd->entities = he;
	hd->starts++;
	handle(he, seq, term, &i);
}

/* {'$shardnode_host', 'end', Region, Token, [Pid]}: the processes end,
 * then {'$shardnode_stopped', Token} to Region. */
static void end_entities(struct host_double *hd, const char *term, int i)
{
	erlang_pid region;
	unsigned long long token = 0;
	int n = 0;
	cr_assert_eq(ei_decode_pid(term, &i, &region) | ei_decode_ulonglong(term, &i, &token), 0);
	cr_assert_eq(ei_decode_list_header(term, &i, &n), 0);
	for (int k = 0; k < n; k++) {
		erlang_pid pid;
		cr_assert_eq(ei_decode_pid(term, &i, &pid), 0);
		for (struct host_entity *he = hd->entities; he != NULL; he = he->next)
			if (he->proc != NULL && he->proc->pid.num == pid.num && he->proc->pid.serial == pid.serial) {
				dist_node_exit(hd->node, he->proc, "normal");
				he->proc = NULL;
			}
	}
	ei_x_buff x;
	cr_assert_eq(ei_x_new_with_version(&x), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, SN_ATOM_STOPPED) |
			     ei_x_encode_ulonglong(&x, token),
		     0);
	(void)dist_node_send(hd->node, &region, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

static void dispatcher_handle(void *ctx, struct proc *self, const struct proc_msg *m)
{
	(void)self;
	struct host_double *hd = ctx;
	int i = 0, arity = 0;
	char tag[MAXATOMLEN_UTF8], kind[MAXATOMLEN_UTF8];
	if (ei_decode_tuple_header(m->term, &i, &arity) != 0 || ei_decode_atom(m->term, &i, tag) != 0 ||
	    strcmp(tag, SN_ATOM_HOST) != 0 || ei_decode_atom(m->term, &i, kind) != 0)
		return;
	if (strcmp(kind, "start") == 0 && arity == 8)
		start_entity(hd, m->term, i);
	else if (strcmp(kind, "end") == 0 && arity == 5)
		end_entities(hd, m->term, i);
}

/* ---- life ---- */

struct host_double *host_double_start(struct evloop *loop, const struct logger *log)
{
	struct host_double *hd = calloc(1, sizeof *hd);
	cr_assert_not_null(hd);
	hd->loop = loop;
	hd->log = log;
	cr_assert_eq(ei_x_new(&hd->gathered), 0);
	snprintf(hd->name, sizeof hd->name, "harness%ld_%llu_host@127.0.0.1", (long)getpid(),
		 (unsigned long long)(evloop_clock_ns() % 1000000));
	struct dist_node_config ncfg = {
		.loop = loop, .log = log, .name = hd->name, .cookie = "harness",
		.max_message_bytes = 64u << 20, .outq_pause = 8u << 20, .outq_max_bytes = 64u << 20,
		.setup_ms = 5000, .ticktime_ms = 60000, .max_connections = 16,
	};
	int err = 0;
	hd->node = dist_node_start(&ncfg, &err);
	cr_assert_not_null(hd->node, "dist_node_start %s: %d", hd->name, err);
	hd->dispatcher = dist_node_spawn(hd->node, NULL, dispatcher_handle, hd, &err);
	cr_assert_not_null(hd->dispatcher, "dispatcher: %d", err);
	hd->region_host = (struct region_host){.dispatcher = dispatcher_of, .ready = is_up, .arg = hd,
					       .node = hd->name};
	return hd;
}

const struct region_host *host_double_region_host(struct host_double *hd) { return &hd->region_host; }

void host_double_hold(struct host_double *hd, bool hold) { hd->hold = hold; }

void host_double_gather(struct host_double *hd, bool gather) { hd->gather = gather; }

size_t host_double_gathered(const struct host_double *hd) { return hd->ngathered; }

void host_double_send_gathered(struct host_double *hd)
{
	if (hd->ngathered == 0)
		return;
	ei_x_buff x;
	cr_assert_eq(ei_x_new_with_version(&x), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_atom(&x, SN_ATOM_BATCH) |
			     ei_x_encode_list_header(&x, (long)hd->ngathered) |
			     ei_x_append_buf(&x, hd->gathered.buff, hd->gathered.index) | ei_x_encode_empty_list(&x),
		     0);
	(void)dist_node_send(hd->node, &hd->gathered_to, x.buff, (size_t)x.index);
	ei_x_free(&x);
	hd->gathered.index = 0;
	hd->ngathered = 0;
}

uint64_t host_double_starts(const struct host_double *hd) { return hd->starts; }

void host_double_kill(struct host_double *hd)
{
	if (hd->node == NULL)
		return;
	dist_node_free(hd->node); /* its procs with it */
	hd->node = NULL;
	hd->dispatcher = NULL;
	for (struct host_entity *he = hd->entities; he != NULL; he = he->next)
		he->proc = NULL;
}

void host_double_free(struct host_double *hd)
{
	if (hd == NULL)
		return;
	host_double_kill(hd);
	while (hd->entities != NULL) {
		struct host_entity *he = hd->entities;
		hd->entities = he->next;
		free(he);
	}
	ei_x_free(&hd->gathered);
	free(hd);
}
