/*
 * sys_msg.h — the system messages of sys(3), as a process of this node
 * answers them.
 *
 * sys:get_state(Name) and sys:get_status(Name) send {system, {Pid, Tag},
 * get_state | get_status} (gen:call/3 under the label `system'), and return
 * the Reply of {Tag, Reply} (sys:get_state raises {error, Reason} as an
 * error). A process of this node runs no sys loop, so it cannot be
 * suspended, traced or given a new state; what it can do is:
 *   - get_state: its statistics and settings, as a map the process builds;
 *   - get_status: the same inside the shape a gen_server's status has,
 *     {status, Pid, {module, Module}, [PDict, SysState, Parent, Dbg, Misc]},
 *     so that tools that print statuses (observer, sys:get_status/1 in a
 *     shell) show it;
 *   - anything else (suspend, resume, replace_state, change_code,
 *     statistics, trace, log, ...): {error, {not_supported, Request}} at
 *     once, never a wait for the caller's timeout.
 */
#ifndef SN_SYS_MSG_H
#define SN_SYS_MSG_H

#include <stddef.h>

#include <ei.h>

#include "distribution/dist_node.h"
#include "protocol/gen_call.h"
#include "protocol/outlet.h"

enum sys_request { SYS_GET_STATE, SYS_GET_STATUS, SYS_OTHER };

/* What a parsed system message (gen_call_parse_system) asks. */
enum sys_request sys_msg_request(const struct gen_call *call);

/* Encodes the reply (no version byte) to the system message `call` into x
 * (initialised, appended to), for a process `self` described as `module`
 * (an atom's text) whose state is `state` (an encoded term without version
 * byte, borrowed; unused for SYS_OTHER). Returns 0, or < 0 when an encoder
 * failed (x then holds a partial term: the caller drops it). */
int sys_msg_encode_reply(ei_x_buff *x, const struct gen_call *call, const erlang_pid *self, const char *module,
			 const char *state, size_t state_len);

/* Answers the system message `call` for `self`, a proc that sends
 * through `out` (protocol/outlet.h; borrowed for the call): its state is
 * the term in `state` (initialised by the caller, who frees it), the
 * results of its encoders OR-ed into `state_rc` (term_x_whole_or_enomem
 * turns a failure into {error, enomem}). Returns as the outlet's
 * reply_to, or -ENOMEM when no reply could be built. */
int sys_msg_answer(const struct outlet *out, const erlang_pid *self, const struct gen_call *call, const char *module,
		   ei_x_buff *state, int state_rc);

#endif
