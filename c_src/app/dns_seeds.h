/*
 * dns_seeds.h — the seeds of --join-dns NAME (docs/contract.md, "A
 * cluster"): BASE@ADDR for every A and AAAA address NAME resolves to, BASE
 * being this node's own name part, as libcluster's DNS strategies and
 * Akka's bootstrap read a Kubernetes headless service. The name is looked
 * up off the loop (resolver.h), again with back-off (250 ms doubling to
 * 2 s, from the first again when the answer changes) until this node is a
 * member; each answer replaces the seeds membership sends joins to.
 *
 * Forming the cluster: nodes started at once all find each other and
 * nobody to join. The one whose name is the lowest of the seeds forms the
 * cluster (membership_form_cluster) once the answer has stayed the same
 * for form_after_ms and no member of a cluster has answered it; the
 * others join it. A node that restarts while the cluster runs is answered
 * by its members long before, so it joins. With --join seeds beside the
 * name, the node never forms a cluster: those seeds are the cluster.
 *
 * Runs on the loop's thread.
 */
#ifndef SN_DNS_SEEDS_H
#define SN_DNS_SEEDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/evloop.h"
#include "base/log.h"
#include "base/resolver.h"
#include "protocol/node_name.h"

struct membership;

/* Seeds kept at most. */
#define DNS_SEEDS_MAX RESOLVER_ADDRS_MAX

struct dns_seeds_config {
	struct evloop *loop;          /* not owned; outlives the seeds */
	const struct logger *log;     /* not owned; outlives the seeds */
	struct membership *membership; /* not owned; outlives the seeds */
	const char *name;             /* the DNS name; copied */
	const char *our_node;         /* BASE@HOST; copied */
	const char *const *fixed;     /* --join seeds, kept first; copied */
	size_t nfixed;
	uint32_t form_after_ms;
};

struct dns_seeds;

/* Starts the first look-up. Returns the seeds, or NULL with *err -ENOMEM
 * or -EINVAL (too many fixed seeds, or a name too long). */
struct dns_seeds *dns_seeds_start(const struct dns_seeds_config *cfg, int *err);

/* Stops looking up, leaves membership without the seeds (they point into
 * d: call it before membership_free) and frees. NULL: nothing. */
void dns_seeds_free(struct dns_seeds *d);

/* ---- the pure parts, for tests ---- */

/* Writes BASE@ADDR into out[k] for each of the n addresses, BASE being
 * our_node's part before '@', sorted and each once; names that would not
 * fit are left out. Returns how many were written (at most max). */
size_t dns_seeds_names(const char *our_node, const char (*addrs)[RESOLVER_ADDR_BUF], size_t n,
		       char (*out)[NODE_NAME_BUF], size_t max);

/* Whether this node forms the cluster: it is among the n sorted names and
 * the lowest of them. */
bool dns_seeds_lowest(const char *our_node, const char (*names)[NODE_NAME_BUF], size_t n);

#endif
