/*
 * region_stats.h — what a region tells of itself, and the cluster-stats aggregator (region_stats.c). For the files of a region only
 * (region_internal.h says which may call which); other modules use
 * region.h.
 */
#ifndef SN_REGION_STATS_H
#define SN_REGION_STATS_H

#include "sharding/region_internal.h"

/* {ok, #{ShardId => [EntityId]}} into x. Returns 0, or < 0 when an
 * encoder failed (x then holds no whole term: term_x_whole_or_enomem). */
int region_encode_state(struct region *r, ei_x_buff *x);

/* {ok, #{entities, ..., forwarded}} (region_get_stats) into x. Returns
 * as region_encode_state. */
int region_encode_stats(struct region *r, ei_x_buff *x);

/* sys:get_state's answer (sys_msg.h): #{type, node, registered,
 * coordinator, stats => #{...as region_encode_stats}, settings => #{...}}.
 * Returns as region_encode_state. */
int region_encode_sys_state(struct region *r, ei_x_buff *x);

/* get_cluster_sharding_stats: answered once every other member's region
 * has, or after 2 s. Out of memory, the call gets no answer. */
void region_stats_start(struct region *r, const struct gen_call *call);

/* get_stats from another member's region (`id` is its request): answered
 * with this region's counts. */
void region_stats_on_get(struct region *r, uint32_t id, const erlang_pid *asker);

/* stats from another member's region, for one of our requests. */
void region_stats_on_answer(struct region *r, const struct shard_msg *sm);

/* Forgets every request unanswered. */
void region_stats_free(struct region *r);

#endif
