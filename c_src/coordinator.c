/* coordinator.c — see coordinator.h. */
#include "coordinator.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shard_msg.h"
#include "term.h"

struct region_ref {
	erlang_pid pid;
	uint32_t nshards; /* shards allocated to it */
	bool reported;    /* its `hosting` report has arrived */
};

struct coordinator {
	struct coordinator_config cfg;
	struct proc *proc;
	bool active;
	struct region_ref *regions;
	size_t nregions, cap;
	int32_t *home; /* per shard: index into regions, or -1 */
	char (*expected)[256];
	size_t nexpected;
};

static void on_region_stopped(struct coordinator *c, const erlang_pid *region);

static void forget_all(struct coordinator *c)
{
	c->nregions = 0;
	for (uint32_t s = 0; s < c->cfg.nshards; s++)
		c->home[s] = -1;
}

void coordinator_set_active(struct coordinator *c, bool active)
{
	if (c->active == active)
		return;
	c->active = active;
	forget_all(c);
	log_info(c->cfg.log, "coordinator %s: %s", c->cfg.type_name,
		 active ? "active here (oldest member hosting the type)" : "no longer active here");
}

void coordinator_set_expected(struct coordinator *c, const char *const *nodes, size_t n)
{
	char (*copy)[256] = calloc(n ? n : 1, sizeof *copy);
	if (copy == NULL)
		return;
	for (size_t k = 0; k < n; k++)
		snprintf(copy[k], sizeof copy[k], "%s", nodes[k]);
	free(c->expected);
	c->expected = copy;
	c->nexpected = n;
	/* A region whose node is no longer a serving member (it left or was
	 * downed) gives its shards back. Not on a mere lost connection: the
	 * node may still be running them on the other side of a partition. */
	for (size_t k = c->nregions; k-- > 0;) {
		bool expected = false;
		for (size_t e = 0; e < n && !expected; e++)
			expected = strcmp(c->regions[k].pid.node, copy[e]) == 0;
		if (!expected) {
			erlang_pid gone = c->regions[k].pid; /* the array shifts under it */
			on_region_stopped(c, &gone);
		}
	}
}

/* True when every expected node's region has registered and reported. */
static bool all_reported(const struct coordinator *c)
{
	for (size_t e = 0; e < c->nexpected; e++) {
		bool found = false;
		for (size_t k = 0; k < c->nregions && !found; k++)
			found = c->regions[k].reported && strcmp(c->regions[k].pid.node, c->expected[e]) == 0;
		if (!found)
			return false;
	}
	return true;
}

int coordinator_least_shards(const uint32_t *counts, size_t n, void *arg)
{
	(void)arg;
	int best = -1;
	for (size_t k = 0; k < n; k++)
		if (best < 0 || counts[k] < counts[best])
			best = (int)k;
	return best;
}

static int find_region(const struct coordinator *c, const erlang_pid *pid)
{
	for (size_t k = 0; k < c->nregions; k++)
		if (term_pid_equal(&c->regions[k].pid, pid))
			return (int)k;
	return -1;
}

