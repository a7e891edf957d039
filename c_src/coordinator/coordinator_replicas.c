/* coordinator_replicas.c — see coordinator_replicas.h. */
#include "coordinator/coordinator_replicas.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int coordinator_replicas_init(struct coordinator_replicas *cr, uint32_t nshards, uint32_t want)
{
	memset(cr, 0, sizeof *cr);
	if (want == 0)
		return 0;
	if (want > REPLICA_SETS_MAX)
		want = REPLICA_SETS_MAX;
	cr->sets = malloc((nshards ? nshards : 1) * sizeof *cr->sets);
	cr->dirty = calloc(nshards ? nshards : 1, sizeof *cr->dirty);
	if (cr->sets == NULL || cr->dirty == NULL) {
		free(cr->sets);
		free(cr->dirty);
		cr->sets = NULL;
		cr->dirty = NULL;
		return -ENOMEM;
	}
	cr->want = want;
	cr->nshards = nshards;
	coordinator_replicas_reset(cr);
	return 0;
}

void coordinator_replicas_free(struct coordinator_replicas *cr)
{
	free(cr->sets);
	free(cr->dirty);
	free(cr->reports);
	memset(cr, 0, sizeof *cr);
}

void coordinator_replicas_reset(struct coordinator_replicas *cr)
{
	if (!coordinator_replicas_on(cr))
		return;
	for (uint32_t s = 0; s < cr->nshards; s++) {
		replica_set_init(&cr->sets[s]);
		cr->dirty[s] = false;
	}
	cr->ready = false;
	cr->nreports = 0;
}

/* ---- telling ---- */

/* The set of `shard` to every region, from the coordinator (regions
 * ignore sets from another): its home's, its replicas'. */
static void tell(struct coordinator_replicas *cr, const struct coordinator_view *v, uint32_t shard)
{
	const struct replica_set *s = &cr->sets[shard];
	cr->dirty[shard] = false;
	if (s->home < 0 || s->waiting || (size_t)s->home >= v->nregions)
		return; /* nobody to name */
	const erlang_pid *replicas[REPLICA_SETS_MAX];
	bool complete[REPLICA_SETS_MAX];
	size_t n = 0;
	for (uint8_t k = 0; k < s->nreplicas; k++) {
		if (s->replica[k] < 0 || (size_t)s->replica[k] >= v->nregions)
			continue;
		replicas[n] = v->region_pid(v->arg, (size_t)s->replica[k]);
		complete[n] = s->complete[k];
		n++;
	}
	ei_x_buff x;
	if (ei_x_new(&x) < 0)
		return;
	if (replica_msg_encode_set(&x, shard, s->epoch, v->region_pid(v->arg, (size_t)s->home), replicas, complete,
				   n) == 0)
		for (size_t k = 0; k < v->nregions; k++)
			dist_node_reg_send(v->node, v->self, v->region_name, v->region_pid(v->arg, k)->node, x.buff,
					   (size_t)x.index);
	ei_x_free(&x);
}

/* Adds the replicas missing where regions can take them, then tells
 * every set that changed. */
static void fill_and_tell(struct coordinator_replicas *cr, const struct coordinator_view *v)
{
	struct replica_add *adds = malloc((size_t)cr->nshards * cr->want * sizeof *adds + 1);
	bool *takes = malloc(v->nregions + 1);
	size_t nadds = 0;
	for (size_t k = 0; takes != NULL && k < v->nregions; k++)
		takes[k] = v->takes(v->arg, k);
	struct replica_sets_view sv = {.nregions = v->nregions, .takes = takes};
	if (adds != NULL && takes != NULL &&
	    replica_sets_fill(cr->sets, cr->nshards, &sv, cr->want, &cr->next_epoch, adds, &nadds) == 0)
		for (size_t k = 0; k < nadds; k++)
			cr->dirty[adds[k].shard] = true;
	free(adds);
	free(takes);
	for (uint32_t s = 0; s < cr->nshards; s++)
		if (cr->dirty[s])
			tell(cr, v, s);
}

/* ---- changes ---- */

/* Region `home` is the shard's home now: its set says so, to be told. */
static void make_home(struct coordinator_replicas *cr, uint32_t shard, int32_t home)
{
	replica_set_make_home(&cr->sets[shard], home, &cr->next_epoch);
	cr->dirty[shard] = true;
}

