/* downing.c — see downing.h. */
#include "cluster/downing.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/quorum.h"
#include "cluster/watch_ring.h"

static int index_of(const struct downing_member *members, size_t n, const char *node)
{
	for (size_t k = 0; k < n; k++)
		if (strcmp(members[k].node, node) == 0)
			return (int)k;
	return -1;
}

/* a is older than b: the lower up-number, then the lower name. */
static bool older(const struct downing_member *a, const struct downing_member *b)
{
	if (a->up_number != b->up_number)
		return a->up_number < b->up_number;
	return strcmp(a->node, b->node) < 0;
}

/* The view by member indexes, built once per decision so that each step
 * costs the number of records, not that times the members: the records
 * between members as observer * n + subject, sorted (a member's record
 * of itself too: it makes it a subject, which nothing else reads into);
 * ring places. */
struct indexed_view {
	size_t n;
	size_t *pair;
	size_t npairs;
	struct watch_ring ring;
};

static int by_value(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

/* Returns 0, or -ENOMEM with everything freed. */
static int index_view(struct indexed_view *v, const struct downing_member *members, size_t n,
		      const struct downing_edge *edges, size_t nedges)
{
	v->n = n;
	v->npairs = 0;
	v->pair = malloc((nedges ? nedges : 1) * sizeof *v->pair);
	const char **names = calloc(n, sizeof *names);
	if (v->pair == NULL || names == NULL) {
		free(v->pair);
		free(names);
		return -ENOMEM;
	}
	for (size_t k = 0; k < n; k++)
		names[k] = members[k].node;
	int rc = watch_ring_build(&v->ring, names, n);
	free(names);
	if (rc != 0) {
		free(v->pair);
		return rc;
	}
	for (size_t e = 0; e < nedges; e++) {
		int o = index_of(members, n, edges[e].observer), s = index_of(members, n, edges[e].subject);
		if (o >= 0 && s >= 0)
			v->pair[v->npairs++] = (size_t)o * n + (size_t)s;
	}
	qsort(v->pair, v->npairs, sizeof *v->pair, by_value);
	size_t kept = 0; /* a record given twice counts once */
	for (size_t p = 0; p < v->npairs; p++)
		if (kept == 0 || v->pair[p] != v->pair[kept - 1])
			v->pair[kept++] = v->pair[p];
	v->npairs = kept;
	return 0;
}

static void free_view(struct indexed_view *v)
{
	free(v->pair);
	watch_ring_free(&v->ring);
}

static size_t observer_of(const struct indexed_view *v, size_t p) { return v->pair[p] / v->n; }
static size_t subject_of(const struct indexed_view *v, size_t p) { return v->pair[p] % v->n; }

/* True if the view has the record o -> s. */
static bool has_edge(const struct indexed_view *v, size_t o, size_t s)
{
	size_t key = o * v->n + s;
	return bsearch(&key, v->pair, v->npairs, sizeof key, by_value) != NULL;
}

/* unheard[k]: whether decider's side cannot hear member k. Those decider
 * itself reports; and, where decider does not watch k (watch_ring.h), those a
 * member reports that is not doubted: a member whose own watchers report
 * it is likely the one whose network fails (a deaf member reports every
 * member it watches, and further ones as they fall silent to it), and
 * believing it would make a healthy side count itself the minority.
 * `doubted` is scratch of n. Returns how many are unheard. */
static size_t side_unheard(const struct indexed_view *v, size_t decider, size_t watchers, bool *unheard,
			   bool *doubted)
{
	bool everyone = watch_ring_everyone(v->n, watchers);
	memset(doubted, 0, v->n * sizeof *doubted);
	memset(unheard, 0, v->n * sizeof *unheard);
	for (size_t p = 0; p < v->npairs; p++)
		if (watch_ring_watches(&v->ring, observer_of(v, p), subject_of(v, p), watchers))
			doubted[subject_of(v, p)] = true;
	for (size_t p = 0; p < v->npairs; p++) {
		size_t o = observer_of(v, p), s = subject_of(v, p);
		if (s == decider || o == s)
			continue;
		if (o == decider)
			unheard[s] = true;
		else if (!everyone && !doubted[o] && !watch_ring_watches(&v->ring, decider, s, watchers))
			unheard[s] = true;
	}
	size_t count = 0;
	for (size_t k = 0; k < v->n; k++)
		count += unheard[k];
	return count;
}

/* downing_leader on the indexed view. */
static size_t leader_of(const struct indexed_view *v, const struct downing_member *members, bool *reported, bool *found)
{
	memset(reported, 0, v->n * sizeof *reported);
	for (size_t p = 0; p < v->npairs; p++)
		reported[subject_of(v, p)] = true;
	size_t best = 0;
	*found = false;
	for (size_t k = 0; k < v->n; k++) {
		if (!reported[k] && (!*found || older(&members[k], &members[best]))) {
			best = k;
			*found = true;
		}
	}
	return best;
}

int downing_leader(const struct downing_member *members, size_t n, const struct downing_edge *edges,
		   size_t nedges)
{
	struct indexed_view view;
	bool *reported = calloc(n ? n : 1, sizeof *reported);
	if (reported == NULL || index_view(&view, members, n, edges, nedges) != 0) {
		free(reported);
		return -1; /* out of memory: nobody leads this tick */
	}
	bool found;
	size_t leader = leader_of(&view, members, reported, &found);
	free_view(&view);
	free(reported);
	return found ? (int)leader : -1;
}

/* Step 3's order (downing.h): a member named in more of the records left,
 * then one that reports more, then one named more often lately, then the
 * younger, is more likely the one at fault than b. */
static bool more_likely_at_fault(const struct downing_member *a, size_t a_count, size_t a_reports,
				 const struct downing_member *b, size_t b_count, size_t b_reports)
{
	if (a_count != b_count)
		return a_count > b_count;
	if (a_reports != b_reports)
		return a_reports > b_reports;
	if (a->times_named != b->times_named)
		return a->times_named > b->times_named;
	return older(b, a);
}

enum downing_verdict downing_decide(const struct downing_member *members, size_t n, size_t decider, size_t watchers,
				    const struct downing_edge *edges, size_t nedges, size_t *out, size_t *nout)
{
	*nout = 0;
	if (n == 0 || decider >= n)
		return DOWNING_NONE;
	/* unheard[k]: decider's side cannot hear member k; gone[k]: k is to be downed. */
	bool *unheard = calloc(n, sizeof *unheard), *gone = calloc(n, sizeof *gone), *scratch = calloc(n, sizeof *scratch);
	size_t *count = calloc(n, sizeof *count), *reports = calloc(n, sizeof *reports);
	struct indexed_view view = {0};
	bool indexed = false;
	enum downing_verdict v = DOWNING_NONE;
	if (unheard == NULL || gone == NULL || scratch == NULL || count == NULL || reports == NULL)
		goto done; /* the next tick decides */
	if (index_view(&view, members, n, edges, nedges) != 0)
		goto done;
	indexed = true;
	bool everyone = watch_ring_everyone(n, watchers);
	size_t nunheard = side_unheard(&view, decider, watchers, unheard, scratch);
	/* 1. Keep-majority over decider's side's view. */
	size_t lowest = 0;
	for (size_t k = 1; k < n; k++)
		if (strcmp(members[k].node, members[lowest].node) < 0)
			lowest = k;
	if (nunheard > 0 && !quorum_wins(n - nunheard, n, !unheard[lowest])) {
		v = DOWNING_SELF;
		goto done;
	}
	/* 2. Cut off from decider's whole side: nobody of the side that is
	 * meant to hear them (watch_ring.h) hears them. */
	for (size_t s = 0; s < n; s++) {
		if (!unheard[s])
			continue;
		bool cut_off = true;
		for (size_t k = 0; k < n && cut_off; k++)
			if (k != decider && !unheard[k] && k != s &&
			    (everyone || watch_ring_watches(&view.ring, k, s, watchers)))
				cut_off = has_edge(&view, k, s);
		if (cut_off) {
			gone[s] = true;
			out[(*nout)++] = s;
		}
	}
	/* 3. Indirect faults, on the leader only: the most named first. */
	bool found;
	if (leader_of(&view, members, scratch, &found) != decider || !found)
		goto done;
	for (;;) {
		memset(count, 0, n * sizeof *count);
		memset(reports, 0, n * sizeof *reports);
		for (size_t p = 0; p < view.npairs; p++) {
			size_t o = observer_of(&view, p), s = subject_of(&view, p);
			if (o == s || gone[o] || gone[s])
				continue;
			count[o]++;
			count[s]++;
			reports[o]++;
		}
		/* The leader is nobody's subject, but may be an observer: a
		 * leader whose own network drops what comes in cannot hear
		 * members the others hear, and is then the one that reports
		 * more — it goes itself, never the member it cannot hear. */
		size_t pick = 0;
		bool have = false;
		for (size_t k = 0; k < n; k++) {
			if (count[k] > 0 && (!have || more_likely_at_fault(&members[k], count[k], reports[k],
									    &members[pick], count[pick], reports[pick]))) {
				pick = k;
				have = true;
			}
		}
		if (!have)
			break;
		if (pick == decider) {
			*nout = 0; /* the next leader decides on the rest */
			v = DOWNING_SELF;
			goto done;
		}
		gone[pick] = true;
		out[(*nout)++] = pick;
	}
done:
	if (indexed)
		free_view(&view);
	free(unheard);
	free(scratch);
	free(gone);
	free(count);
	free(reports);
	if (v == DOWNING_NONE && *nout > 0)
		v = DOWNING_OTHERS;
	return v;
}
