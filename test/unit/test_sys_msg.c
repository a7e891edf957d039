/*
 * test_sys_msg.c — system messages of sys(3): recognised under their
 * label, each request classified, and the replies sys:get_state,
 * sys:get_status and the refused requests get.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "distribution/sys_msg.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "unit_helpers.h"

#define NODE "caller@127.0.0.1"

/* {Label, {Pid, Ref}, Request} with Request an atom. */
static char *build(const char *label, const char *request, size_t *len)
{
	ei_x_buff x;
	erlang_pid pid = sn_pid(NODE, 7, 0);
	erlang_ref ref = sn_ref(NODE, 3);
	sn_x_new(&x);
	cr_assert_eq(ei_x_encode_tuple_header(&x, 3) | ei_x_encode_atom(&x, label) | ei_x_encode_tuple_header(&x, 2) |
			     ei_x_encode_pid(&x, &pid) | ei_x_encode_ref(&x, &ref) | ei_x_encode_atom(&x, request),
		     0);
	*len = (size_t)x.index;
	char *copy = sn_dup_exact(x.buff, *len);
	ei_x_free(&x);
	size_t end = 0;
	cr_assert_eq(term_validate(copy, *len, &end), 0);
	return copy;
}

Test(sys_msg, recognised_under_the_system_label_only)
{
	size_t len;
	struct gen_call call;
	char *m = build("system", "get_state", &len);
	cr_assert_eq(gen_call_parse_system(m, len, &call), 1);
	cr_assert_eq(gen_call_parse(m, len, &call), 0, "not a '$gen_call'");
	cr_assert_eq(sys_msg_request(&call), SYS_GET_STATE);
	free(m);
	m = build("$gen_call", "get_state", &len);
	cr_assert_eq(gen_call_parse_system(m, len, &call), 0);
	free(m);
	m = build("system", "get_status", &len);
	cr_assert_eq(gen_call_parse_system(m, len, &call), 1);
	cr_assert_eq(sys_msg_request(&call), SYS_GET_STATUS);
	free(m);
	m = build("system", "suspend", &len);
	cr_assert_eq(gen_call_parse_system(m, len, &call), 1);
	cr_assert_eq(sys_msg_request(&call), SYS_OTHER);
	free(m);
}

/* The reply to `request` for a state that is the atom `st`, decoded back
 * into text with ei_s_print_term. */
static char *reply_text(const char *request)
{
	size_t len;
	struct gen_call call;
	char *m = build("system", request, &len);
	cr_assert_eq(gen_call_parse_system(m, len, &call), 1);
	ei_x_buff state, x;
	sn_x_new(&state);
	cr_assert_eq(ei_x_encode_atom(&state, "st"), 0);
	sn_x_new_with_version(&x);
	erlang_pid self = sn_pid("c1@127.0.0.1", 4, 1);
	cr_assert_eq(sys_msg_encode_reply(&x, &call, &self, "shardnode_region", state.buff, (size_t)state.index), 0);
	size_t end = 0;
	cr_assert_eq(term_validate(x.buff + 1, (size_t)x.index - 1, &end), 0, "one whole term");
	cr_assert_eq(end, (size_t)x.index - 1);
	char *text = NULL;
	int i = 1;
	cr_assert_geq(ei_s_print_term(&text, x.buff, &i), 0);
	ei_x_free(&state);
	ei_x_free(&x);
	free(m);
	return text;
}

Test(sys_msg, replies_as_sys_expects_them)
{
	char *t = reply_text("get_state");
	cr_assert_str_eq(t, "st");
	free(t);
	t = reply_text("get_status");
	cr_assert_str_eq(t, "{status, <c1@127.0.0.1.4.1>, {module, shardnode_region}, "
			    "[[], running, <c1@127.0.0.1.4.1>, [], "
			    "[{header, \"Status for shardnode_region c1@127.0.0.1\"}, "
			    "{data, [{\"Status\", running}, {\"Parent\", <c1@127.0.0.1.4.1>}]}, "
			    "{data, [{\"State\", st}]}]]}");
	free(t);
	t = reply_text("suspend");
	cr_assert_str_eq(t, "{error, {not_supported, suspend}}");
	free(t);
}