static void send_pid_msg(struct coordinator *c, const erlang_pid *to, enum shard_msg_kind kind,
			 const erlang_pid *pid)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (shard_msg_encode_pid(&x, kind, pid) == 0)
		dist_node_send(c->cfg.node, to, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

static void send_home(struct coordinator *c, const erlang_pid *to, uint32_t shard, const erlang_pid *home)
{
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (shard_msg_encode_shard(&x, SMSG_SHARD_HOME, shard, home) == 0)
		dist_node_send(c->cfg.node, to, x.buff, (size_t)x.index);
	ei_x_free(&x);
}

static void on_register(struct coordinator *c, const erlang_pid *region)
{
	if (!c->active)
		return; /* the region finds the active one through membership */
	if (find_region(c, region) < 0) {
		if (c->nregions == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 4;
			struct region_ref *r = realloc(c->regions, cap * sizeof *r);
			if (r == NULL)
				return; /* the region retries */
			c->regions = r;
			c->cap = cap;
		}
		c->regions[c->nregions++] = (struct region_ref){.pid = *region};
		log_info(c->cfg.log, "coordinator %s: region %s registered (%zu regions)", c->cfg.type_name,
			 region->node, c->nregions);
	}
	send_pid_msg(c, region, SMSG_REGISTERED, &c->proc->pid);
}

/* {'$shardnode', hosting, RegionPid, [ShardId]}: what a registering region
 * already hosts becomes its allocation. */
static void on_hosting(struct coordinator *c, const erlang_pid *region, const char *list)
{
	int k = find_region(c, region);
	if (!c->active || k < 0)
		return;
	c->regions[k].reported = true;
	int i = 0, n;
	if (ei_decode_list_header(list, &i, &n) < 0)
		return;
	for (int e = 0; e < n; e++) {
		long long shard;
		if (ei_decode_longlong(list, &i, &shard) < 0)
			return;
		if (shard < 0 || shard >= c->cfg.nshards)
			continue;
		if (c->home[shard] < 0) {
			c->home[shard] = k;
			c->regions[k].nshards++;
		} else if (c->home[shard] != k) {
			log_warn(c->cfg.log, "coordinator %s: shard %lld reported by %s and %s; keeping the first",
				 c->cfg.type_name, shard, c->regions[c->home[shard]].pid.node, region->node);
		}
	}
}

static void on_get_home(struct coordinator *c, uint32_t shard, const erlang_pid *requester)
{
	if (!c->active || shard >= c->cfg.nshards || find_region(c, requester) < 0)
		return; /* unknown region: it registers first, then asks again */
	if (c->home[shard] < 0 && !all_reported(c))
		return; /* allocating now could give away a shard a region still hosts */
	int32_t h = c->home[shard];
	if (h < 0) {
		uint32_t *counts = malloc(c->nregions * sizeof *counts);
		if (counts == NULL)
			return;
		for (size_t k = 0; k < c->nregions; k++)
			counts[k] = c->regions[k].nshards;
		int pick = c->cfg.allocate(counts, c->nregions, c->cfg.allocate_arg);
		free(counts);
		if (pick < 0 || (size_t)pick >= c->nregions)
			return;
		h = c->home[shard] = pick;
		c->regions[pick].nshards++;
		log_debug(c->cfg.log, "coordinator %s: shard %u allocated to %s", c->cfg.type_name, shard,
			  c->regions[pick].pid.node);
		/* The home hears first, so it hosts the shard before anyone
		 * forwards messages to it. */
		if (!term_pid_equal(&c->regions[pick].pid, requester))
			send_home(c, &c->regions[pick].pid, shard, &c->regions[pick].pid);
	}
	send_home(c, requester, shard, &c->regions[h].pid);
}

static void on_region_stopped(struct coordinator *c, const erlang_pid *region)
{
	int k = find_region(c, region);
	if (k < 0)
		return;
	for (uint32_t s = 0; s < c->cfg.nshards; s++) {
		if (c->home[s] == k)
			c->home[s] = -1;
		else if (c->home[s] > k)
			c->home[s]--;
	}
	memmove(&c->regions[k], &c->regions[k + 1], (c->nregions - (size_t)k - 1) * sizeof *c->regions);
	c->nregions--;
	log_info(c->cfg.log, "coordinator %s: region %s stopped (%zu regions)", c->cfg.type_name, region->node,
		 c->nregions);
}

static void coordinator_handle(void *ctx, struct proc *self, const struct proc_msg *m)
{
	(void)self;
	struct coordinator *c = ctx;
	struct shard_msg sm;
	if (shard_msg_decode(m->term, m->len, &sm) != 1) {
		log_debug(c->cfg.log, "coordinator %s: unexpected message ignored", c->cfg.type_name);
		return;
	}
	switch (sm.kind) {
	case SMSG_REGISTER: on_register(c, &sm.pid); break;
	case SMSG_GET_SHARD_HOME: on_get_home(c, sm.shard, &sm.pid); break;
	case SMSG_REGION_STOPPED: on_region_stopped(c, &sm.pid); break;
	case SMSG_HOSTING: on_hosting(c, &sm.pid, sm.shards); break;
	default: break;
	}
}

struct coordinator *coordinator_start(const struct coordinator_config *cfg, int *err)
{
	struct coordinator *c = calloc(1, sizeof *c);
	if (c == NULL || (c->home = malloc(cfg->nshards * sizeof *c->home)) == NULL) {
		free(c);
		*err = -ENOMEM;
		return NULL;
	}
	c->cfg = *cfg;
	if (c->cfg.allocate == NULL)
		c->cfg.allocate = coordinator_least_shards;
	for (uint32_t s = 0; s < cfg->nshards; s++)
		c->home[s] = -1;
	c->proc = dist_node_spawn(cfg->node, cfg->name, coordinator_handle, c, err);
	if (c->proc == NULL) {
		free(c->home);
		free(c);
		return NULL;
	}
	return c;
}

const erlang_pid *coordinator_pid(const struct coordinator *c) { return &c->proc->pid; }

void coordinator_stop(struct coordinator *c)
{
	if (c == NULL)
		return;
	dist_node_exit(c->cfg.node, c->proc, "shutdown");
	free(c->regions);
	free(c->home);
	free(c->expected);
	free(c);
}