void coordinator_replicas_home_set(struct coordinator_replicas *cr, const struct coordinator_view *v, uint32_t shard,
				   int32_t home)
{
	if (!coordinator_replicas_on(cr) || !cr->ready || shard >= cr->nshards || home < 0)
		return;
	if (cr->sets[shard].home == home && !cr->sets[shard].waiting && cr->sets[shard].epoch != 0)
		return;
	make_home(cr, shard, home);
	fill_and_tell(cr, v);
}

void coordinator_replicas_region_lost(struct coordinator_replicas *cr, int32_t k, int32_t *home, uint32_t *promoted,
				      size_t *npromoted)
{
	*npromoted = 0;
	if (!coordinator_replicas_on(cr) || !cr->ready)
		return;
	struct replica_change *changes = malloc((cr->nshards ? cr->nshards : 1) * sizeof *changes);
	size_t n = 0;
	if (changes == NULL || replica_sets_region_lost(cr->sets, cr->nshards, k, &cr->next_epoch, changes, &n) != 0) {
		free(changes);
		return; /* its shards are allocated afresh, as without replicas */
	}
	for (size_t c = 0; c < n; c++) {
		uint32_t s = changes[c].shard;
		cr->dirty[s] = true;
		if (changes[c].what == REPLICA_LOSS_PROMOTED) {
			home[s] = changes[c].home;
			promoted[(*npromoted)++] = s;
		} else if (changes[c].what == REPLICA_LOSS_WAITING) {
			home[s] = -1;
		}
	}
	free(changes);
}

void coordinator_replicas_region_removed(struct coordinator_replicas *cr, const struct coordinator_view *v, int32_t k)
{
	if (!coordinator_replicas_on(cr))
		return;
	for (size_t e = 0; e < cr->nreports;) {
		if (cr->reports[e].region == k) {
			cr->reports[e] = cr->reports[--cr->nreports];
			continue;
		}
		if (cr->reports[e].region > k)
			cr->reports[e].region--;
		/* A named home gone before the rebuild: its copy may be the
		 * newest, so the report counts as if it named none. */
		if (cr->reports[e].set_home == k)
			cr->reports[e].set_home = -1;
		else if (cr->reports[e].set_home > k)
			cr->reports[e].set_home--;
		e++;
	}
	if (!cr->ready)
		return;
	replica_sets_renumber(cr->sets, cr->nshards, k);
	fill_and_tell(cr, v);
}

bool coordinator_replicas_waiting(const struct coordinator_replicas *cr, uint32_t shard)
{
	return coordinator_replicas_on(cr) && shard < cr->nshards && cr->sets[shard].waiting;
}

void coordinator_replicas_on_filled(struct coordinator_replicas *cr, const struct coordinator_view *v, uint32_t shard,
				    int32_t k)
{
	if (!coordinator_replicas_on(cr) || !cr->ready || shard >= cr->nshards || k < 0)
		return;
	if (replica_sets_completed(&cr->sets[shard], k, &cr->next_epoch) == 0)
		return;
	cr->dirty[shard] = true;
	tell(cr, v, shard);
}

/* Ticks (rebalance_interval_ms each) a shortage lasts before it is said:
 * while members join or start, replicas are filled and waiting shards
 * continue within a tick or two, and saying each step would be noise. */
#define SHORTAGE_TICKS 3

/* Said once per episode, at the tick, never once per shard: shards short
 * of replicas although enough members host the type to hold them, and
 * shards that still wait for a member of their last replica set. A
 * cluster with too few members for state_replicas says so once, as
 * information (one member alone keeps no replicas and says nothing). */
