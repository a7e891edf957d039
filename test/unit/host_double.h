/*
 * host_double.h — an in-process stand-in for the BEAM node that hosts a
 * type written in Erlang (hosting/host_msg.h; the real one is
 * erl_wrapper/src/shardnode_entity_host.erl and its dispatcher), for the
 * unit harness (harness.h). A dist node of its own, on the harness's
 * loop, with a dispatcher that starts one process per entity; each
 * process is a counter: `incr` adds one and answers the new count (its
 * state changes), `get` answers the count. It speaks the host protocol
 * as the real host does — start, entity messages, stop, end — so a
 * region's side of hosting runs as it does against the BEAM.
 *
 * Everything here asserts (Criterion) instead of returning errors.
 */
#ifndef SN_HOST_DOUBLE_H
#define SN_HOST_DOUBLE_H

#include <stdbool.h>
#include <stdint.h>

#include "base/evloop.h"
#include "base/log.h"
#include "sharding/region.h"

struct host_double;

/* Starts the host's node and its dispatcher. */
struct host_double *host_double_start(struct evloop *loop, const struct logger *log);

/* What a region's configuration names as its host (region_config.host):
 * valid until host_double_free. */
const struct region_host *host_double_region_host(struct host_double *hd);

/* While held, the entities' processes take messages but answer none (a
 * message stays at its process, in flight). */
void host_double_hold(struct host_double *hd, bool hold);

/* While gathering, the entities' completions are kept back, in the order
 * they are made, until host_double_send_gathered: the real dispatcher
 * batches its regions' completions the same way once both sides agreed
 * to. */
void host_double_gather(struct host_double *hd, bool gather);

/* Completions kept back so far. */
size_t host_double_gathered(const struct host_double *hd);

/* Sends the completions kept back, all of them in one batch
 * ({'$shardnode_batch', [Msg]}) to the region of the first (the regions of
 * a harness with a host are one member's). */
void host_double_send_gathered(struct host_double *hd);

/* The host's node goes down at once, as a crashed BEAM does: its
 * connections close (the regions hear nodedown) and its processes are
 * gone. The double stays allocated, down, until host_double_free. */
void host_double_kill(struct host_double *hd);

/* Processes started by the dispatcher so far. */
uint64_t host_double_starts(const struct host_double *hd);

/* Kills it if it is up, and frees it. NULL is ignored. */
void host_double_free(struct host_double *hd);

#endif
