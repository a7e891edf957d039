/*
 * test_member_protocol.c — the protocol marker a member states at the end
 * of its type list: read back for every version, and every atom that is
 * not one left alone (a type keeps its name).
 */
#include <stdint.h>
#include <stdio.h>

#include <criterion/criterion.h>

#include "cluster/member_protocol.h"

Test(member_protocol, a_marker_reads_back_as_its_version)
{
	uint32_t v = 0;
	char atom[64];
	for (uint32_t k = MEMBER_PROTOCOL_OLDEST; k <= 1000; k++) {
		snprintf(atom, sizeof atom, "%s%u", MEMBER_PROTOCOL_MARKER, k);
		cr_assert(member_protocol_parse(atom, &v), "%s", atom);
		cr_assert_eq(v, k);
	}
	cr_assert(member_protocol_parse("$shardnode_protocol_4294967295", &v));
	cr_assert_eq(v, 4294967295u);
}

Test(member_protocol, a_marker_without_a_usable_number_is_the_oldest)
{
	static const char *const odd[] = {"$shardnode_protocol_", "$shardnode_protocol_x", "$shardnode_protocol_2x",
					  "$shardnode_protocol_0", "$shardnode_protocol_4294967296",
					  "$shardnode_protocol_99999999999999999999"};
	for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
		uint32_t v = 7;
		cr_assert(member_protocol_parse(odd[k], &v), "%s", odd[k]);
		cr_assert_eq(v, MEMBER_PROTOCOL_OLDEST, "%s", odd[k]);
	}
}

Test(member_protocol, types_are_no_markers)
{
	static const char *const types[] = {"counter", "kv", "$shardnode_protoco", "shardnode_protocol_2", ""};
	for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
		uint32_t v = 7;
		cr_assert(!member_protocol_parse(types[k], &v), "%s", types[k]);
		cr_assert_eq(v, 7, "left alone");
	}
}
