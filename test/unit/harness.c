/*
 * harness.c — the stateful cores in one process (harness.h).
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cluster/member_protocol.h"
#include "entity/entity_builtin.h"
#include "etf/entity_id.h"
#include "etf/phash2.h"
#include "hosting/hosted_entity.h"

#define HARNESS_COORDINATOR "shardnode_coordinator_counter"
#define HARNESS_TYPE "counter"

static const struct entity_type *counter_type(void)
{
	for (const struct entity_type *const *t = entity_builtin_types(); *t; t++)
		if (strcmp((*t)->name, HARNESS_TYPE) == 0)
			return *t;
	cr_assert_fail("no built-in counter type");
	return NULL;
}

static bool may_deliver(void *arg) { return ((const struct harness_member *)arg)->may_deliver; }

/* Every member hosts the type (members_hosting.h). */
static size_t members_hosting(void *arg, const char *type, const char **out, size_t max)
{
	(void)type;
	const struct harness *h = arg;
	size_t n = 0;
	for (size_t i = 0; i < h->opt.members && n < max; i++)
		if (!h->m[i].dead)
			out[n++] = h->m[i].name;
	return n;
}

/* ---- the client ---- */

/* Keeps {Tag, Reply} (a call's) and {counter, Id, Reply} (a tell's). */
static void client_handle(void *ctx, struct proc *self, const struct proc_msg *m)
{
	(void)self;
	struct harness *h = ctx;
	cr_assert_lt(h->nreplies, HARNESS_MAX_REPLIES);
	struct harness_reply *r = &h->replies[h->nreplies];
	*r = (struct harness_reply){.tag = -1};
	int i = 0, arity = 0;
	if (ei_decode_tuple_header(m->term, &i, &arity) != 0 || (arity != 2 && arity != 3))
		return;
	if (arity == 2) {
		cr_assert_eq(ei_decode_long(m->term, &i, &r->tag), 0);
	} else {
		cr_assert_eq(ei_skip_term(m->term, &i), 0); /* counter */
		cr_assert_eq(ei_skip_term(m->term, &i), 0); /* Id */
	}
	int at = i;
	r->is_int = ei_decode_long(m->term, &at, &r->value) == 0;
	char *text = NULL;
	at = i;
	if (ei_s_print_term(&text, m->term, &at) >= 0)
		snprintf(r->text, sizeof r->text, "%s", text);
	free(text);
	h->nreplies++;
}

/* ---- the loop ---- */

struct run {
	struct harness *h;
	bool (*check)(struct harness *h, void *arg);
	void *arg;
	uint64_t deadline;
	bool met;
	struct evloop_timer timer;
};

static void on_check(struct evloop *loop, void *arg)
{
	struct run *run = arg;
	if (run->check != NULL && run->check(run->h, run->arg)) {
		run->met = true;
		evloop_stop(loop);
	} else if (evloop_clock_ms() >= run->deadline) {
		evloop_stop(loop);
	} else {
		evloop_timer_start(loop, &run->timer, 1);
	}
}

bool harness_run_until(struct harness *h, bool (*check)(struct harness *h, void *arg), void *arg, uint32_t ms)
{
	if (check != NULL && check(h, arg))
		return true;
	struct run run = {.h = h, .check = check, .arg = arg, .deadline = evloop_clock_ms() + ms};
	evloop_timer_init(&run.timer, on_check, &run);
	evloop_timer_start(h->loop, &run.timer, 1);
	cr_assert_eq(evloop_run(h->loop), 0);
	evloop_timer_stop(h->loop, &run.timer);
	return run.met;
}

void harness_run_for(struct harness *h, uint32_t ms) { (void)harness_run_until(h, NULL, NULL, ms); }

/* ---- members ---- */

/* dist_node_set_flushing, as node_app.c wires it: what the region batched
 * over the loop's turn (replicated writes) goes out before the output is
 * written. */
static void flush_region_batches(void *arg)
{
	struct harness_member *m = arg;
	if (m->region != NULL)
		region_flush_batches(m->region);
}

/* A region's outlet that counts each operation (harness_sends), then
 * hands it to the member's node's own outlet (dist_node_outlet). */
