/*
 * region_stats.c — what a region tells of itself (docs/contract.md, "Region
 * requests"): get_shard_region_state, get_region_stats, and
 * get_cluster_sharding_stats, which gathers the counts of every member's
 * region of the type. A cluster-wide call waits for the other regions'
 * `stats` answers, 2 s at most, in a list of requests with a timer each.
 */
#include <stdlib.h>
#include <string.h>

#include "etf/term.h"
#include "sharding/region_internal.h"
#include "sharding/region_send.h"
#include "sharding/region_stats.h"
#include "etf/term_encode.h"

/* How long a cluster-wide stats call waits for the other members. */
#define STATS_TIMEOUT_MS 2000

/* A get_cluster_sharding_stats call waiting for the other members' regions. */
struct stats_request {
	struct stats_request *next;
	struct region *region;
	uint32_t id;
	erlang_pid caller;
	char *tag;
	size_t tag_len;
	uint32_t waiting;  /* answers still to come */
	uint32_t entries;  /* Node => Map pairs in `pairs` */
	ei_x_buff pairs;   /* raw Node atom, raw map, ... */
	bool broken;       /* an encoder failed: `pairs` is no whole run of terms */
	struct evloop_timer timer;
};

bool region_registered(const struct region *r) { return r->coord.registered && !r->stopped; }

void region_get_stats(const struct region *r, struct region_stats *out)
{
	memset(out, 0, sizeof *out);
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++)
		if (r->slots[s].shard)
			out->entities += r->slots[s].shard->entities.count;
	out->shards = r->nlocal;
	out->buffered = r->buffered;
	out->delivered = r->delivered.asks + r->delivered.tells;
	out->dropped = drop_log_count(&r->drops.log);
	out->forwarded = r->delivered.forwarded;
}

void region_get_metrics(const struct region *r, struct region_metrics *out)
{
	region_get_stats(r, &out->stats);
	out->asks = r->delivered.asks;
	out->tells = r->delivered.tells;
	out->reply_latency = r->replies.latency;
	out->whole_latency = r->replies.whole_latency;
	out->handoffs = r->handoffs.count;
	out->limit_passivations = r->limit.on ? r->limit.lru.passivated : 0;
	out->loads = r->held.loads_issued;
	out->drops = r->drops.log;
	out->handoff_duration = r->handoffs.duration;
	out->hosted = r->cfg.host != NULL;
	if (r->hosting != NULL)
		out->process_latency = *host_entities_process_latency(r->hosting);
}

/* ---- this region ---- */

struct id_list_ctx {
	ei_x_buff *x;
	int rc; /* the encoders' results, OR-ed */
};

static void append_id(struct entity *e, void *arg)
{
	struct id_list_ctx *c = arg;
	c->rc |= ei_x_encode_list_header(c->x, 1) | term_x_append_raw(c->x, entity_id(e), e->id_len);
}

int region_encode_state(struct region *r, ei_x_buff *x)
{
	int rc = ei_x_encode_tuple_header(x, 2) | term_x_encode_atom(x, "ok") | ei_x_encode_map_header(x, r->nlocal);
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		struct shard *sh = r->slots[s].shard;
		if (sh == NULL)
			continue;
		/* One cons cell per id keeps the encoding a single pass. */
		struct id_list_ctx c = {.x = x, .rc = term_x_encode_uint(x, s)};
		entity_table_each(&sh->entities, append_id, &c);
		rc |= c.rc | ei_x_encode_empty_list(x);
	}
	return rc;
}

int region_encode_stats(struct region *r, ei_x_buff *x)
{
	struct region_stats st;
	region_get_stats(r, &st);
	return ei_x_encode_tuple_header(x, 2) | term_x_encode_atom(x, "ok") | ei_x_encode_map_header(x, 6) |
	       term_x_encode_atom(x, "entities") | term_x_encode_uint(x, st.entities) |
	       term_x_encode_atom(x, "shards") | term_x_encode_uint(x, st.shards) |
	       term_x_encode_atom(x, "buffered") | term_x_encode_uint(x, st.buffered) |
	       term_x_encode_atom(x, "delivered") | term_x_encode_uint(x, st.delivered) |
	       term_x_encode_atom(x, "dropped") | term_x_encode_uint(x, st.dropped) |
	       term_x_encode_atom(x, "forwarded") | term_x_encode_uint(x, st.forwarded);
}

