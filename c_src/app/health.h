/*
 * health.h — the probes served beside the metrics (docs/contract.md,
 * "Health"): /health/live answers while the loop runs (from just after the
 * distribution node starts, so also while the node waits for its host);
 * /health/ready once the host (if any) has answered and is up, the node is
 * an up member, each hosted type's region is registered with a
 * coordinator, and its store (if any) can take writes. Kubernetes' probes
 * and load balancers read them, as they read Akka Management's.
 */
#ifndef SN_HEALTH_H
#define SN_HEALTH_H

#include <stdbool.h>
#include <stddef.h>

/* http_check_fn (base/http_server.h) of the node_app `arg`: true, since
 * an answer at all means the loop runs. */
bool health_live(void *arg, char *reason, size_t cap);

/* http_check_fn of the node_app `arg`: true when ready, else false with
 * the first reason found (one line, into reason). Reads only flags the
 * parts keep: cheap enough for every probe. */
bool health_ready(void *arg, char *reason, size_t cap);

#endif