static void say_shortages(struct coordinator_replicas *cr, const struct coordinator_view *v)
{
	uint32_t short_of = 0, waiting = 0;
	for (uint32_t s = 0; s < cr->nshards; s++) {
		waiting += cr->sets[s].waiting;
		short_of += cr->sets[s].home >= 0 && !cr->sets[s].waiting && cr->sets[s].nreplicas < cr->want;
	}
	size_t takers = 0;
	for (size_t k = 0; k < v->nregions; k++)
		takers += v->takes(v->arg, k);
	bool few_members = takers <= cr->want;
	if (few_members && takers > 1 && !cr->said_few_members)
		log_info(v->log, "coordinator %s: state_replicas is %u, and %zu members host the type: each shard "
			 "keeps %zu replicas until more join", v->type_name, cr->want, takers, takers - 1);
	cr->said_few_members = few_members && takers > 1;

	cr->short_ticks = short_of > 0 && !few_members ? cr->short_ticks + 1 : 0;
	if (cr->short_ticks == SHORTAGE_TICKS) {
		log_warn(v->log, "coordinator %s: %u shards have had fewer than state_replicas (%u) replicas "
			 "for %u rebalance intervals, although enough members host the type",
			 v->type_name, short_of, cr->want, SHORTAGE_TICKS);
		cr->said_short = true;
	} else if (short_of == 0 && cr->said_short) {
		log_info(v->log, "coordinator %s: every shard has its %u replicas", v->type_name, cr->want);
		cr->said_short = false;
	}

	cr->waiting_ticks = waiting > 0 ? cr->waiting_ticks + 1 : 0;
	if (cr->waiting_ticks == SHORTAGE_TICKS) {
		log_warn(v->log, "coordinator %s: %u shards still wait for a member of their last replica set "
			 "(the members that hold their records): their messages are answered {error, "
			 "store_unavailable} until one joins", v->type_name, waiting);
		cr->said_waiting = true;
	} else if (waiting == 0 && cr->said_waiting) {
		log_info(v->log, "coordinator %s: no shard waits for its replica set any more", v->type_name);
		cr->said_waiting = false;
	}
}

void coordinator_replicas_tick(struct coordinator_replicas *cr, const struct coordinator_view *v)
{
	if (!coordinator_replicas_on(cr) || !cr->ready)
		return;
	fill_and_tell(cr, v);
	say_shortages(cr, v);
}

/* ---- a coordinator that takes over ---- */

struct report_ctx {
	struct coordinator_replicas *cr;
	const struct coordinator_view *v;
	int32_t region;
};

/* The region on `node`, or -1. */
static int32_t region_on(const struct coordinator_view *v, const char *node)
{
	for (size_t k = 0; node != NULL && k < v->nregions; k++)
		if (strcmp(v->region_pid(v->arg, k)->node, node) == 0)
			return (int32_t)k;
	return -1;
}

static int add_report(void *arg, uint32_t shard, uint64_t epoch, enum replica_role_held role, const char *set_home)
{
	struct report_ctx *c = arg;
	struct coordinator_replicas *cr = c->cr;
	if (shard >= cr->nshards)
		return 0;
	if (cr->nreports == cr->cap) {
		size_t cap = cr->cap ? cr->cap * 2 : 64;
		struct replica_report *p = realloc(cr->reports, cap * sizeof *p);
		if (p == NULL)
			return -ENOMEM;
		cr->reports = p;
		cr->cap = cap;
	}
	cr->reports[cr->nreports++] = (struct replica_report){
		.shard = shard,
		.region = c->region,
		.home = role == REPLICA_HELD_HOME,
		.complete = role == REPLICA_HELD_HOME || role == REPLICA_HELD_COMPLETE,
		.none = role == REPLICA_HELD_NONE,
		.epoch = epoch,
		.set_home = region_on(c->v, set_home),
	};
	if (epoch > cr->next_epoch)
		cr->next_epoch = epoch; /* a set given later must be newer than every copy's */
	return 0;
}

void coordinator_replicas_on_report(struct coordinator_replicas *cr, const struct coordinator_view *v, int32_t k,
				    const struct replica_msg *m, int32_t *home, uint32_t *promoted, size_t *npromoted)
{
	*npromoted = 0;
	if (!coordinator_replicas_on(cr))
		return;
	/* A region that reports again (it registered again) replaces what it
	 * said before. */
	for (size_t e = 0; e < cr->nreports;) {
		if (cr->reports[e].region == k)
			cr->reports[e] = cr->reports[--cr->nreports];
		else
			e++;
	}
	size_t first = cr->nreports;
	struct report_ctx c = {.cr = cr, .v = v, .region = k};
	(void)replica_msg_each_held(m, add_report, &c);
	if (!cr->ready)
		return; /* the rebuild reads them */
	/* The sets are known: what it holds matters only to a shard that
	 * waits for a copy like it (a member of its last set, back). */
	for (size_t e = first; e < cr->nreports; e++) {
		const struct replica_report *r = &cr->reports[e];
		if (home[r->shard] >= 0 || !replica_sets_copy_returned(&cr->sets[r->shard], k, r, &cr->next_epoch))
			continue;
		home[r->shard] = k;
		promoted[(*npromoted)++] = r->shard;
		cr->dirty[r->shard] = true;
		log_at_shard(v->log, LOG_INFO, r->shard, "coordinator %s: shard %u waited for a copy: it continues on %s",
			     v->type_name, r->shard, v->region_pid(v->arg, (size_t)k)->node);
	}
	cr->nreports = first; /* kept only until the rebuild */
	fill_and_tell(cr, v);
}

