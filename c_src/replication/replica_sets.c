/* replica_sets.c — see replica_sets.h. */
#include "replication/replica_sets.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void replica_set_init(struct replica_set *s)
{
	memset(s, 0, sizeof *s);
	s->home = -1;
	for (size_t k = 0; k < REPLICA_SETS_MAX; k++)
		s->replica[k] = -1;
}

static bool in_set(const struct replica_set *s, int32_t region)
{
	if (s->home == region)
		return true;
	for (uint8_t k = 0; k < s->nreplicas; k++)
		if (s->replica[k] == region)
			return true;
	return false;
}

/* Removes replica k, keeping the others in order. */
static void remove_replica(struct replica_set *s, uint8_t k)
{
	for (uint8_t j = k; j + 1 < s->nreplicas; j++) {
		s->replica[j] = s->replica[j + 1];
		s->complete[j] = s->complete[j + 1];
	}
	s->nreplicas--;
	s->replica[s->nreplicas] = -1;
	s->complete[s->nreplicas] = false;
}

void replica_set_make_home(struct replica_set *s, int32_t home, uint64_t *next_epoch)
{
	for (uint8_t k = 0; k < s->nreplicas; k++) {
		if (s->replica[k] == home) {
			remove_replica(s, k);
			break;
		}
	}
	s->home = home;
	s->waiting = false;
	s->epoch = ++*next_epoch;
}

/* The region that takes copies, is not in s, and has the fewest copies
 * (ties: lowest index); -1 if none. */
static int32_t least_loaded(const struct replica_set *s, const struct replica_sets_view *v, const uint32_t *copies)
{
	int32_t best = -1;
	for (size_t r = 0; r < v->nregions; r++) {
		if (!v->takes[r] || in_set(s, (int32_t)r))
			continue;
		if (best < 0 || copies[r] < copies[best])
			best = (int32_t)r;
	}
	return best;
}

int replica_sets_fill(struct replica_set *sets, uint32_t nshards, const struct replica_sets_view *v, uint32_t want,
		      uint64_t *next_epoch, struct replica_add *out, size_t *nout)
{
	*nout = 0;
	if (want > REPLICA_SETS_MAX)
		return -EINVAL;
	uint32_t *copies = calloc(v->nregions ? v->nregions : 1, sizeof *copies);
	if (copies == NULL)
		return -ENOMEM;
	/* Every copy counts, a waiting shard's included: its last home
	 * comes back to it. */
	for (uint32_t sh = 0; sh < nshards; sh++) {
		const struct replica_set *s = &sets[sh];
		if (s->home >= 0 && (size_t)s->home < v->nregions)
			copies[s->home]++;
		for (uint8_t k = 0; k < s->nreplicas; k++)
			if (s->replica[k] >= 0 && (size_t)s->replica[k] < v->nregions)
				copies[s->replica[k]]++;
	}
	for (uint32_t sh = 0; sh < nshards; sh++) {
		struct replica_set *s = &sets[sh];
		if (s->home < 0 || s->waiting)
			continue;
		while (s->nreplicas < want) {
			int32_t r = least_loaded(s, v, copies);
			if (r < 0)
				break; /* fewer regions than copies wanted: as many as there are */
			s->replica[s->nreplicas] = r;
			s->complete[s->nreplicas] = false;
			s->nreplicas++;
			s->epoch = ++*next_epoch;
			copies[r]++;
			out[(*nout)++] = (struct replica_add){.shard = sh, .region = r, .epoch = s->epoch};
		}
	}
	free(copies);
	return 0;
}

uint64_t replica_sets_completed(struct replica_set *s, int32_t region, uint64_t *next_epoch)
{
	for (uint8_t k = 0; k < s->nreplicas; k++) {
		if (s->replica[k] != region)
			continue;
		if (s->complete[k])
			return 0;
		s->complete[k] = true;
		return s->epoch = ++*next_epoch;
	}
	return 0;
}

/* The complete replica to promote: the one whose region homes the fewest
 * shards (ties: lowest index); -1 if none is complete. */
static int pick_promoted(const struct replica_set *s, const uint32_t *homes, size_t nhomes)
{
	int best = -1;
	for (uint8_t k = 0; k < s->nreplicas; k++) {
		if (!s->complete[k])
			continue;
		int32_t r = s->replica[k];
		uint32_t load = r >= 0 && (size_t)r < nhomes ? homes[r] : 0;
		int32_t br = best >= 0 ? s->replica[best] : -1;
		uint32_t best_load = best >= 0 && br >= 0 && (size_t)br < nhomes ? homes[br] : 0;
		if (best < 0 || load < best_load || (load == best_load && r < br))
			best = k;
	}
	return best;
}

