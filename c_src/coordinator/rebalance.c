/* rebalance.c — see rebalance.h. */
#include "coordinator/rebalance.h"

#include <errno.h>
#include <stdlib.h>

/* Shards per region, a moving shard at the region it moves to. Returns a
 * caller-freed array of s->nregions counts, or NULL. */
static uint32_t *counts_of(const struct rebalance_state *s)
{
	uint32_t *counts = calloc(s->nregions ? s->nregions : 1, sizeof *counts);
	if (counts == NULL)
		return NULL;
	for (uint32_t sh = 0; sh < s->nshards; sh++)
		if (s->home[sh] >= 0)
			counts[s->moving_to[sh] >= 0 ? s->moving_to[sh] : s->home[sh]]++;
	return counts;
}

int rebalance_drain(const struct rebalance_state *s, struct rebalance_move *out, size_t *nout)
{
	*nout = 0;
	uint32_t *counts = counts_of(s);
	if (counts == NULL)
		return -ENOMEM;
	for (uint32_t sh = 0; sh < s->nshards; sh++) {
		if (s->home[sh] < 0 || s->moving_to[sh] >= 0 || !s->drains[s->home[sh]])
			continue;
		size_t least = SIZE_MAX;
		for (size_t k = 0; k < s->nregions; k++)
			if (s->takes[k] && (least == SIZE_MAX || counts[k] < counts[least]))
				least = k;
		if (least == SIZE_MAX)
			break; /* nowhere to go */
		size_t from = (size_t)s->home[sh];
		out[(*nout)++] = (struct rebalance_move){sh, from, least};
		counts[from]--;
		counts[least]++;
	}
	free(counts);
	return 0;
}

int rebalance_even_out(const struct rebalance_state *s, uint32_t threshold, uint32_t room,
		       struct rebalance_move *out, size_t *nout)
{
	*nout = 0;
	uint32_t *counts = counts_of(s);
	/* Per region, the first shard not yet looked at for a move from it:
	 * each move takes the lowest candidate, so those below are taken. */
	uint32_t *next = calloc(s->nregions ? s->nregions : 1, sizeof *next);
	if (counts == NULL || next == NULL) {
		free(counts);
		free(next);
		return -ENOMEM;
	}
	while (*nout < room) {
		size_t most = SIZE_MAX, least = SIZE_MAX;
		for (size_t k = 0; k < s->nregions; k++) {
			if (!s->takes[k])
				continue; /* rebalance_drain empties those */
			if (most == SIZE_MAX || counts[k] > counts[most])
				most = k;
			if (least == SIZE_MAX || counts[k] < counts[least])
				least = k;
		}
		if (most == SIZE_MAX || counts[most] - counts[least] <= threshold)
			break;
		uint32_t pick = UINT32_MAX;
		for (uint32_t sh = next[most]; sh < s->nshards && pick == UINT32_MAX; sh++)
			if (s->home[sh] == (int32_t)most && s->moving_to[sh] < 0)
				pick = sh;
		if (pick == UINT32_MAX)
			break;
		next[most] = pick + 1;
		out[(*nout)++] = (struct rebalance_move){pick, most, least};
		counts[most]--;
		counts[least]++;
	}
	free(counts);
	free(next);
	return 0;
}

bool rebalance_overdue(uint64_t since, uint64_t now, uint32_t timeout_ms)
{
	return now - since > timeout_ms;
}