static int count_send(void *carrier, const erlang_pid *to, const char *msg, size_t len)
{
	struct harness_sends *c = carrier;
	c->send++;
	return outlet_send(&c->node_out, to, msg, len);
}

static int count_send_connected(void *carrier, const erlang_pid *to, const char *msg, size_t len)
{
	struct harness_sends *c = carrier;
	c->send_connected++;
	return outlet_send_connected(&c->node_out, to, msg, len);
}

static int count_reg_send(void *carrier, const erlang_pid *from, const char *name, const char *node, const char *msg,
			  size_t len)
{
	struct harness_sends *c = carrier;
	c->reg_send++;
	return outlet_reg_send(&c->node_out, from, name, node, msg, len);
}

static int count_reply_to(void *carrier, const erlang_pid *from, const erlang_pid *to, const char *tag,
			  size_t tag_len, const char *reply, size_t reply_len)
{
	struct harness_sends *c = carrier;
	c->reply_to++;
	return outlet_reply_to(&c->node_out, from, to, tag, tag_len, reply, reply_len);
}

static void count_dead_letter(void *carrier, struct drop_log *log, const char *reason, const char *what,
			      const char *term)
{
	struct harness_sends *c = carrier;
	c->dead_letter++;
	outlet_dead_letter(&c->node_out, log, reason, what, term);
}

static const struct outlet_ops counting_outlet_ops = {
	.send = count_send,
	.send_connected = count_send_connected,
	.reg_send = count_reg_send,
	.reply_to = count_reply_to,
	.dead_letter = count_dead_letter,
};

static void start_member(struct harness *h, size_t i)
{
	struct harness_member *m = &h->m[i];
	int err = 0;
	snprintf(m->name, sizeof m->name, "harness%ld_%llu_%zu@127.0.0.1", (long)getpid(),
		 (unsigned long long)(evloop_clock_ns() % 1000000), i);
	struct dist_node_config ncfg = {
		.loop = h->loop, .log = &h->log, .name = m->name, .cookie = "harness",
		.max_message_bytes = 64u << 20, .outq_pause = 8u << 20, .outq_max_bytes = 64u << 20,
		.setup_ms = 5000, .ticktime_ms = 60000, .max_connections = 16,
	};
	m->node = dist_node_start(&ncfg, &err);
	cr_assert_not_null(m->node, "dist_node_start %s: %d", m->name, err);
	struct coordinator_config ccfg = {
		.node = m->node, .log = &h->log, .type_name = HARNESS_TYPE, .name = HARNESS_COORDINATOR,
		.number_of_shards = h->opt.shards, .loop = h->loop,
		.rebalance_interval_ms = h->opt.rebalance_interval_ms ? h->opt.rebalance_interval_ms : 3600000,
		.rebalance_threshold = 1, .max_simultaneous_rebalance = 3,
		.handoff_timeout_ms = h->opt.handoff_timeout_ms ? h->opt.handoff_timeout_ms : 5000,
		.min_nr_of_members = 1, .state_replicas = h->opt.replicas,
	};
	m->coordinator = coordinator_start(&ccfg, &err);
	cr_assert_not_null(m->coordinator, "coordinator_start: %d", err);
	if (h->opt.store == HARNESS_OWN_STORES)
		m->store = store_double_new(h->loop, false);
	else if (h->opt.store == HARNESS_SHARED_STORE)
		m->store = h->shared;
	m->may_deliver = true;
	if (h->opt.remember) {
		m->remember = remember_open(NULL, HARNESS_TYPE, h->opt.shards, &h->log, &err);
		cr_assert_not_null(m->remember, "remember_open: %d", err);
	}
	m->sends = (struct harness_sends){.node_out = dist_node_outlet(m->node)};
	struct region_config rcfg = {
		.node = m->node, .out = {.ops = &counting_outlet_ops, .carrier = &m->sends}, .loop = h->loop, .log = &h->log,
		.type = h->opt.host ? &h->hosted_type : counter_type(),
		.host = h->opt.host ? host_double_region_host(h->host) : NULL,
		.number_of_shards = h->opt.shards, .buffer_size = h->opt.buffer_size ? h->opt.buffer_size : 100000, .retry_interval_ms = 50,
		.handoff_timeout_ms = ccfg.handoff_timeout_ms, .coordinator_name = HARNESS_COORDINATOR,
		.may_deliver = may_deliver, .may_deliver_arg = m,
		.members_hosting = members_hosting, .members_arg = h,
		.store = m->store ? store_double_store(m->store) : NULL, .store_timeout_ms = 5000,
		.remember = m->remember, .state_replicas = h->opt.replicas,
	};
	m->region = region_start(&rcfg, &err);
	cr_assert_not_null(m->region, "region_start: %d", err);
	dist_node_set_flushing(m->node, flush_region_batches, m);
}

