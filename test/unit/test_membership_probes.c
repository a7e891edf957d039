/*
 * test_membership_probes.c — whom a member heartbeats in a cluster watched
 * on a ring (membership_internal.h, membership_heartbeats): every member
 * when not sparse; when sparse, those it watches and the grantors, and a
 * grantor besides cfg.watchers more members each tick in turn, so that
 * every member is probed once in every n / watchers ticks and none is
 * left out.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cluster/membership_internal.h"

#define N 23

static void make(struct membership *m, struct member *slots, size_t watchers)
{
	memset(m, 0, sizeof *m);
	memset(slots, 0, N * sizeof *slots);
	m->members = slots;
	m->n = m->cap = N;
	m->cfg.watchers = watchers;
	for (size_t k = 0; k < N; k++)
		snprintf(slots[k].node, sizeof slots[k].node, "m%zu@h", k);
}

Test(membership_probes, not_sparse_every_member_is_heartbeated)
{
	struct member slots[N];
	struct membership m;
	make(&m, slots, 5);
	for (size_t k = 0; k < N; k++)
		cr_assert(membership_heartbeats(&m, &slots[k]));
}

Test(membership_probes, a_member_that_does_not_grant_heartbeats_whom_it_watches_and_the_grantors)
{
	struct member slots[N];
	struct membership m;
	make(&m, slots, 5);
	m.sparse = true;
	slots[3].watched = slots[4].watched = true;
	slots[0].grantor = slots[1].grantor = true;
	for (int tick = 0; tick < 10; tick++) {
		for (size_t k = 0; k < N; k++)
			cr_assert_eq(membership_heartbeats(&m, &slots[k]), k <= 1 || k == 3 || k == 4, "tick %d, %zu", tick, k);
		membership_next_probes(&m);
	}
}

Test(membership_probes, a_grantor_probes_every_member_in_turn)
{
	for (size_t watchers = 1; watchers <= 7; watchers++) {
		struct member slots[N];
		struct membership m;
		make(&m, slots, watchers);
		m.sparse = m.grants = true;
		slots[0].grantor = slots[0].self = true;
		size_t ticks = (N + watchers - 1) / watchers, probed[N] = {0};
		for (size_t tick = 0; tick < ticks; tick++) {
			size_t this_tick = 0;
			for (size_t k = 1; k < N; k++)
				if (membership_heartbeats(&m, &slots[k])) {
					probed[k]++;
					this_tick++;
				}
			cr_assert_leq(this_tick, watchers, "%zu watchers, tick %zu: %zu probed", watchers, tick, this_tick);
			membership_next_probes(&m);
		}
		for (size_t k = 1; k < N; k++)
			cr_assert_geq(probed[k], 1, "%zu watchers: member %zu never probed in %zu ticks", watchers, k, ticks);
	}
}
