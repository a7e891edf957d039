/* admin.c — see admin.h. */
#include "app/admin.h"
#include "app/version.h"
#include "cluster/member_protocol.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/gen_call.h"
#include "distribution/sys_msg.h"
#include "cluster/membership.h"
#include "etf/term.h"
#include "etf/term_encode.h"

struct admin {
	struct admin_config cfg;
	/* Messages to net_kernel or shardnode that are no call they know
	 * (drop_log.h): counted, the first of each reason logged. */
	struct drop_log drops;
	struct evloop_timer drops_timer;
	struct proc *net_kernel;
	struct proc *shardnode;
	struct membership *membership;
};

void admin_set_membership(struct admin *a, struct membership *m) { a->membership = m; }

const erlang_pid *admin_pid(const struct admin *a) { return &a->shardnode->pid; }

const struct drop_log *admin_drops(const struct admin *a) { return &a->drops; }

/* The drops' summary lines, each interval. */
static void on_drops_timer(struct evloop *loop, void *arg)
{
	struct admin *a = arg;
	drop_log_tick(&a->drops, evloop_now_ms(loop));
	evloop_timer_start(loop, &a->drops_timer, DROP_LOG_INTERVAL_MS);
}

/* Sends `reply` (encoded without version byte) and frees it. */
/* Sends the reply built in `reply` from its start, the encoders' results
 * OR-ed into `encoded` (term_x_whole_or_enomem), and frees it. */
static void reply_and_free(struct admin *a, const struct gen_call *call, ei_x_buff *reply, int encoded)
{
	if (term_x_whole_or_enomem(reply, 0, encoded) < 0) {
		log_warn(a->cfg.log, "reply to a call not sent: out of memory");
		ei_x_free(reply);
		return;
	}
	int rc = dist_node_reply(a->cfg.node, &a->shardnode->pid, call, reply->buff, (size_t)reply->index);
	if (rc)
		log_warn(a->cfg.log, "reply to a call could not be sent: %s", strerror(-rc));
	ei_x_free(reply);
}

/* Parses the common part: returns 1 with *call set for a '$gen_call', else 0. */
static int as_call(struct admin *a, const struct proc_msg *m, struct gen_call *call, const char *who)
{
	int rc = gen_call_parse(m->term, m->len, call);
	if (rc == 1)
		return 1;
	char what[96];
	snprintf(what, sizeof what, "%s: a message that is %s", who,
		 rc == 0 ? "no '$gen_call'" : "a '$gen_call' whose From is not {Pid, Tag}");
	drop_log_drop(&a->drops, rc == 0 ? "not_a_call" : "malformed_call", what, m->term);
	return 0;
}

static void net_kernel_handle(void *ctx, struct proc *self, const struct proc_msg *m)
{
	(void)self;
	struct admin *a = ctx;
	struct gen_call call;
	if (!as_call(a, m, &call, "net_kernel"))
		return;
	ei_x_buff reply;
	if (ei_x_new(&reply) < 0)
		return;
	size_t i = 0;
	const char *req = call.request;
	int rc;
	if (term_get_tuple(req, &i) == 2 && term_is_atom(req, i, "is_auth"))
		rc = term_x_encode_atom(&reply, "yes");
	else
		rc = term_x_error_tagged_raw(&reply, "bad_request", call.request, call.request_len);
	reply_and_free(a, &call, &reply, rc);
}

static bool hosts_type(const struct admin *a, const char *type)
{
	if (a->cfg.proxy_only)
		return false;
	for (size_t k = 0; k < a->cfg.ntypes; k++)
		if (strcmp(a->cfg.types[k], type) == 0)
			return true;
	return false;
}

/* {ok, [#{node => Node, status => up}]}. Returns 0 or -ENOMEM. */
static int encode_members(struct admin *a, ei_x_buff *x)
{
	if (a->membership != NULL)
		return membership_encode_members(a->membership, x);
	if (ei_x_encode_tuple_header(x, 2) < 0 || term_x_encode_atom(x, "ok") < 0 || ei_x_encode_list_header(x, 1) < 0 ||
	    ei_x_encode_map_header(x, 2) < 0 || term_x_encode_atom(x, "node") < 0 ||
	    term_x_encode_atom(x, dist_node_name(a->cfg.node)) < 0 || term_x_encode_atom(x, "status") < 0 ||
	    term_x_encode_atom(x, "up") < 0 || ei_x_encode_empty_list(x) < 0)
		return -ENOMEM;
	return 0;
}

/* {ok, [Type]}. Returns 0 or < 0 (an encoder failed). */
static int encode_shard_types(struct admin *a, ei_x_buff *x)
{
	int rc = ei_x_encode_tuple_header(x, 2) | term_x_encode_atom(x, "ok");
	if (a->cfg.ntypes > 0)
		rc |= ei_x_encode_list_header(x, (long)a->cfg.ntypes);
	for (size_t k = 0; k < a->cfg.ntypes; k++)
		rc |= term_x_encode_atom(x, a->cfg.types[k]);
	return rc | ei_x_encode_empty_list(x);
}