int replica_sets_region_lost(struct replica_set *sets, uint32_t nshards, int32_t region, uint64_t *next_epoch,
			     struct replica_change *out, size_t *nout)
{
	*nout = 0;
	/* Homes per region, for an even choice among complete replicas. */
	int32_t top = region;
	for (uint32_t sh = 0; sh < nshards; sh++) {
		if (sets[sh].home > top)
			top = sets[sh].home;
		for (uint8_t k = 0; k < sets[sh].nreplicas; k++)
			if (sets[sh].replica[k] > top)
				top = sets[sh].replica[k];
	}
	size_t nhomes = (size_t)top + 1;
	uint32_t *homes = calloc(nhomes, sizeof *homes);
	if (homes == NULL)
		return -ENOMEM;
	for (uint32_t sh = 0; sh < nshards; sh++)
		if (sets[sh].home >= 0 && !sets[sh].waiting)
			homes[sets[sh].home]++;
	for (uint32_t sh = 0; sh < nshards; sh++) {
		struct replica_set *s = &sets[sh];
		if (s->waiting)
			continue; /* its last home stays recorded */
		if (s->home == region) {
			homes[region]--;
			int k = pick_promoted(s, homes, nhomes);
			if (k < 0) {
				/* Nothing left holds every record: the shard waits, and
				 * its partial copies are of no use. */
				while (s->nreplicas > 0)
					remove_replica(s, 0);
				s->waiting = true;
				s->wait_epoch = s->epoch; /* its home's copy, when it comes back */
				s->epoch = ++*next_epoch;
				out[(*nout)++] = (struct replica_change){sh, REPLICA_LOSS_WAITING, s->home, s->epoch};
				continue;
			}
			replica_set_make_home(s, s->replica[k], next_epoch);
			homes[s->home]++;
			out[(*nout)++] = (struct replica_change){sh, REPLICA_LOSS_PROMOTED, s->home, s->epoch};
			continue;
		}
		for (uint8_t k = 0; k < s->nreplicas; k++) {
			if (s->replica[k] == region) {
				remove_replica(s, k);
				s->epoch = ++*next_epoch;
				out[(*nout)++] = (struct replica_change){sh, REPLICA_LOSS_REPLICA, s->home, s->epoch};
				break;
			}
		}
	}
	free(homes);
	return 0;
}

void replica_sets_renumber(struct replica_set *sets, uint32_t nshards, int32_t gone)
{
	for (uint32_t sh = 0; sh < nshards; sh++) {
		struct replica_set *s = &sets[sh];
		if (s->home == gone)
			s->home = -1; /* a waiting shard's last home (see the header) */
		else if (s->home > gone)
			s->home--;
		for (uint8_t k = 0; k < s->nreplicas; k++)
			if (s->replica[k] > gone)
				s->replica[k]--;
	}
}

/* Whether report r is of a set its home never took: the home it names
 * reported the shard at an older epoch, or not at all. */
static bool of_a_set_never_taken(const struct replica_report *r, const struct replica_report *reports, size_t n)
{
	if (r->home || r->complete || r->set_home < 0)
		return false;
	for (size_t k = 0; k < n; k++)
		if (reports[k].region == r->set_home && reports[k].shard == r->shard)
			return reports[k].epoch < r->epoch;
	return true;
}

/* Builds one shard's set from the reports of its highest epoch. */
static void rebuild_one(struct replica_set *s, uint32_t shard, const struct replica_report *reports, size_t n,
			uint64_t top, uint64_t *next_epoch)
{
	replica_set_init(s);
	s->epoch = top;
	/* Lowest regions first: the reports in region order. */
	for (int32_t last = -1;;) {
		const struct replica_report *next = NULL;
		for (size_t k = 0; k < n; k++) {
			const struct replica_report *r = &reports[k];
			if (r->shard == shard && r->epoch == top && r->region > last && !r->none &&
			    (next == NULL || r->region < next->region) && !of_a_set_never_taken(r, reports, n))
				next = r;
		}
		if (next == NULL)
			break;
		last = next->region;
		if (next->home && s->home < 0) {
			s->home = next->region;
		} else if (!next->home && s->nreplicas < REPLICA_SETS_MAX) {
			s->replica[s->nreplicas] = next->region;
			s->complete[s->nreplicas++] = next->complete;
		}
	}
	if (s->home >= 0)
		return;
	for (uint8_t k = 0; k < s->nreplicas; k++) {
		if (s->complete[k]) {
			replica_set_make_home(s, s->replica[k], next_epoch);
			return;
		}
	}
	while (s->nreplicas > 0)
		remove_replica(s, 0);
	s->waiting = true;
	s->wait_epoch = top;
}

bool replica_set_complete_at(const struct replica_set *s, int32_t region)
{
	for (uint8_t k = 0; k < s->nreplicas; k++)
		if (s->replica[k] == region && s->complete[k])
			return true;
	return false;
}

bool replica_sets_copy_returned(struct replica_set *s, int32_t region, const struct replica_report *report,
				uint64_t *next_epoch)
{
	if (!s->waiting || report->none || !(report->home || report->complete) || report->epoch < s->wait_epoch)
		return false;
	replica_set_init(s);
	s->home = region;
	s->epoch = ++*next_epoch;
	return true;
}

size_t replica_sets_rebuild(struct replica_set *sets, uint32_t nshards, const struct replica_report *reports,
			    size_t nreports, uint64_t *next_epoch)
{
	for (size_t k = 0; k < nreports; k++)
		if (reports[k].epoch > *next_epoch)
			*next_epoch = reports[k].epoch;
	size_t rebuilt = 0;
	for (uint32_t sh = 0; sh < nshards; sh++) {
		uint64_t top = 0;
		bool any = false;
		for (size_t k = 0; k < nreports; k++) {
			if (reports[k].shard != sh || reports[k].region < 0 ||
			    of_a_set_never_taken(&reports[k], reports, nreports))
				continue;
			if (!any || reports[k].epoch > top)
				top = reports[k].epoch;
			any = true;
		}
		if (!any)
			continue;
		rebuild_one(&sets[sh], sh, reports, nreports, top, next_epoch);
		rebuilt++;
	}
	return rebuilt;
}
