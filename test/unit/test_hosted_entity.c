/*
 * test_hosted_entity.c — what a C node keeps of an entity written in
 * Erlang (hosted_entity.h): the compact pid of its process, which names a
 * process only on the host's node and expands back to the pid it was
 * kept from; and its state, replaced by a copy or cleared, the old one
 * kept when there is no memory for the new.
 */
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "hosting/hosted_entity.h"
#include "unit_helpers.h"

#define HOST "host@127.0.0.1"

Test(hosted_entity, a_kept_pid_is_the_same_process_only_on_the_host)
{
	erlang_pid p = sn_pid(HOST, 77, 3);
	p.creation = 0x12345678u;
	struct hosted_pid hp;
	hosted_pid_keep(&hp, &p);
	cr_assert(hosted_pid_is(&hp, &p, HOST));
	cr_assert_eq(sizeof hp, 12, "a compact pid is three words");

	/* Another process, another incarnation of the host, another node. */
	erlang_pid other = p;
	other.num = 78;
	cr_assert_not(hosted_pid_is(&hp, &other, HOST));
	other = p;
	other.serial = 4;
	cr_assert_not(hosted_pid_is(&hp, &other, HOST));
	other = p;
	other.creation = 1;
	cr_assert_not(hosted_pid_is(&hp, &other, HOST));
	cr_assert_not(hosted_pid_is(&hp, &p, "other@127.0.0.1"));
}

Test(hosted_entity, a_kept_pid_expands_to_the_pid_it_was_kept_from)
{
	erlang_pid p = sn_pid(HOST, 5, 1), back;
	memset(&back, 0xAB, sizeof back);
	struct hosted_pid hp;
	hosted_pid_keep(&hp, &p);
	hosted_pid_expand(&hp, HOST, &back);
	cr_assert_str_eq(back.node, HOST);
	cr_assert_eq(back.num, p.num);
	cr_assert_eq(back.serial, p.serial);
	cr_assert_eq(back.creation, p.creation);
	cr_assert(hosted_pid_is(&hp, &back, HOST));
}

Test(hosted_entity, the_state_is_a_copy_replaced_or_cleared)
{
	struct hosted_entity he = {0};
	char term[] = {'\x61', 7}; /* 7, without version byte */
	cr_assert_eq(hosted_entity_set_state(&he, term, sizeof term), 0);
	term[1] = 9; /* the entity keeps its own copy */
	cr_assert_eq(he.state_len, 2);
	cr_assert_eq(he.state[1], 7);
	cr_assert_eq(hosted_entity_set_state(&he, term, sizeof term), 0);
	cr_assert_eq(he.state[1], 9);
	cr_assert_eq(hosted_entity_set_state(&he, NULL, 0), 0);
	cr_assert_null(he.state);
	cr_assert_eq(he.state_len, 0);
}