/* Where singleton `name` runs, the oldest up member hosting its type:
 * {ok, Node}, {error, no_instance} while there is none, {error,
 * not_a_singleton} for a name that is none. Returns 0 or < 0 (an encoder
 * failed). */
static int encode_singleton_home(struct admin *a, const char *name, ei_x_buff *x)
{
	for (size_t k = 0; k < a->cfg.nsingletons; k++) {
		if (strcmp(a->cfg.singleton_names[k], name) != 0)
			continue;
		const char *type = a->cfg.singleton_types[k];
		const char *oldest = a->membership ? membership_oldest_with(a->membership, type)
						   : hosts_type(a, type) ? dist_node_name(a->cfg.node) : NULL;
		if (oldest == NULL)
			return term_x_error_atom(x, "no_instance");
		return ei_x_encode_tuple_header(x, 2) | term_x_encode_atom(x, "ok") | term_x_encode_atom(x, oldest);
	}
	return term_x_error_atom(x, "not_a_singleton");
}

/* {set_log_level, Level}: `ok`, and a record at the new level's first
 * line saying so; an atom that is no level gets {error, {bad_log_level,
 * Level}}. Returns 0 or < 0 (an encoder failed). */
static int set_log_level(struct admin *a, const char *name, ei_x_buff *x)
{
	enum log_level level;
	if (a->cfg.levels == NULL || log_level_parse(name, &level) != 0 || strcmp(name, "warn") == 0)
		return ei_x_encode_tuple_header(x, 2) | term_x_encode_atom(x, "error") | ei_x_encode_tuple_header(x, 2) |
		       term_x_encode_atom(x, "bad_log_level") | term_x_encode_atom(x, name);
	enum log_level was = log_get_level(a->cfg.levels);
	log_set_level(a->cfg.levels, level);
	/* Said at info, or at the new level when that is higher, so that it
	 * shows in the log that follows. */
	log_at(a->cfg.levels, level > LOG_INFO ? level : LOG_INFO, "log level %s (was %s)", log_level_name(level),
	       log_level_name(was));
	return term_x_encode_atom(x, "ok");
}

/* Appends the value V of an encoded {ok, V} in `from` to x. */
static int append_ok_value(ei_x_buff *x, const ei_x_buff *from)
{
	size_t i = 0;
	if (term_get_tuple(from->buff, &i) != 2)
		return -EPROTO;
	term_skip(from->buff, &i);
	return term_x_append_raw(x, from->buff + i, (size_t)from->index - i);
}

/* sys:get_state's answer (sys_msg.h): #{version, protocols, node,
 * members, shard_types, singletons, proxy_only, log_level,
 * max_message_bytes}; protocols
 * is #{Node => Protocol} (member_protocol.h). Returns 0 or < 0. */
static int encode_sys_state(struct admin *a, ei_x_buff *x)
{
	ei_x_buff members, types;
	if (ei_x_new(&members) < 0)
		return -ENOMEM;
	if (ei_x_new(&types) < 0) {
		ei_x_free(&members);
		return -ENOMEM;
	}
	int rc = encode_members(a, &members) | encode_shard_types(a, &types);
	rc |= ei_x_encode_map_header(x, 9) | term_x_encode_atom(x, "version") | ei_x_encode_string(x, SHARDNODE_VERSION) |
	      term_x_encode_atom(x, "protocols");
	if (a->membership != NULL)
		rc |= membership_encode_protocols(a->membership, x);
	else
		rc |= ei_x_encode_map_header(x, 1) | term_x_encode_atom(x, dist_node_name(a->cfg.node)) |
		      term_x_encode_uint(x, MEMBER_PROTOCOL);
	rc |= term_x_encode_atom(x, "node") |
	      term_x_encode_atom(x, dist_node_name(a->cfg.node)) | term_x_encode_atom(x, "members");
	if (rc == 0)
		rc = append_ok_value(x, &members);
	rc |= term_x_encode_atom(x, "shard_types");
	if (rc == 0)
		rc = append_ok_value(x, &types);
	rc |= term_x_encode_atom(x, "singletons");
	if (a->cfg.nsingletons > 0)
		rc |= ei_x_encode_list_header(x, (long)a->cfg.nsingletons);
	for (size_t k = 0; k < a->cfg.nsingletons; k++)
		rc |= ei_x_encode_tuple_header(x, 2) | term_x_encode_atom(x, a->cfg.singleton_names[k]) |
		      term_x_encode_atom(x, a->cfg.singleton_types[k]);
	rc |= ei_x_encode_empty_list(x) | term_x_encode_atom(x, "proxy_only") | ei_x_encode_boolean(x, a->cfg.proxy_only) |
	      term_x_encode_atom(x, "log_level") | term_x_encode_atom(x, log_level_name(log_get_level(a->cfg.log))) |
	      term_x_encode_atom(x, "max_message_bytes") | term_x_encode_uint(x, a->cfg.max_message_bytes);
	ei_x_free(&members);
	ei_x_free(&types);
	return rc;
}

