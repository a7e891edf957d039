/* sys_msg.c — see sys_msg.h. */
#include "distribution/sys_msg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "etf/term.h"
#include "etf/term_encode.h"

enum sys_request sys_msg_request(const struct gen_call *call)
{
	if (term_is_atom(call->request, 0, "get_state"))
		return SYS_GET_STATE;
	if (term_is_atom(call->request, 0, "get_status"))
		return SYS_GET_STATUS;
	return SYS_OTHER;
}

/* {"Key", Value}: the data items of a status print their keys as strings. */
static int encode_item(ei_x_buff *x, const char *key)
{
	return ei_x_encode_tuple_header(x, 2) | ei_x_encode_string(x, key);
}

/* {status, Pid, {module, Module}, [[], running, Pid, [], Misc]} with Misc
 * as gen_server's format_status writes it: [{header, Text}, {data,
 * [{"Status", running}, {"Parent", Pid}]}, {data, [{"State", State}]}]. */
static int encode_status(ei_x_buff *x, const erlang_pid *self, const char *module, const char *state,
			 size_t state_len)
{
	char header[MAXATOMLEN_UTF8 + 64];
	snprintf(header, sizeof header, "Status for %s %s", module, self->node);
	int rc = ei_x_encode_tuple_header(x, 4) | term_x_encode_atom(x, "status") | ei_x_encode_pid(x, self) |
		 ei_x_encode_tuple_header(x, 2) | term_x_encode_atom(x, "module") | term_x_encode_atom(x, module);
	rc |= ei_x_encode_list_header(x, 5) | ei_x_encode_empty_list(x) | term_x_encode_atom(x, "running") |
	      ei_x_encode_pid(x, self) | ei_x_encode_empty_list(x);
	rc |= ei_x_encode_list_header(x, 3);
	rc |= ei_x_encode_tuple_header(x, 2) | term_x_encode_atom(x, "header") | ei_x_encode_string(x, header);
	rc |= ei_x_encode_tuple_header(x, 2) | term_x_encode_atom(x, "data") | ei_x_encode_list_header(x, 2) |
	      encode_item(x, "Status") | term_x_encode_atom(x, "running") | encode_item(x, "Parent") |
	      ei_x_encode_pid(x, self) | ei_x_encode_empty_list(x);
	rc |= ei_x_encode_tuple_header(x, 2) | term_x_encode_atom(x, "data") | ei_x_encode_list_header(x, 1) |
	      encode_item(x, "State");
	if (rc == 0)
		rc = term_x_append_raw(x, state, state_len);
	return rc | ei_x_encode_empty_list(x) | ei_x_encode_empty_list(x) | ei_x_encode_empty_list(x);
}

int sys_msg_encode_reply(ei_x_buff *x, const struct gen_call *call, const erlang_pid *self, const char *module,
			 const char *state, size_t state_len)
{
	switch (sys_msg_request(call)) {
	case SYS_GET_STATE:
		return term_x_append_raw(x, state, state_len);
	case SYS_GET_STATUS:
		return encode_status(x, self, module, state, state_len);
	case SYS_OTHER:
		break;
	}
	return ei_x_encode_tuple_header(x, 2) | term_x_encode_atom(x, "error") | ei_x_encode_tuple_header(x, 2) |
	       term_x_encode_atom(x, "not_supported") | term_x_append_raw(x, call->request, call->request_len);
}

int sys_msg_answer(const struct outlet *out, const erlang_pid *self, const struct gen_call *call, const char *module,
		   ei_x_buff *state, int state_rc)
{
	ei_x_buff x;
	if (term_x_whole_or_enomem(state, 0, state_rc) != 0 || ei_x_new(&x) < 0)
		return -ENOMEM;
	int rc = term_x_whole_or_enomem(&x, 0,
					sys_msg_encode_reply(&x, call, self, module, state->buff, (size_t)state->index));
	if (rc == 0)
		rc = outlet_reply_to(out, self, &call->from, call->tag, call->tag_len, x.buff, (size_t)x.index);
	ei_x_free(&x);
	return rc;
}