int region_encode_sys_state(struct region *r, ei_x_buff *x)
{
	struct region_stats st;
	region_get_stats(r, &st);
	const struct region_config *c = &r->cfg;
	int rc = ei_x_encode_map_header(x, 6) | term_x_encode_atom(x, "type") | term_x_encode_atom(x, c->name) |
		 term_x_encode_atom(x, "node") | term_x_encode_atom(x, dist_node_name(c->node)) |
		 term_x_encode_atom(x, "registered") | ei_x_encode_boolean(x, r->coord.registered) |
		 term_x_encode_atom(x, "coordinator");
	rc |= r->coord.registered ? term_x_encode_atom(x, r->coord.pid.node) : term_x_encode_atom(x, "undefined");
	rc |= term_x_encode_atom(x, "stats") | ei_x_encode_map_header(x, 6) | term_x_encode_atom(x, "entities") |
	      term_x_encode_uint(x, st.entities) | term_x_encode_atom(x, "shards") | term_x_encode_uint(x, st.shards) |
	      term_x_encode_atom(x, "buffered") | term_x_encode_uint(x, st.buffered) | term_x_encode_atom(x, "delivered") |
	      term_x_encode_uint(x, st.delivered) | term_x_encode_atom(x, "dropped") |
	      term_x_encode_uint(x, st.dropped) | term_x_encode_atom(x, "forwarded") |
	      term_x_encode_uint(x, st.forwarded);
	rc |= term_x_encode_atom(x, "settings") | ei_x_encode_map_header(x, 10) |
	      term_x_encode_atom(x, "number_of_shards") | term_x_encode_uint(x, c->number_of_shards) |
	      term_x_encode_atom(x, "buffer_size") | term_x_encode_uint(x, c->buffer_size) |
	      term_x_encode_atom(x, "passivate_idle_after_ms") | term_x_encode_uint(x, c->passivate_idle_after_ms) |
	      term_x_encode_atom(x, "max_active_entities") | term_x_encode_uint(x, c->max_active_entities) |
	      term_x_encode_atom(x, "handoff_timeout_ms") | term_x_encode_uint(x, c->handoff_timeout_ms) |
	      term_x_encode_atom(x, "remember_entities") | ei_x_encode_boolean(x, c->remember != NULL) |
	      term_x_encode_atom(x, "state_store") | term_x_encode_atom(x, c->store_name ? c->store_name : "memory") |
	      term_x_encode_atom(x, "state_replicas") | term_x_encode_uint(x, c->state_replicas) |
	      term_x_encode_atom(x, "proxy_only") | ei_x_encode_boolean(x, c->proxy_only) |
	      term_x_encode_atom(x, "singleton") | ei_x_encode_boolean(x, c->singleton);
	return rc;
}

/* #{ShardId => EntityCount} for this region. Returns 0, or < 0 when an
 * encoder failed. */
static int encode_local_counts(struct region *r, ei_x_buff *x)
{
	int rc = ei_x_encode_map_header(x, r->nlocal);
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++) {
		struct shard *sh = r->slots[s].shard;
		if (sh == NULL)
			continue;
		rc |= term_x_encode_uint(x, s) | term_x_encode_uint(x, sh->entities.count);
	}
	return rc;
}

/* ---- the cluster ---- */

static void free_request(struct region *r, struct stats_request *q)
{
	evloop_timer_stop(r->cfg.loop, &q->timer);
	ei_x_free(&q->pairs);
	free(q->tag);
	free(q);
}

/* Answers a stats call with {ok, #{Node => Map}} from what has arrived,
 * and forgets it. */