void coordinator_replicas_rebuild(struct coordinator_replicas *cr, const struct coordinator_view *v, int32_t *home,
				  uint32_t *promoted, size_t *npromoted)
{
	*npromoted = 0;
	if (!coordinator_replicas_on(cr) || cr->ready)
		return;
	cr->ready = true;
	/* A home named by a copy counts only once it reported: what it holds
	 * says whether it took the set (replica_sets.h). */
	for (size_t e = 0; e < cr->nreports; e++)
		if (cr->reports[e].set_home >= 0 && !v->reported(v->arg, (size_t)cr->reports[e].set_home))
			cr->reports[e].set_home = -1;
	(void)replica_sets_rebuild(cr->sets, cr->nshards, cr->reports, cr->nreports, &cr->next_epoch);
	cr->nreports = 0;
	uint32_t continued = 0, waiting = 0;
	for (uint32_t s = 0; s < cr->nshards; s++) {
		struct replica_set *set = &cr->sets[s];
		if (home[s] >= 0) {
			/* The region that hosts it is its home, whatever was kept. */
			if (set->home != home[s] || set->waiting || set->epoch == 0)
				make_home(cr, s, home[s]);
			else
				cr->dirty[s] = true; /* told again: the regions may know another coordinator's */
		} else if (set->home >= 0 && !set->waiting) {
			home[s] = set->home;
			promoted[(*npromoted)++] = s;
			cr->dirty[s] = true;
			continued++;
			log_at_shard(v->log, LOG_DEBUG, s, "coordinator %s: shard %u continues on its replica on %s",
				     v->type_name, s, v->region_pid(v->arg, (size_t)set->home)->node);
		} else if (set->waiting) {
			waiting++;
			log_at_shard(v->log, LOG_DEBUG, s, "coordinator %s: shard %u waits: no member of its last replica "
				     "set that holds every record is here", v->type_name, s);
		}
	}
	/* Once for them all: a cluster that starts again has its members
	 * come one by one, and its shards wait until theirs are back. */
	if (continued > 0)
		log_info(v->log, "coordinator %s: %u shards continue on their replicas", v->type_name, continued);
	if (waiting > 0)
		log_info(v->log, "coordinator %s: %u shards wait for a member of their last replica set to join",
			 v->type_name, waiting);
	fill_and_tell(cr, v);
}

void coordinator_replicas_count(const struct coordinator_replicas *cr, uint32_t *missing, uint32_t *waiting)
{
	*missing = *waiting = 0;
	if (!coordinator_replicas_on(cr) || !cr->ready)
		return;
	for (uint32_t s = 0; s < cr->nshards; s++) {
		const struct replica_set *set = &cr->sets[s];
		if (set->waiting) {
			(*waiting)++;
			continue;
		}
		if (set->home < 0)
			continue;
		uint32_t complete = 0;
		for (uint8_t k = 0; k < set->nreplicas; k++)
			complete += set->complete[k];
		*missing += complete < cr->want ? cr->want - complete : 0;
	}
}

uint32_t coordinator_replicas_prefer(const struct coordinator_replicas *cr, uint32_t shard, int32_t to,
				     const int32_t *home, const int32_t *moving_to)
{
	if (!coordinator_replicas_on(cr) || !cr->ready || shard >= cr->nshards ||
	    replica_set_complete_at(&cr->sets[shard], to))
		return shard;
	for (uint32_t s = 0; s < cr->nshards; s++)
		if (home[s] == home[shard] && moving_to[s] < 0 && !cr->sets[s].waiting &&
		    replica_set_complete_at(&cr->sets[s], to))
			return s;
	return shard;
}
