/*
 * region_remember.c — what a region does for remembered entities
 * (remember_entities = true, docs/contract.md "A cluster"): it starts the
 * entities remembered for a shard that comes to it, watches them so the
 * store and the other members' copies (remember_share.h) follow, answers
 * remember_share's questions while a `remembered` message is applied, and
 * sends its sets to members that join. Without a quorum lease, remembered
 * entities wait like messages do. A singleton's one entity starts with its
 * shard in the same way.
 */
#include <errno.h>
#include <stdlib.h>

#include "etf/entity_id.h"
#include "sharding/region_internal.h"
#include "sharding/region_remember.h"
#include "sharding/region_hosting.h"
#include "sharding/region_store.h"

int region_remember_start(struct region *r)
{
	const struct region_config *cfg = &r->cfg;
	if (cfg->remember == NULL)
		return 0;
	if (cfg->members_hosting == NULL)
		return -EINVAL; /* remembered entities go to the members hosting the type */
	struct remember_share_config rcfg = {
		.node = cfg->node, .out = cfg->out, .loop = cfg->loop, .log = cfg->log, .store = cfg->remember,
		.type_name = r->ident.name, .from = r->pid,
		.members_hosting = cfg->members_hosting, .members_arg = cfg->members_arg,
	};
	int err = -ENOMEM;
	r->remember.share = remember_share_new(&rcfg, &err);
	return r->remember.share != NULL ? 0 : err;
}

/* ---- starting remembered entities ---- */

/* A type run on a host starts the entity's process too (region_hosting.h). */
static int start_entity(struct region *r, uint32_t shard, const char *id, size_t len)
{
	return r->hosting != NULL ? region_hosting_wake(r, shard, id, len) : region_start_entity(r, shard, id, len);
}

struct start_ctx {
	struct region *r;
	struct shard *shard;
	size_t failed;
};

static void start_one(void *arg, const char *id, size_t len)
{
	struct start_ctx *c = arg;
	if (start_entity(c->r, c->shard->id, id, len) != 0)
		c->failed++;
}

/* A singleton's one entity, which runs as long as its shard is here, as if
 * it were remembered (region.h). */
static void start_singleton(struct region *r, struct shard *s)
{
	ei_x_buff spare, *canon = scratch_get(&r->bufs.canon, &spare);
	if (canon == NULL)
		return;
	int rc = entity_id_canonical(r->ident.type_atom, r->ident.type_atom_len, canon);
	if (rc == 0)
		rc = start_entity(r, s->id, canon->buff, (size_t)canon->index);
	if (rc != 0)
		log_warn(r->cfg.log, "singleton %s: its entity failed to start (%d); the next message starts it",
			 r->cfg.name, rc);
	else
		log_info(r->cfg.log, "singleton %s: runs here", r->cfg.name);
	scratch_put(&r->bufs.canon, canon);
}

/* Not while this node lacks a quorum lease: they could be running
 * elsewhere. */
void region_start_remembered(struct region *r, struct shard *s)
{
	if (r->remember.share == NULL && !r->cfg.singleton)
		return;
	if (r->remember.share != NULL)
		s->observer = (struct shard_observer){remember_share_started, remember_share_stopped, r->remember.share};
	r->slots[s->id].remembered_pending = false;
	if (!r->cfg.singleton && remember_count(r->cfg.remember, s->id) == 0)
		return;
	if (!region_may_deliver(r)) {
		r->slots[s->id].remembered_pending = true; /* region_remember_resume */
		r->remember.pending = true;
		return;
	}
	if (r->cfg.singleton) {
		start_singleton(r, s);
		return;
	}
	struct start_ctx c = {r, s, 0};
	remember_each(r->cfg.remember, s->id, start_one, &c);
	log_at_shard(r->cfg.log, LOG_DEBUG, s->id, "region %s: shard %u started %zu remembered entities", r->cfg.name, s->id,
		  remember_count(r->cfg.remember, s->id) - c.failed);
	if (c.failed)
		log_at_shard(r->cfg.log, LOG_WARN, s->id, "region %s: shard %u: %zu remembered entities failed to start", r->cfg.name,
			 s->id, c.failed);
}

void region_remember_resume(struct region *r)
{
	if (!r->remember.pending)
		return;
	r->remember.pending = false;
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++)
		if (region_slot_hosted(&r->slots[s].st) && r->slots[s].remembered_pending)
			region_start_remembered(r, r->slots[s].shard);
}

bool region_remember_wants_home(const struct region *r, uint32_t shard)
{
	return r->cfg.remember != NULL && !r->cfg.proxy_only && remember_count(r->cfg.remember, shard) > 0;
}

/* ---- remember_share's hooks (remember_msg_hooks) ---- */

/* Another member reports an entity started: if its shard is here now (the
 * report crossed a handoff), start it here. */
static void on_remembered_live(void *arg, uint32_t shard, const char *id, size_t len)
{
	struct region *r = arg;
	if (shard >= r->cfg.number_of_shards || !region_slot_hosted(&r->slots[shard].st))
		return;
	if (!region_may_deliver(r)) {
		r->slots[shard].remembered_pending = true; /* region_remember_resume starts it */
		r->remember.pending = true;
		return;
	}
	(void)start_entity(r, shard, id, len);
}

static bool hosts_shard(void *arg, uint32_t shard)
{
	const struct region *r = arg;
	return shard < r->cfg.number_of_shards && region_slot_hosted(&r->slots[shard].st);
}

static void reannounce(void *arg, uint32_t shard, const char *id, size_t len)
{
	struct region *r = arg;
	remember_share_announce(r->remember.share, shard, id, len);
}

bool region_remember_handle(struct region *r, const char *term, size_t len, const char *via)
{
	if (r->remember.share == NULL)
		return false;
	const struct remember_msg_hooks hooks = {on_remembered_live, hosts_shard, reannounce, r};
	return remember_share_handle(r->remember.share, term, len, &hooks, via) != 0;
}

/* ---- members that join ---- */

/* Whose sets a member that joins is sent by this region: the shards hosted
 * here, and those with no live home in sight (unknown, moving, or on a
 * downed node), whose sets would otherwise reach it from nobody. Every
 * region holds every set, so duplicates are harmless. */
static bool sends_snapshot_of(const struct region *r, const struct shard_slot *slot)
{
	if (slot->st.state == SLOT_REMOTE)
		return region_is_downed(r, slot->home_region.node);
	return true;
}

void region_members_changed(struct region *r)
{
	if (r->remember.share == NULL || r->stopped)
		return;
	uint32_t *hosted = malloc(r->cfg.number_of_shards * sizeof *hosted);
	if (hosted == NULL)
		return;
	size_t n = 0;
	for (uint32_t s = 0; s < r->cfg.number_of_shards; s++)
		if (sends_snapshot_of(r, &r->slots[s]))
			hosted[n++] = s;
	remember_share_sync(r->remember.share, hosted, n);
	free(hosted);
}