void harness_move_coordinator(struct harness *h, size_t active)
{
	cr_assert(!h->m[active].dead);
	const char *names[HARNESS_MAX_MEMBERS];
	size_t n = members_hosting(h, HARNESS_TYPE, names, HARNESS_MAX_MEMBERS);
	for (size_t i = 0; i < h->opt.members; i++) {
		if (h->m[i].dead)
			continue;
		coordinator_set_active(h->m[i].coordinator, i == active);
		coordinator_set_members(h->m[i].coordinator, names, n, NULL, 0);
	}
	for (size_t i = 0; i < h->opt.members; i++)
		if (!h->m[i].dead)
			region_set_coordinator_node(h->m[i].region, h->m[active].name, MEMBER_PROTOCOL);
}

/* What member i owns, freed; its node last (the region and coordinator
 * still use it as they stop). */
static void free_member(struct harness *h, size_t i)
{
	struct harness_member *m = &h->m[i];
	if (m->dead)
		return;
	dist_node_set_flushing(m->node, NULL, NULL);
	region_free(m->region);
	coordinator_free(m->coordinator);
	if (h->opt.store == HARNESS_OWN_STORES)
		store_double_free(m->store);
	if (m->remember != NULL)
		remember_free(m->remember);
	dist_node_free(m->node);
	*m = (struct harness_member){.dead = true};
}

void harness_kill(struct harness *h, size_t i)
{
	cr_assert(i > 0 && i < h->opt.members && !h->m[i].dead, "member %zu cannot be killed", i);
	free_member(h, i);
	harness_move_coordinator(h, 0);
}

void harness_start(struct harness *h, const struct harness_options *opt)
{
	cr_assert(opt->members >= 1 && opt->members <= HARNESS_MAX_MEMBERS);
	cr_assert(opt->replicas == 0 || opt->store == HARNESS_OWN_STORES, "replicas copy each member's own store");
	memset(h, 0, sizeof *h);
	h->opt = *opt;
	h->loop = evloop_new();
	cr_assert_not_null(h->loop);
	/* Warnings and worse reach the test's output; HARNESS_LOG=debug (or
	 * info) shows the rest when a test needs looking into. */
	enum log_level level = LOG_WARN;
	const char *want = getenv("HARNESS_LOG");
	if (want != NULL)
		(void)log_level_parse(want, &level);
	h->log = (struct logger){.min_level = level, .out = stderr, .node = "harness"};
	if (opt->store == HARNESS_SHARED_STORE)
		h->shared = store_double_new(h->loop, true);
	if (opt->host) {
		hosted_entity_type_init(&h->hosted_type, HARNESS_TYPE);
		h->host = host_double_start(h->loop, &h->log);
	}
	for (size_t i = 0; i < opt->members; i++)
		start_member(h, i);
	int err = 0;
	h->client = dist_node_spawn(h->m[0].node, NULL, client_handle, h, &err);
	cr_assert_not_null(h->client, "client: %d", err);
	harness_move_coordinator(h, 0);
}