static void finish_stats(struct stats_request *q)
{
	struct region *r = q->region;
	ei_x_buff x;
	if (ei_x_new(&x) == 0) {
		int rc = ei_x_encode_tuple_header(&x, 2) | term_x_encode_atom(&x, "ok") |
			 ei_x_encode_map_header(&x, q->entries) |
			 term_x_append_raw(&x, q->pairs.buff, (size_t)q->pairs.index);
		if (term_x_whole_or_enomem(&x, 0, q->broken ? -ENOMEM : rc) == 0)
			region_send_call_reply(r, &q->caller, q->tag, q->tag_len, &x);
		ei_x_free(&x);
	}
	for (struct stats_request **pq = &r->stats.requests; *pq; pq = &(*pq)->next) {
		if (*pq == q) {
			*pq = q->next;
			break;
		}
	}
	free_request(r, q);
}

static void on_stats_timeout(struct evloop *loop, void *arg)
{
	(void)loop;
	finish_stats(arg); /* a member that did not answer in time is left out */
}

/* This region's counts, and those of the regions of every other member
 * hosting the type, asked for now. */
void region_stats_start(struct region *r, const struct gen_call *call)
{
	const char *nodes[CLUSTER_MEMBERS_MAX];
	size_t n = r->cfg.members_hosting ? r->cfg.members_hosting(r->cfg.members_arg, r->cfg.type->name, nodes, CLUSTER_MEMBERS_MAX)
					  : 0;
	struct stats_request *q = calloc(1, sizeof *q);
	if (q == NULL || ei_x_new(&q->pairs) < 0 || (q->tag = malloc(call->tag_len)) == NULL) {
		if (q != NULL) {
			ei_x_free(&q->pairs);
			free(q);
		}
		return;
	}
	q->region = r;
	q->id = r->stats.next_id++;
	q->caller = call->from;
	memcpy(q->tag, call->tag, call->tag_len);
	q->tag_len = call->tag_len;
	evloop_timer_init(&q->timer, on_stats_timeout, q);
	q->broken = (term_x_encode_atom(&q->pairs, dist_node_name(r->cfg.node)) | encode_local_counts(r, &q->pairs)) < 0;
	q->entries = 1;
	q->next = r->stats.requests;
	r->stats.requests = q;
	for (size_t k = 0; k < n; k++) {
		if (strcmp(nodes[k], dist_node_name(r->cfg.node)) == 0)
			continue;
		ei_x_buff x;
		if (ei_x_new(&x) < 0)
			continue;
		if (shard_msg_encode_shard(&x, SMSG_GET_STATS, q->id, &r->pid) == 0 &&
		    outlet_reg_send(&r->cfg.out, &r->pid, r->cfg.name, nodes[k], x.buff, (size_t)x.index) == 0)
			q->waiting++;
		ei_x_free(&x);
	}
	if (q->waiting == 0)
		finish_stats(q);
	else
		evloop_timer_start(r->cfg.loop, &q->timer, STATS_TIMEOUT_MS);
}

void region_stats_on_get(struct region *r, uint32_t id, const erlang_pid *asker)
{
	ei_x_buff counts, x;
	if (ei_x_new(&counts) < 0)
		return;
	if (encode_local_counts(r, &counts) == 0 && ei_x_new(&x) == 0) {
		if (shard_msg_encode_stats(&x, id, dist_node_name(r->cfg.node), counts.buff, (size_t)counts.index) == 0)
			outlet_send(&r->cfg.out, asker, x.buff, (size_t)x.index);
		ei_x_free(&x);
	}
	ei_x_free(&counts);
}

/* An answer for no request we have (late, after the timeout) is ignored. */
void region_stats_on_answer(struct region *r, const struct shard_msg *sm)
{
	for (struct stats_request *q = r->stats.requests; q; q = q->next) {
		if (q->id != sm->shard)
			continue;
		if ((term_x_append_raw(&q->pairs, sm->id, sm->id_len) | term_x_append_raw(&q->pairs, sm->msg, sm->msg_len)) < 0)
			q->broken = true;
		q->entries++;
		if (--q->waiting == 0)
			finish_stats(q);
		return;
	}
}

void region_stats_free(struct region *r)
{
	while (r->stats.requests) {
		struct stats_request *q = r->stats.requests;
		r->stats.requests = q->next;
		free_request(r, q);
	}
}