/* sys:get_state/get_status and the other system messages, at once. */
static void on_system(struct admin *a, const struct gen_call *call)
{
	ei_x_buff state;
	if (ei_x_new(&state) < 0)
		return;
	int rc = encode_sys_state(a, &state);
	struct outlet out = dist_node_outlet(a->cfg.node);
	rc = sys_msg_answer(&out, &a->shardnode->pid, call, "shardnode_admin", &state, rc);
	if (rc)
		log_warn(a->cfg.log, "reply to a system message could not be sent: %s", strerror(-rc));
	ei_x_free(&state);
}

static void shardnode_handle(void *ctx, struct proc *self, const struct proc_msg *m)
{
	(void)self;
	struct admin *a = ctx;
	struct gen_call call;
	if (a->membership != NULL && membership_handle(a->membership, m->term, m->len, m->via, m->from != NULL ? m->from->creation : 0) == 1)
		return;
	if (gen_call_parse_system(m->term, m->len, &call) == 1) {
		on_system(a, &call);
		return;
	}
	if (!as_call(a, m, &call, "shardnode"))
		return;
	ei_x_buff reply;
	if (ei_x_new(&reply) < 0)
		return;
	const char *req = call.request;
	size_t i = 0;
	char atom[TERM_ATOM_BUF];
	bool leave = false;
	int rc = 0;
	long arity = term_get_tuple(req, &i);
	if (arity < 0 && term_get_atom(req, &i, atom) == 0) {
		if (strcmp(atom, "members") == 0) {
			rc = encode_members(a, &reply);
		} else if (strcmp(atom, "shard_types") == 0) {
			rc = encode_shard_types(a, &reply);
		} else if (strcmp(atom, "reachability") == 0) {
			if (a->membership != NULL)
				rc = membership_encode_reachability(a->membership, &reply);
			else
				rc = ei_x_encode_tuple_header(&reply, 2) | term_x_encode_atom(&reply, "ok") |
				     ei_x_encode_empty_list(&reply);
		} else if (strcmp(atom, "log_level") == 0) {
			rc = ei_x_encode_tuple_header(&reply, 2) | term_x_encode_atom(&reply, "ok") |
			     term_x_encode_atom(&reply, log_level_name(log_get_level(a->cfg.log)));
		} else if (strcmp(atom, "leave") == 0) {
			rc = term_x_encode_atom(&reply, "ok");
			leave = true;
		}
	} else if (arity == 2 && term_get_atom(req, &i, atom) == 0) {
		char arg[TERM_ATOM_BUF];
		bool arg_is_atom = term_get_atom(req, &i, arg) == 0;
		if (strcmp(atom, "coordinator") == 0 && arg_is_atom) {
			/* The oldest up member hosting the type coordinates it. */
			const char *oldest = a->membership ? membership_oldest_with(a->membership, arg)
							   : hosts_type(a, arg) ? dist_node_name(a->cfg.node) : NULL;
			if (oldest != NULL)
				rc = ei_x_encode_tuple_header(&reply, 2) | term_x_encode_atom(&reply, "ok") |
				     term_x_encode_atom(&reply, oldest);
			else
				rc = term_x_error_atom(&reply, "no_coordinator");
		} else if (strcmp(atom, "singleton") == 0 && arg_is_atom) {
			rc = encode_singleton_home(a, arg, &reply);
		} else if (strcmp(atom, "set_log_level") == 0 && arg_is_atom) {
			rc = set_log_level(a, arg, &reply);
		} else if (strcmp(atom, "down") == 0 && arg_is_atom) {
			if (a->membership == NULL || membership_down(a->membership, arg) == 0)
				rc = term_x_encode_atom(&reply, "ok");
			else
				rc = term_x_error_atom(&reply, "not_a_member");
		}
	}
	if (rc == 0 && reply.index == 0)
		rc = term_x_error_tagged_raw(&reply, "bad_request", call.request, call.request_len);
	reply_and_free(a, &call, &reply, rc);
	if (leave && a->cfg.request_leave)
		a->cfg.request_leave(a->cfg.leave_arg);
}

struct admin *admin_start(const struct admin_config *cfg, int *err)
{
	struct admin *a = calloc(1, sizeof *a);
	if (a == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	a->cfg = *cfg;
	drop_log_init(&a->drops, cfg->log, "admin", LOG_WARN);
	evloop_timer_init(&a->drops_timer, on_drops_timer, a);
	if (cfg->loop != NULL)
		evloop_timer_start(cfg->loop, &a->drops_timer, DROP_LOG_INTERVAL_MS);
	a->net_kernel = dist_node_spawn(cfg->node, "net_kernel", net_kernel_handle, a, err);
	if (a->net_kernel != NULL)
		a->shardnode = dist_node_spawn(cfg->node, "shardnode", shardnode_handle, a, err);
	if (a->shardnode == NULL) {
		admin_free(a);
		return NULL;
	}
	return a;
}

void admin_free(struct admin *a)
{
	if (a == NULL)
		return;
	if (a->shardnode)
		dist_node_exit(a->cfg.node, a->shardnode, "normal");
	if (a->net_kernel)
		dist_node_exit(a->cfg.node, a->net_kernel, "normal");
	if (a->cfg.loop != NULL)
		evloop_timer_stop(a->cfg.loop, &a->drops_timer);
	free(a);
}