void harness_stop(struct harness *h)
{
	for (size_t i = 0; i < h->opt.members; i++) {
		if (h->m[i].dead)
			continue;
		dist_node_set_flushing(h->m[i].node, NULL, NULL);
		region_free(h->m[i].region);
		h->m[i].region = NULL;
	}
	for (size_t i = 0; i < h->opt.members; i++) {
		if (h->m[i].dead)
			continue;
		coordinator_free(h->m[i].coordinator);
		if (h->opt.store == HARNESS_OWN_STORES)
			store_double_free(h->m[i].store);
		if (h->m[i].remember != NULL)
			remember_free(h->m[i].remember);
	}
	store_double_free(h->shared);
	host_double_free(h->host);
	for (size_t i = 0; i < h->opt.members; i++)
		if (!h->m[i].dead)
			dist_node_free(h->m[i].node);
	evloop_free(h->loop);
	memset(h, 0, sizeof *h);
}

/* ---- messages ---- */

static void send_to_region(struct harness *h, size_t to, ei_x_buff *x)
{
	cr_assert_lt(to, h->opt.members);
	int rc = dist_node_reg_send(h->m[0].node, &h->client->pid, HARNESS_TYPE, h->m[to].name, x->buff,
				    (size_t)x->index);
	cr_assert_eq(rc, 0, "reg_send: %d", rc);
	ei_x_free(x);
}

long harness_call(struct harness *h, size_t to, long id, const char *msg)
{
	long tag = h->next_tag++;
	ei_x_buff x;
	cr_assert_eq(ei_x_new_with_version(&x), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3) | ei_x_encode_atom(&x, "$gen_call") |
			     ei_x_encode_tuple_header(&x, 2) | ei_x_encode_pid(&x, &h->client->pid) |
			     ei_x_encode_long(&x, tag) | ei_x_encode_tuple_header(&x, 2) | ei_x_encode_long(&x, id) |
			     ei_x_encode_atom(&x, msg),
		     0);
	send_to_region(h, to, &x);
	return tag;
}

long harness_call_region(struct harness *h, size_t to, const char *request)
{
	long tag = h->next_tag++;
	ei_x_buff x;
	cr_assert_eq(ei_x_new_with_version(&x), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3) | ei_x_encode_atom(&x, "$gen_call") |
			     ei_x_encode_tuple_header(&x, 2) | ei_x_encode_pid(&x, &h->client->pid) |
			     ei_x_encode_long(&x, tag) | ei_x_encode_atom(&x, request),
		     0);
	send_to_region(h, to, &x);
	return tag;
}

void harness_tell(struct harness *h, size_t to, long id, const char *msg)
{
	ei_x_buff x;
	cr_assert_eq(ei_x_new_with_version(&x), 0);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 2) | ei_x_encode_long(&x, id) | ei_x_encode_atom(&x, msg), 0);
	send_to_region(h, to, &x);
}

const struct harness_reply *harness_reply(const struct harness *h, long tag)
{
	for (size_t i = 0; i < h->nreplies; i++)
		if (h->replies[i].tag == tag)
			return &h->replies[i];
	return NULL;
}

static bool has_reply(struct harness *h, void *arg) { return harness_reply(h, *(const long *)arg) != NULL; }

const struct harness_reply *harness_await_reply(struct harness *h, long tag, uint32_t ms)
{
	cr_assert(harness_run_until(h, has_reply, &tag, ms), "no reply to call %ld within %u ms", tag, ms);
	return harness_reply(h, tag);
}

uint32_t harness_shard_of(const struct harness *h, long id)
{
	ei_x_buff raw, canon;
	cr_assert_eq(ei_x_new(&raw) | ei_x_new(&canon), 0);
	cr_assert_eq(ei_x_encode_long(&raw, id), 0);
	cr_assert_eq(entity_id_canonical(raw.buff, (size_t)raw.index, &canon), 0);
	uint32_t shard = 0;
	cr_assert_eq(phash2_range(canon.buff, (size_t)canon.index, h->opt.shards, &shard), 0);
	ei_x_free(&raw);
	ei_x_free(&canon);
	return shard;
}

struct region_stats harness_stats(const struct harness *h, size_t i)
{
	struct region_stats s;
	region_get_stats(h->m[i].region, &s);
	return s;
}

size_t harness_remembered(const struct harness *h, size_t i)
{
	size_t n = 0;
	for (uint32_t s = 0; s < h->opt.shards; s++)
		n += remember_count(h->m[i].remember, s);
	return n;
}
