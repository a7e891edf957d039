/*
 * region_shutdown.h — how a region stops: graceful_shutdown and region_shutdown (region_shutdown.c). For the files of a region only
 * (region_internal.h says which may call which); other modules use
 * region.h.
 */
#ifndef SN_REGION_SHUTDOWN_H
#define SN_REGION_SHUTDOWN_H

#include "sharding/region_internal.h"

/* graceful_shutdown: the shards are handed off to the other members'
 * regions, then the region stops and cfg.on_stopped is called. */
void region_begin_leaving(struct region *r);

/* The leave timer (arg: the region). */
void region_leave_poll_init(struct region *r);

#endif
