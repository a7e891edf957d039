/*
 * test_membership_index.c — the member list's index by name
 * (membership_internal.h, membership_find): every entry found by its name
 * however many were added and whatever the index grew through, no entry
 * for a name not listed, and the same answers once the index is gone (out
 * of memory) and look-ups compare every name.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/membership_internal.h"

/* Appends `node` as membership.c's add does. */
static void append(struct membership *m, const char *node)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 4;
		m->members = realloc(m->members, m->cap * sizeof *m->members);
		cr_assert_not_null(m->members);
	}
	struct member *e = &m->members[m->n++];
	memset(e, 0, sizeof *e);
	snprintf(e->node, sizeof e->node, "%s", node);
	membership_index_added(m);
}

static void name(char *out, size_t cap, size_t k) { snprintf(out, cap, "m%zu@10.0.%zu.%zu", k, k / 250, k % 250); }

static void assert_all_found(const struct membership *m, size_t n)
{
	char node[NODE_NAME_BUF];
	for (size_t k = 0; k < n; k++) {
		name(node, sizeof node, k);
		const struct member *e = membership_find(m, node);
		cr_assert_not_null(e, "%s", node);
		cr_assert_eq(e, &m->members[k], "%s", node);
	}
	cr_assert_null(membership_find(m, "m999999@10.0.0.1"));
	cr_assert_null(membership_find(m, ""));
}

Test(membership_index, every_entry_is_found_by_its_name_as_the_index_grows)
{
	struct membership m;
	memset(&m, 0, sizeof m);
	char node[NODE_NAME_BUF];
	for (size_t k = 0; k < 600; k++) {
		name(node, sizeof node, k);
		append(&m, node);
		cr_assert_not_null(m.index);
		cr_assert_geq(m.index_cap, 2 * m.n);
		if (k % 37 == 0 || k < 20)
			assert_all_found(&m, k + 1);
	}
	assert_all_found(&m, 600);
	/* Without the index (memory ran out), look-ups compare every name. */
	free(m.index);
	m.index = NULL;
	assert_all_found(&m, 600);
	/* The next entry added builds it again. */
	append(&m, "late@127.0.0.1");
	cr_assert_not_null(m.index);
	assert_all_found(&m, 600);
	cr_assert_eq(membership_find(&m, "late@127.0.0.1"), &m.members[600]);
	free(m.index);
	free(m.members);
}
