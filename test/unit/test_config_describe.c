/*
 * test_config_describe.c — the line a node's log starts with: the version, types of
 * each kind with the host, singletons, store and replicas, TLS, metrics
 * port, seeds; never the cookie nor the PostgreSQL connection string; cut
 * short with "..." when the buffer is small.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "app/config.h"
#include "app/config_describe.h"
#include "app/version.h"

static struct sn_config cfg;

static void base(void)
{
	config_defaults(&cfg);
	snprintf(cfg.name, sizeof cfg.name, "a@127.0.0.1");
	snprintf(cfg.types[0], sizeof cfg.types[0], "counter");
	snprintf(cfg.types[1], sizeof cfg.types[1], "kv");
	cfg.ntypes = 2;
}

Test(config_describe, a_plain_node)
{
	base();
	char out[1024];
	config_describe(&cfg, out, sizeof out);
	cr_assert_str_eq(out, "shardnode " SHARDNODE_VERSION " a@127.0.0.1 starting: types counter,kv; store memory; TLS off; seeds none");
}

Test(config_describe, everything_it_runs_and_no_secret)
{
	base();
	snprintf(cfg.types[2], sizeof cfg.types[2], "cart");
	cfg.type_on_host[2] = true;
	cfg.ntypes = 3;
	snprintf(cfg.host, sizeof cfg.host, "app@127.0.0.1");
	snprintf(cfg.singleton_names[0], sizeof cfg.singleton_names[0], "ledger");
	snprintf(cfg.singleton_types[0], sizeof cfg.singleton_types[0], "counter");
	cfg.nsingletons = 1;
	cfg.state_store = STATE_STORE_LMDB;
	snprintf(cfg.data_dir, sizeof cfg.data_dir, "/var/lib/sn");
	cfg.state_replicas = 2;
	snprintf(cfg.tls_certfile, sizeof cfg.tls_certfile, "/etc/c.pem");
	cfg.metrics_port = 9464;
	snprintf(cfg.join[0], sizeof cfg.join[0], "b@h");
	snprintf(cfg.join[1], sizeof cfg.join[1], "c@h");
	cfg.njoin = 2;
	snprintf(cfg.cookie, sizeof cfg.cookie, "sekrit");
	char out[1024];
	config_describe(&cfg, out, sizeof out);
	cr_assert_str_eq(out, "shardnode " SHARDNODE_VERSION " a@127.0.0.1 starting: types counter,kv, written in Erlang (host "
			      "app@127.0.0.1): cart; singletons ledger=counter; store lmdb in /var/lib/sn, "
			      "state_replicas 2; TLS on; metrics port 9464; seeds b@h,c@h");
	cr_assert_null(strstr(out, "sekrit"));
	snprintf(cfg.join_dns, sizeof cfg.join_dns, "sn.svc");
	config_describe(&cfg, out, sizeof out);
	cr_assert(strstr(out, "; seeds b@h,c@h, from DNS name sn.svc") != NULL, "%s", out);
	cfg.join_dns[0] = '\0';
	cfg.state_store = STATE_STORE_POSTGRES;
	snprintf(cfg.postgres_conninfo, sizeof cfg.postgres_conninfo, "host=db password=hunter2");
	config_describe(&cfg, out, sizeof out);
	cr_assert_not_null(strstr(out, "; store postgres; "));
	cr_assert_null(strstr(out, "hunter2"));
}

Test(config_describe, a_small_buffer_is_cut_short_and_terminated)
{
	base();
	for (size_t n = 0; n < 40; n++) {
		char out[64];
		memset(out, 'x', sizeof out);
		config_describe(&cfg, out, n);
		if (n == 0) {
			cr_assert_eq(out[0], 'x', "nothing written");
			continue;
		}
		cr_assert_lt(strlen(out), n);
		if (n >= 4 && n < 30)
			cr_assert_str_eq(out + strlen(out) - 3, "...", "n %zu: %s", n, out);
	}
}
