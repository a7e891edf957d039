/* quorum.c — see quorum.h. */
#include "cluster/quorum.h"

#include <stdlib.h>
#include <string.h>

bool quorum_wins(size_t in, size_t total, bool has_lowest)
{
	if (total == 0)
		return true;
	return 2 * in > total || (2 * in == total && has_lowest);
}

/* Longest lease first. Equal leases run out together; that order is fine. */
static int by_lease_desc(const void *a, const void *b)
{
	const struct quorum_member *x = a, *y = b;
	if (x->lease_until != y->lease_until)
		return x->lease_until > y->lease_until ? -1 : 1;
	return 0;
}

uint64_t quorum_until(const struct quorum_member *members, size_t n, struct quorum_member *scratch)
{
	if (n == 0)
		return UINT64_MAX;
	const char *lowest = members[0].node;
	for (size_t k = 1; k < n; k++)
		if (strcmp(members[k].node, lowest) < 0)
			lowest = members[k].node;
	memcpy(scratch, members, n * sizeof *scratch);
	qsort(scratch, n, sizeof *scratch, by_lease_desc);
	/* The set of members whose lease outlives t only shrinks as t grows,
	 * and a superset of a winning set wins: the answer is the lease of the
	 * last member of the smallest winning prefix. Members tied on that
	 * lease are all in the set until it ends, so look past the prefix for
	 * the lowest node among them. */
	bool has_lowest = false;
	for (size_t j = 0; j < n; j++) {
		has_lowest = has_lowest || strcmp(scratch[j].node, lowest) == 0;
		size_t in = j + 1;
		bool tied_lowest = false;
		while (in < n && scratch[in].lease_until == scratch[j].lease_until) {
			tied_lowest = tied_lowest || strcmp(scratch[in].node, lowest) == 0;
			in++;
		}
		if (quorum_wins(in, n, has_lowest || tied_lowest))
			return scratch[j].lease_until;
	}
	return 0;
}
