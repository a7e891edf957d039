/* replica_acks.c — see replica_acks.h. */
#include "sharding/replica_acks.h"

#include <string.h>

void replica_acks_init(struct replica_acks *a, const struct replica_set *set, uint64_t from)
{
	memset(a, 0, sizeof *a);
	for (size_t k = 0; k < REPLICA_SETS_MAX; k++)
		a->region[k] = -1;
	a->epoch = set->epoch;
	for (uint8_t k = 0; k < set->nreplicas && k < REPLICA_SETS_MAX; k++) {
		a->region[a->n] = set->replica[k];
		a->counts[a->n] = set->complete[k];
		a->acked[a->n++] = from;
	}
}

bool replica_acks_on_ack(struct replica_acks *a, int32_t region, uint64_t epoch, uint64_t upto)
{
	if (epoch != a->epoch)
		return false; /* an older set's, or one this home has not heard of */
	for (uint8_t k = 0; k < a->n; k++) {
		if (a->region[k] != region)
			continue;
		if (upto <= a->acked[k])
			return false;
		a->acked[k] = upto;
		return true;
	}
	return false;
}

/* The slowest counting replica's point; UINT64_MAX with none. */
static uint64_t slowest(const struct replica_acks *a)
{
	uint64_t low = UINT64_MAX;
	for (uint8_t k = 0; k < a->n; k++)
		if (a->counts[k] && a->acked[k] < low)
			low = a->acked[k];
	return low;
}

uint64_t replica_acks_durable_upto(const struct replica_acks *a, uint64_t home_committed)
{
	uint64_t low = slowest(a);
	return low < home_committed ? low : home_committed;
}

bool replica_acks_may_send(const struct replica_acks *a, uint64_t next, uint64_t window)
{
	uint64_t low = slowest(a);
	return low == UINT64_MAX || next <= low || next - low <= window;
}
