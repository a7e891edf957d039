/* downing.c — see downing.h. */
#include "cluster/downing.h"

#include <stdlib.h>
#include <string.h>

#include "cluster/quorum.h"

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

int downing_leader(const struct downing_member *members, size_t n, const struct downing_edge *edges,
		   size_t nedges)
{
	int best = -1;
	for (size_t k = 0; k < n; k++) {
		bool subject = false;
		for (size_t e = 0; e < nedges && !subject; e++)
			subject = strcmp(edges[e].subject, members[k].node) == 0 &&
				  index_of(members, n, edges[e].observer) >= 0;
		if (!subject && (best < 0 || older(&members[k], &members[best])))
			best = (int)k;
	}
	return best;
}

/* True if the view has the record observer -> subject. */
static bool has_edge(const struct downing_edge *edges, size_t nedges, const char *observer, const char *subject)
{
	for (size_t e = 0; e < nedges; e++)
		if (strcmp(edges[e].observer, observer) == 0 && strcmp(edges[e].subject, subject) == 0)
			return true;
	return false;
}

enum downing_verdict downing_decide(const struct downing_member *members, size_t n, size_t decider,
				    const struct downing_edge *edges, size_t nedges, size_t *out, size_t *nout)
{
	*nout = 0;
	if (n == 0 || decider >= n)
		return DOWNING_NONE;
	/* unheard[k]: decider cannot hear member k; gone[k]: k is to be downed. */
	bool *unheard = calloc(n, sizeof *unheard), *gone = calloc(n, sizeof *gone);
	size_t *count = calloc(n, sizeof *count), *reports = calloc(n, sizeof *reports);
	enum downing_verdict v = DOWNING_NONE;
	if (unheard == NULL || gone == NULL || count == NULL || reports == NULL)
		goto done; /* the next tick decides */
	const char *me = members[decider].node;
	size_t nunheard = 0;
	for (size_t k = 0; k < n; k++) {
		unheard[k] = k != decider && has_edge(edges, nedges, me, members[k].node);
		nunheard += unheard[k];
	}
	/* 1. Keep-majority over decider's own view. */
	size_t lowest = 0;
	for (size_t k = 1; k < n; k++)
		if (strcmp(members[k].node, members[lowest].node) < 0)
			lowest = k;
	if (nunheard > 0 && !quorum_wins(n - nunheard, n, !unheard[lowest])) {
		v = DOWNING_SELF;
		goto done;
	}
	/* 2. Cut off from decider's whole side: nobody decider hears hears them. */
	for (size_t s = 0; s < n; s++) {
		if (!unheard[s])
			continue;
		bool cut_off = true;
		for (size_t k = 0; k < n && cut_off; k++)
			if (k != decider && !unheard[k] && k != s)
				cut_off = has_edge(edges, nedges, members[k].node, members[s].node);
		if (cut_off) {
			gone[s] = true;
			out[(*nout)++] = s;
		}
	}
	/* 3. Indirect faults, on the leader only: the most named first. */
	if (downing_leader(members, n, edges, nedges) != (int)decider)
		goto done;
	for (;;) {
		memset(count, 0, n * sizeof *count);
		memset(reports, 0, n * sizeof *reports);
		for (size_t e = 0; e < nedges; e++) {
			int o = index_of(members, n, edges[e].observer), s = index_of(members, n, edges[e].subject);
			if (o < 0 || s < 0 || o == s || gone[o] || gone[s])
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
			if (count[k] == 0)
				continue;
			if (!have || count[k] > count[pick] ||
			    (count[k] == count[pick] && reports[k] > reports[pick]) ||
			    (count[k] == count[pick] && reports[k] == reports[pick] &&
			     older(&members[pick], &members[k]))) {
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
	free(unheard);
	free(gone);
	free(count);
	free(reports);
	if (v == DOWNING_NONE && *nout > 0)
		v = DOWNING_OTHERS;
	return v;
}
