/*
 * cluster_msg_fuzz.c — libFuzzer target for the handlers of the cluster's
 * own messages (`make fuzz`), applied to real state as the node applies
 * them: the first input byte picks one and who sent it, the rest is the
 * message term (no version byte), which must first pass term_validate as
 * a peer's message must.
 *   0  membership (join, gossip, reachability, heartbeat, heartbeat_ack)
 *      through membership_handle, on a member list that starts as this
 *      node alone, as a new cluster or joining through three seeds; checked: the member list
 *      still encodes (membership_encode_members, _reachability) into terms
 *      the node itself validates, naming every member once, each name
 *      within NODE_NAME_BUF.
 *   1  remembered entities shared between members through remember_msg_apply, on a
 *      store in memory; checked: every id kept is one canonical entity id
 *      in the shard phash2 gives it.
 * The node (dist_node_start, listening, not registered with epmd) is made
 * per input, so one input cannot change the next; its loop is not run, so
 * nothing is sent.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dirent.h>
#include <ei.h>

#include "base/evloop.h"
#include "cluster/membership.h"
#include "distribution/dist_node.h"
#include "etf/entity_id.h"
#include "etf/phash2.h"
#include "etf/term.h"
#include "etf/term_validate.h"
#include "sharding/remember_share.h"
#include "store/remember.h"

#include "fuzz_checks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


/* The senders a message may come from: the node named in the seeds'
 * messages, another, and this node itself. */
static const char *const senders[] = {"a@127.0.0.1", "b@127.0.0.1", "c@127.0.0.1", NULL};

static bool one_valid_term(const char *buf, size_t len)
{
	size_t end = 0;
	return term_validate(buf, len, &end) == 0 && end == len;
}

/* ---- 0: membership ---- */

/* Threads of this process: libFuzzer's and the resolver's look-ups. */
static int thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	if (d == NULL)
		return -1;
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* A host name the message names is looked up on a thread of the
 * resolver, which frees its request when done, after the node is gone;
 * the leak check after each input would count it until then. Waits for
 * such threads (at most 10 s). */
static void wait_for_lookups(int threads_before)
{
	for (int ms = 0; ms < 10000 && thread_count() > threads_before; ms++)
		usleep(1000);
}

static void check_members(const struct membership *m)
{
	ei_x_buff x;
	check(ei_x_new(&x) == 0);
	check(membership_encode_members(m, &x) == 0);
	check(one_valid_term(x.buff, (size_t)x.index));
	/* {ok, [#{node => Node, status => Status}]}, each member once. */
	int i = 0, n, arity;
	check(ei_decode_tuple_header(x.buff, &i, &arity) == 0 && arity == 2 && ei_skip_term(x.buff, &i) == 0);
	check(ei_decode_list_header(x.buff, &i, &n) == 0);
	char seen[64][NODE_NAME_BUF];
	for (int e = 0; e < n; e++) {
		char key[MAXATOMLEN_UTF8], node[MAXATOMLEN_UTF8];
		check(ei_decode_map_header(x.buff, &i, &arity) == 0 && arity == 2);
		check(ei_decode_atom(x.buff, &i, key) == 0 && strcmp(key, "node") == 0);
		check(ei_decode_atom(x.buff, &i, node) == 0 && strlen(node) < NODE_NAME_BUF);
		for (int s = 0; s < e && s < 64; s++)
			check(strcmp(seen[s], node) != 0);
		if (e < 64)
			memcpy(seen[e], node, strlen(node) + 1);
		check(ei_skip_term(x.buff, &i) == 0 && ei_skip_term(x.buff, &i) == 0);
	}
	x.index = 0;
	check(membership_encode_reachability(m, &x) == 0);
	check(one_valid_term(x.buff, (size_t)x.index));
	ei_x_free(&x);
}

static void membership_message(uint8_t how, const char *term, size_t len)
{
	int threads_before = thread_count();
	struct evloop *loop = evloop_new();
	check(loop != NULL);
	char name[64];
	snprintf(name, sizeof name, "fuzz%ld@127.0.0.1", (long)getpid());
	struct dist_node_config ncfg = {
		.loop = loop, .log = NULL, .name = name, .cookie = "fuzzcookie", .port = 0,
		.max_message_bytes = 1 << 20, .outq_pause = 1 << 20, .outq_max_bytes = 1 << 22,
		.setup_ms = 1000, .ticktime_ms = 60000, .max_connections = 16, .unregistered = true,
	};
	int err;
	struct dist_node *node = dist_node_start(&ncfg, &err);
	check(node != NULL);
	static const char *const types[] = {"counter", "kv"};
	struct membership_config cfg = {
		.node = node, .loop = loop, .log = NULL,
		.seeds = (how & 4) ? senders : NULL, .nseeds = (how & 4) ? 3 : 0,
		.types = types, .ntypes = 2,
		.heartbeat_interval_ms = 1000, .failure_timeout_ms = 5000, .stable_after_ms = 1000, .watchers = 5,
		.keep_majority = (how & 8) != 0,
		.may_form = (how & 4) == 0, .seed_timeout_ms = 1000,
	};
	struct membership *m = membership_start(&cfg, &err);
	check(m != NULL);
	const char *via = senders[(how >> 4) % 4];
	if (via == NULL)
		via = name;
	(void)membership_handle(m, term, len, via, (uint32_t)(how >> 6) & 3);
	check_members(m);
	membership_free(m);
	dist_node_free(node);
	evloop_free(loop);
	wait_for_lookups(threads_before);
}

/* ---- 1: remembered entities shared between members ---- */

static bool hosts_even(void *arg, uint32_t shard)
{
	(void)arg;
	return shard % 2 == 0;
}

static void remembered_message(uint8_t how, const char *term, size_t len)
{
	uint32_t nshards = 1 + (how >> 1) % 16;
	int err;
	struct remember *store = remember_open(NULL, "t", nshards, NULL, &err);
	check(store != NULL);
	struct remember_msg_hooks hooks = {.hosts = hosts_even};
	char from[NODE_NAME_BUF];
	memset(from, 'x', sizeof from);
	int rc = remember_msg_apply(store, term, len, &hooks, from);
	check(rc == 1 || rc == 0 || rc == -EPROTO || rc == -ENOMEM);
	check(rc == 0 || memchr(from, '\0', sizeof from) != NULL);
	for (uint32_t s = 0; s < nshards; s++)
		(void)fuzz_check_remembered_shard(store, s, nshards);
	remember_free(store);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/* An exact-size copy: ASan sees any read past the input. */
	char *term = malloc(size - 1 ? size - 1 : 1);
	if (term == NULL)
		return 0;
	memcpy(term, data + 1, size - 1);
	if (one_valid_term(term, size - 1)) {
		if (data[0] & 1)
			remembered_message(data[0], term, size - 1);
		else
			membership_message(data[0], term, size - 1);
	}
	free(term);
	return 0;
}
