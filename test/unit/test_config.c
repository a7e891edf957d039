/*
 * test_config.c — defaults, the config file reader, --set, the flags, and
 * the cookie step that follows parsing.
 *
 * Tests that reach the default cookie point HOME at a fresh directory, so the
 * user's own ~/.erlang.cookie is never read or created. Criterion runs each
 * test in its own process, so setenv() does not leak between tests.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "app/config.h"
#include "base/node_limits.h"
#include "unit_helpers.h"

static const char *const known_types[] = {"counter", "kv", "session", NULL};

/* ---- scratch files ---- */

static char scratch_dir[] = "/tmp/sn-config-XXXXXX";

static void make_scratch(void)
{
	cr_assert_not_null(mkdtemp(scratch_dir));
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	cr_assert_geq(fd, 0, "cannot create %s", path);
	size_t n = strlen(text);
	cr_assert_eq(write(fd, text, n), (ssize_t)n);
	close(fd);
}

static void scratch_path(char *out, size_t outsz, const char *name)
{
	snprintf(out, outsz, "%s/%s", scratch_dir, name);
}

static void remove_scratch(const char *const *names)
{
	char path[PATH_MAX];
	for (size_t i = 0; names[i]; i++) {
		scratch_path(path, sizeof path, names[i]);
		unlink(path);
	}
	rmdir(scratch_dir);
}

/* config_parse_args over a NULL-terminated argument list. */
static int parse(struct sn_config *c, char err[CONFIG_ERR_BUF], const char *const *args)
{
	int argc = 0;
	while (args[argc])
		argc++;
	config_defaults(c);
	err[0] = '\0';
	return config_parse_args(c, argc, (char *const *)args, known_types, known_types, err);
}

#define PARSE(c, err, ...) parse((c), (err), (const char *const[]){__VA_ARGS__, NULL})

static int resolve(struct sn_config *c, char err[CONFIG_ERR_BUF])
{
	err[0] = '\0';
	return config_resolve_cookie(c, err);
}

/* Applies text from an exact-size copy, so a read past its end is seen. */
static int apply(struct sn_config *c, const char *text, char err[CONFIG_ERR_BUF])
{
	size_t n = strlen(text);
	char *copy = sn_dup_exact(text, n);
	err[0] = '\0';
	int rc = config_apply_text(c, copy, n, "test.config", err);
	free(copy);
	return rc;
}

#define assert_err_has(err, needle) \
	cr_assert_not_null(strstr((err), (needle)), "message '%s' lacks '%s'", (err), (needle))

/* ---- defaults ---- */

Test(config, defaults)
{
	struct sn_config c;
	memset(&c, 0x5A, sizeof c);
	config_defaults(&c);
	cr_assert_eq(c.name[0], '\0');
	cr_assert_eq(c.cookie[0], '\0');
	cr_assert_eq(c.data_dir[0], '\0');
	cr_assert_eq(c.port, 0);
	cr_assert_eq(c.njoin, 0);
	cr_assert_eq(c.ntypes, 0);
	cr_assert_not(c.proxy_only);
	cr_assert_not(c.short_names);
	cr_assert_eq(c.number_of_shards, 100);
	cr_assert_eq(c.buffer_size, 100000);
	cr_assert_eq(c.retry_interval_ms, 2000);
	cr_assert_eq(c.handoff_timeout_ms, 60000);
	cr_assert_eq(c.rebalance_interval_ms, 10000);
	cr_assert_eq(c.rebalance_threshold, 1);
	cr_assert_eq(c.max_simultaneous_rebalance, 3);
	cr_assert_eq(c.passivate_idle_after_ms, 0);
	cr_assert_not(c.remember_entities);
	cr_assert_eq(c.min_nr_of_members, 1);
	cr_assert_eq(c.heartbeat_interval_ms, 1000);
	cr_assert_eq(c.failure_timeout_ms, 5000);
	cr_assert_eq(c.downing, DOWNING_KEEP_MAJORITY);
	cr_assert_eq(c.stable_after_ms, 10000);
	cr_assert_eq(c.watchers, 5);
	cr_assert_eq(c.net_ticktime, 60);
	cr_assert_eq(c.max_message_bytes, 64u << 20);
	cr_assert_eq(c.max_connections, 1024);
	cr_assert_eq(c.outq_max_bytes, 256u << 20);
	cr_assert_eq(c.log_level, LOG_INFO);
}

/* ---- the config file ---- */

static const char full_file[] =
	"% shardnode settings\n"
	"{number_of_shards, 1_000}.   % trailing comment\n"
	"\n"
	"  { buffer_size , 0 } .\n"
	"{remember_entities, true}.\n"
	"{downing, 'manual'}.\n"
	"{log_level, debug}.\n"
	"{outq_max_bytes, 4_000_000_000}.\n"
	"{data_dir, \"/var/lib/sn \\\"x\\\"\"}.\n"
	"%% the end\n";

Test(config, file_with_every_kind_of_value)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	config_defaults(&c);
	cr_assert_eq(apply(&c, full_file, err), 0, "%s", err);
	cr_assert_eq(c.number_of_shards, 1000);
	cr_assert_eq(c.buffer_size, 0);
	cr_assert(c.remember_entities);
	cr_assert_eq(c.downing, DOWNING_MANUAL);
	cr_assert_eq(c.log_level, LOG_DEBUG);
	cr_assert_eq(c.outq_max_bytes, 4000000000u);
	cr_assert_str_eq(c.data_dir, "/var/lib/sn \"x\"");
}

Test(config, empty_and_comment_only_files)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	config_defaults(&c);
	cr_assert_eq(apply(&c, "", err), 0);
	cr_assert_eq(apply(&c, "% nothing\n  \n%% here", err), 0);
	cr_assert_eq(c.number_of_shards, 100);
}

Test(config, data_dir_as_binary_and_quoted_atom)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	config_defaults(&c);
	cr_assert_eq(apply(&c, "{data_dir, <<\"/srv/bin\">>}.", err), 0, "%s", err);
	cr_assert_str_eq(c.data_dir, "/srv/bin");
	cr_assert_eq(apply(&c, "{data_dir, '/srv/atom'}.", err), 0, "%s", err);
	cr_assert_str_eq(c.data_dir, "/srv/atom");
	cr_assert_eq(apply(&c, "{data_dir, \"\"}.", err), -EINVAL, "an empty path");
	assert_err_has(err, "data_dir");
	cr_assert_eq(apply(&c, "{data_dir, 5}.", err), -EINVAL);
	assert_err_has(err, "data_dir");
	cr_assert_eq(apply(&c, "{data_dir, <<'/x'>>}.", err), -EINVAL, "a binary of an atom");
	cr_assert_eq(apply(&c, "{data_dir, <<\"/x\">}.", err), -EINVAL, "an unclosed binary");
	cr_assert_str_eq(c.data_dir, "/srv/atom");
}

Test(config, unknown_key_is_named)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	config_defaults(&c);
	cr_assert_eq(apply(&c, "{number_of_shards, 5}.\n% x\n{shard_count, 5}.\n", err), -EINVAL);
	assert_err_has(err, "shard_count");
	assert_err_has(err, "test.config:3");
}

Test(config, bad_values_name_their_key)
{
	static const struct {
		const char *text, *key;
	} cases[] = {
		{"{number_of_shards, 0}.", "number_of_shards"},
		{"{number_of_shards, 1000001}.", "number_of_shards"},
		{"{number_of_shards, -5}.", "number_of_shards"},
		{"{number_of_shards, many}.", "number_of_shards"},
		{"{number_of_shards, \"5\"}.", "number_of_shards"},
		{"{max_message_bytes, 1023}.", "max_message_bytes"},
		{"{outq_max_bytes, 4_000_000_001}.", "outq_max_bytes"},
		{"{remember_entities, yes}.", "remember_entities"},
		{"{remember_entities, 1}.", "remember_entities"},
		{"{downing, auto}.", "downing"},
		{"{log_level, verbose}.", "log_level"},
		{"{log_level, \"debug\"}.", "log_level"},
	};
	for (size_t i = 0; i < SN_ARRAY_LEN(cases); i++) {
		struct sn_config c;
		char err[CONFIG_ERR_BUF];
		config_defaults(&c);
		cr_assert_eq(apply(&c, cases[i].text, err), -EINVAL, "'%s' accepted", cases[i].text);
		assert_err_has(err, cases[i].key);
		assert_err_has(err, "test.config:1");
	}
}

Test(config, syntax_errors)
{
	const char *const bad[] = {
		"{number_of_shards, 5}",     /* no full stop */
		"number_of_shards, 5}.",     /* no brace */
		"{number_of_shards 5}.",     /* no comma */
		"{number_of_shards, 5.",     /* no closing brace */
		"{1, 5}.",                   /* key not an atom */
		"{\"number_of_shards\", 5}.", /* key a string */
		"{data_dir, \"/open}.",      /* unterminated string */
		"{data_dir, <<\"/x\"}.",     /* unterminated binary */
		"{number_of_shards, -}.",    /* sign without digits */
		"{number_of_shards, 99999999999999999999999}.", /* overflow */
		"{Number, 5}.",              /* a variable */
		"{number_of_shards, 5}. junk",
	};
	for (size_t i = 0; i < SN_ARRAY_LEN(bad); i++) {
		struct sn_config c;
		char err[CONFIG_ERR_BUF];
		config_defaults(&c);
		cr_assert_eq(apply(&c, bad[i], err), -EINVAL, "'%s' accepted", bad[i]);
		cr_assert_neq(err[0], '\0', "no message for '%s'", bad[i]);
		cr_assert_null(strchr(err, '\n'), "a message is one line");
	}
}

Test(config, every_truncation_of_a_file)
{
	/* Cut at every byte, the reader either applies the whole entries
	 * before the cut or reports an error; it never reads past the text. */
	static const char text[] =
		"{number_of_shards, 12}.\n"
		"{data_dir, <<\"/b\">>}.\n"
		"{downing, 'manual'}. % c\n"
		"{log_level, warn}.\n";
	size_t n = strlen(text);
	for (size_t k = 0; k <= n; k++) {
		struct sn_config c;
		char err[CONFIG_ERR_BUF] = "";
		config_defaults(&c);
		char *copy = sn_dup_exact(text, k);
		int rc = config_apply_text(&c, copy, k, "cut", err);
		free(copy);
		cr_assert(rc == 0 || rc == -EINVAL, "cut at %zu gave %d", k, rc);
		if (rc == -EINVAL)
			cr_assert_neq(err[0], '\0');
	}
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	config_defaults(&c);
	cr_assert_eq(apply(&c, text, err), 0, "%s", err);
	cr_assert_eq(c.log_level, LOG_WARN);
}

/* ---- --set ---- */

Test(config, set_integers)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	config_defaults(&c);
	cr_assert_eq(config_set(&c, "number_of_shards=5", err), 0, "%s", err);
	cr_assert_eq(c.number_of_shards, 5);
	cr_assert_eq(config_set(&c, "number_of_shards=1_000_000", err), 0);
	cr_assert_eq(c.number_of_shards, 1000000);
	cr_assert_eq(config_set(&c, "buffer_size=0", err), 0, "the minimum is allowed");
	cr_assert_eq(c.buffer_size, 0);
	cr_assert_eq(config_set(&c, "outq_max_bytes=4000000000", err), 0, "the maximum is allowed");
	cr_assert_eq(c.outq_max_bytes, 4000000000u);
	cr_assert_eq(config_set(&c, "net_ticktime= 30 ", err), 0, "blanks around a value");
	cr_assert_eq(c.net_ticktime, 30);

	const char *const bad[] = {"number_of_shards=0",     "number_of_shards=1000001", "number_of_shards=-1",
				   "number_of_shards=5x",    "number_of_shards=",        "number_of_shards=abc",
				   "number_of_shards=1 2",   "outq_max_bytes=4000000001", "net_ticktime=86401",
				   "number_of_shards=99999999999999999999"};
	for (size_t i = 0; i < SN_ARRAY_LEN(bad); i++) {
		cr_assert_eq(config_set(&c, bad[i], err), -EINVAL, "'%s' accepted", bad[i]);
		const char *eq = strchr(bad[i], '=');
		char key[64];
		snprintf(key, sizeof key, "%.*s", (int)(eq - bad[i]), bad[i]);
		assert_err_has(err, key);
		assert_err_has(err, "expects an integer");
	}
	cr_assert_eq(c.number_of_shards, 1000000, "a refused value changes nothing");
	cr_assert_eq(c.net_ticktime, 30);
}

Test(config, set_bool_downing_log_level)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	config_defaults(&c);
	cr_assert_eq(config_set(&c, "remember_entities=true", err), 0);
	cr_assert(c.remember_entities);
	cr_assert_eq(config_set(&c, "remember_entities=false", err), 0);
	cr_assert_not(c.remember_entities);
	cr_assert_eq(config_set(&c, "remember_entities=yes", err), -EINVAL);
	assert_err_has(err, "remember_entities");

	cr_assert_eq(config_set(&c, "downing=manual", err), 0);
	cr_assert_eq(c.downing, DOWNING_MANUAL);
	cr_assert_eq(config_set(&c, "downing=keep_majority", err), 0);
	cr_assert_eq(c.downing, DOWNING_KEEP_MAJORITY);
	cr_assert_eq(config_set(&c, "downing=oldest", err), -EINVAL);
	assert_err_has(err, "downing");

	const struct {
		const char *text;
		enum log_level level;
	} levels[] = {{"log_level=debug", LOG_DEBUG},
		      {"log_level=info", LOG_INFO},
		      {"log_level=warn", LOG_WARN},
		      {"log_level=error", LOG_ERROR}};
	for (size_t i = 0; i < SN_ARRAY_LEN(levels); i++) {
		cr_assert_eq(config_set(&c, levels[i].text, err), 0, "%s", err);
		cr_assert_eq(c.log_level, levels[i].level);
	}
	cr_assert_eq(config_set(&c, "log_level=loud", err), -EINVAL);
	assert_err_has(err, "log_level");
	cr_assert_eq(c.log_level, LOG_ERROR);
}

Test(config, set_paths)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	config_defaults(&c);
	cr_assert_eq(config_set(&c, "data_dir=/srv/a b", err), 0, "a bare path, blanks and all");
	cr_assert_str_eq(c.data_dir, "/srv/a b");
	cr_assert_eq(config_set(&c, "data_dir=\"/srv/quoted\"", err), 0);
	cr_assert_str_eq(c.data_dir, "/srv/quoted");
	cr_assert_eq(config_set(&c, "data_dir=<<\"/srv/bin\">>", err), 0);
	cr_assert_str_eq(c.data_dir, "/srv/bin");
	cr_assert_eq(config_set(&c, "data_dir=", err), -EINVAL);
	assert_err_has(err, "data_dir");
	cr_assert_eq(config_set(&c, "data_dir=\"/open", err), -EINVAL);
	assert_err_has(err, "data_dir");

	size_t n = strlen("data_dir=") + PATH_MAX;
	char *longest = malloc(n + 1);
	cr_assert_not_null(longest);
	memcpy(longest, "data_dir=", 9);
	memset(longest + 9, 'p', n - 9);
	longest[n] = '\0';
	cr_assert_eq(config_set(&c, longest, err), -EINVAL, "a path of PATH_MAX bytes");
	assert_err_has(err, "too long");
	longest[n - 1] = '\0';
	cr_assert_eq(config_set(&c, longest, err), 0, "a path of PATH_MAX - 1 bytes");
	cr_assert_eq(strlen(c.data_dir), PATH_MAX - 1);
	free(longest);
}

Test(config, set_malformed)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	config_defaults(&c);
	cr_assert_eq(config_set(&c, "number_of_shards", err), -EINVAL);
	assert_err_has(err, "KEY=VALUE");
	cr_assert_eq(config_set(&c, "=5", err), -EINVAL);
	assert_err_has(err, "KEY=VALUE");
	cr_assert_eq(config_set(&c, "shards=5", err), -EINVAL);
	assert_err_has(err, "'shards'");
	cr_assert_eq(config_set(&c, "number_of_shards_x=5", err), -EINVAL, "a key is matched whole");
	cr_assert_eq(config_set(&c, "number_of=5", err), -EINVAL, "a prefix is no key");
}

/* ---- flags ---- */

Test(config, long_name)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h.example", "--cookie", "secret"), 0, "%s", err);
	cr_assert_str_eq(c.name, "a@h.example");
	cr_assert_not(c.short_names);
	cr_assert_str_eq(c.cookie, "secret");
	cr_assert_str_eq(c.data_dir, "./shardnode-data/a");
	cr_assert_eq(c.ntypes, 3, "no --types: every known type");
	cr_assert_str_eq(c.types[0], "counter");
	cr_assert_str_eq(c.types[2], "session");
	cr_assert_eq(c.port, 0);
	cr_assert_eq(c.njoin, 0);
}

Test(config, short_name_takes_the_short_host_name)
{
	char host[CONFIG_NAME_BUF];
	cr_assert_eq(gethostname(host, sizeof host), 0);
	host[sizeof host - 1] = '\0';
	char *dot = strchr(host, '.');
	if (dot)
		*dot = '\0';
	char want[CONFIG_NAME_BUF + 8];
	snprintf(want, sizeof want, "a@%s", host);

	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--sname", "a", "--cookie", "c"), 0, "%s", err);
	cr_assert_str_eq(c.name, want);
	cr_assert(c.short_names);

	cr_assert_eq(PARSE(&c, err, "--sname", "b@box", "--cookie", "c"), 0, "%s", err);
	cr_assert_str_eq(c.name, "b@box");
	cr_assert_eq(PARSE(&c, err, "--sname", "b@box.example", "--cookie", "c"), -EINVAL,
		     "a short name with a dotted host");
	assert_err_has(err, "--sname");
}

Test(config, bad_names)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--cookie", "c"), -EINVAL, "no name");
	assert_err_has(err, "--name");
	cr_assert_eq(PARSE(&c, err, "--name", "a", "--cookie", "c"), -EINVAL, "a long name without host");
	assert_err_has(err, "--name a");
	cr_assert_eq(PARSE(&c, err, "--name", "a@", "--cookie", "c"), -EINVAL);
	cr_assert_eq(PARSE(&c, err, "--name", "@h", "--cookie", "c"), -EINVAL);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h@i", "--cookie", "c"), -EINVAL);
	cr_assert_eq(PARSE(&c, err, "--name", "a b@h", "--cookie", "c"), -EINVAL);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--sname", "b", "--cookie", "c"), -EINVAL, "two names");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--name", "b@h", "--cookie", "c"), -EINVAL,
		     "--name twice");

	char longname[CONFIG_NAME_BUF + 4];
	memset(longname, 'x', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	longname[1] = '@';
	cr_assert_eq(PARSE(&c, err, "--name", longname, "--cookie", "c"), -EINVAL);
	assert_err_has(err, "too long");
}

Test(config, unknown_flag_and_missing_value)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--verbose", "--cookie", "c"), -EINVAL);
	assert_err_has(err, "'--verbose'");
	cr_assert_eq(PARSE(&c, err, "--cookie", "c", "--name"), -EINVAL);
	assert_err_has(err, "--name needs a value");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "-name", "b@h"), -EINVAL);
	assert_err_has(err, "-name");
}

Test(config, help, .init = cr_redirect_stdout)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--help"), 1);
	fflush(stdout);
	cr_assert_stdout_eq_str(config_usage);
}

Test(config, short_help, .init = cr_redirect_stdout)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "-h"), 1);
	fflush(stdout);
	cr_assert_stdout_eq_str(config_usage);
}

Test(config, ports)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--port", "4370"), 0, "%s", err);
	cr_assert_eq(c.port, 4370);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--port", "65535"), 0);
	cr_assert_eq(c.port, 65535);
	const char *const bad[] = {"70000", "65536", "-1", "", "12ab", "port"};
	for (size_t i = 0; i < SN_ARRAY_LEN(bad); i++) {
		cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--port", bad[i]), -EINVAL,
			     "--port '%s' accepted", bad[i]);
		assert_err_has(err, "--port");
	}
}

Test(config, types)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--types", "kv,counter"), 0, "%s", err);
	cr_assert_eq(c.ntypes, 2);
	cr_assert_str_eq(c.types[0], "kv");
	cr_assert_str_eq(c.types[1], "counter");

	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--types", "kv,ledger"), -EINVAL);
	assert_err_has(err, "ledger");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--types", "kv,counter,kv"), -EINVAL,
		     "a type twice");
	assert_err_has(err, "twice");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--types", "Kv"), -EINVAL);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--types", "kv,"), -EINVAL);
	/* "" is no type at all (an_empty_types_list_hosts_no_builtin_type) */
}

/* One more type than a node may host: 16 are taken, 17 refused with the
 * limit named (base/node_limits.h), before anything else looks at them. */
Test(config, types_at_the_limit)
{
	char names[NODE_TYPES_MAX + 1][16];
	const char *known[NODE_TYPES_MAX + 2];
	char list[(NODE_TYPES_MAX + 1) * 16] = "";
	size_t len = 0;
	for (int k = 0; k <= NODE_TYPES_MAX; k++) {
		snprintf(names[k], sizeof names[k], "t%d", k);
		known[k] = names[k];
	}
	known[NODE_TYPES_MAX + 1] = NULL;
	for (int k = 0; k < NODE_TYPES_MAX; k++)
		len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", k ? "," : "", names[k]);

	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	char *args16[] = {"--name", "a@h", "--cookie", "c", "--types", list, NULL};
	config_defaults(&c);
	cr_assert_eq(config_parse_args(&c, 6, args16, known, known, err), 0, "%s", err);
	cr_assert_eq(c.ntypes, NODE_TYPES_MAX);
	cr_assert_str_eq(c.types[NODE_TYPES_MAX - 1], names[NODE_TYPES_MAX - 1]);

	snprintf(list + len, sizeof list - len, ",%s", names[NODE_TYPES_MAX]);
	config_defaults(&c);
	cr_assert_eq(config_parse_args(&c, 6, args16, known, known, err), -EINVAL);
	assert_err_has(err, "at most 16");
}

Test(config, join_list)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--join", "b@h,c@10.0.0.2"), 0, "%s", err);
	cr_assert_eq(c.njoin, 2);
	cr_assert_str_eq(c.join[0], "b@h");
	cr_assert_str_eq(c.join[1], "c@10.0.0.2");

	const char *const bad[] = {"nohost", "b@h,", ",b@h", "@h", "b@", "b@h,,c@h"};
	for (size_t i = 0; i < SN_ARRAY_LEN(bad); i++) {
		cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--join", bad[i]), -EINVAL,
			     "--join '%s' accepted", bad[i]);
		assert_err_has(err, "--join");
	}

	/* CONFIG_MAX_LIST nodes fit, one more does not. */
	char list[(CONFIG_MAX_LIST + 1) * 8];
	size_t n = 0;
	for (int i = 0; i < CONFIG_MAX_LIST + 1; i++)
		n += (size_t)snprintf(list + n, sizeof list - n, "%sn%d@h", i ? "," : "", i);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--join", list), -EINVAL);
	*strrchr(list, ',') = '\0';
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--join", list), 0, "%s", err);
	cr_assert_eq(c.njoin, CONFIG_MAX_LIST);
}

Test(config, join_dns)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "sn@10.0.0.1", "--cookie", "c", "--join-dns",
			   "shardnode.default.svc.cluster.local"), 0, "%s", err);
	cr_assert_str_eq(c.join_dns, "shardnode.default.svc.cluster.local");
	cr_assert_eq(c.njoin, 0);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--set", "join_dns=sn-peers.", "--join", "b@h"),
		     0, "%s", err);
	cr_assert_str_eq(c.join_dns, "sn-peers.", "a trailing dot, and --join beside it");
	cr_assert_eq(c.njoin, 1);

	const char *const bad[] = {"", ".", "a..b", ".a", "a b", "a/b", "a@b",
				   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b"};
	for (size_t i = 0; i < SN_ARRAY_LEN(bad); i++) {
		cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--join-dns", bad[i]), -EINVAL,
			     "--join-dns '%s' accepted", bad[i]);
		assert_err_has(err, "join_dns");
	}
	char longname[300];
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	for (size_t k = 60; k < sizeof longname - 1; k += 61)
		longname[k] = '.';
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--join-dns", longname), -EINVAL);
	assert_err_has(err, "--join-dns");
}

Test(config, proxy_only)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--proxy-only", "--name", "a@h", "--cookie", "c"), 0, "%s", err);
	cr_assert(c.proxy_only);
}

Test(config, stop_on_stdin_eof)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c"), 0, "%s", err);
	cr_assert_not(c.stop_on_stdin_eof, "off unless asked for");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--stop-on-stdin-eof", "--cookie", "c"), 0, "%s", err);
	cr_assert(c.stop_on_stdin_eof);
}

Test(config, cookie_flag)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "ABC def"), 0, "%s", err);
	cr_assert_str_eq(c.cookie, "ABC def");
	cr_assert_eq(c.cookie_file[0], '\0');
	cr_assert_eq(resolve(&c, err), 0, "%s", err);
	cr_assert_str_eq(c.cookie, "ABC def", "a cookie given is the cookie");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", ""), -EINVAL);
	assert_err_has(err, "--cookie");

	char big[CONFIG_NAME_BUF + 1];
	memset(big, 'k', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", big), -EINVAL, "a cookie of 256 bytes");
	big[sizeof big - 2] = '\0';
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", big), 0, "a cookie of 255 bytes");
}

Test(config, cookie_file, .init = make_scratch)
{
	char path[PATH_MAX];
	scratch_path(path, sizeof path, "cookie");
	write_file(path, "  FROMFILE \n\n", 0600);

	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie-file", path), 0, "%s", err);
	cr_assert_str_eq(c.cookie_file, path);
	cr_assert_eq(c.cookie[0], '\0', "parsing does not read the cookie file");
	cr_assert_eq(resolve(&c, err), 0, "%s", err);
	cr_assert_str_eq(c.cookie, "FROMFILE", "blanks around the cookie are dropped");

	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie-file", path, "--cookie", "x"), -EINVAL,
		     "both --cookie and --cookie-file");

	write_file(path, "two\nlines\n", 0600);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie-file", path), 0, "%s", err);
	cr_assert_eq(resolve(&c, err), -EINVAL);
	assert_err_has(err, path);
	write_file(path, " \n", 0600);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie-file", path), 0, "%s", err);
	cr_assert_eq(resolve(&c, err), -EINVAL, "a blank file");

	char missing[PATH_MAX];
	scratch_path(missing, sizeof missing, "absent");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie-file", missing), 0, "%s", err);
	cr_assert_eq(resolve(&c, err), -EINVAL);
	assert_err_has(err, missing);
	remove_scratch((const char *const[]){"cookie", NULL});
}

Test(config, cookie_file_path_too_long)
{
	/* No such path can be opened: refused when parsing (the message is
	 * cut at CONFIG_ERR_BUF, before the reason), after every other check. */
	char longest[PATH_MAX + 1];
	memset(longest, 'p', PATH_MAX);
	longest[0] = '/';
	longest[PATH_MAX] = '\0';
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie-file", longest), -EINVAL);
	assert_err_has(err, "cookie file /ppp");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie-file", longest, "--types", "ledger"), -EINVAL);
	assert_err_has(err, "ledger");
	longest[PATH_MAX - 1] = '\0';
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie-file", longest), 0, "%s", err);
	cr_assert_eq(strlen(c.cookie_file), PATH_MAX - 1);
}

Test(config, config_file_and_set_precedence, .init = make_scratch)
{
	char path[PATH_MAX];
	scratch_path(path, sizeof path, "node.config");
	write_file(path, "{number_of_shards, 5}.\n{buffer_size, 9}.\n", 0600);

	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	/* --set wins over the file whatever their order on the command line. */
	cr_assert_eq(PARSE(&c, err, "--set", "number_of_shards=7", "--name", "a@h", "--cookie", "c", "--config",
			   path),
		     0, "%s", err);
	cr_assert_eq(c.number_of_shards, 7);
	cr_assert_eq(c.buffer_size, 9);

	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--set", "data_dir=/d"), 0);
	cr_assert_str_eq(c.data_dir, "/d", "a data_dir given is not replaced by the derived one");

	write_file(path, "{number_of_shards, 0}.\n", 0600);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--config", path), -EINVAL);
	assert_err_has(err, path);
	assert_err_has(err, "number_of_shards");

	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--set", "bogus=1"), -EINVAL);
	assert_err_has(err, "bogus");

	char missing[PATH_MAX];
	scratch_path(missing, sizeof missing, "absent.config");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--config", missing), -EINVAL);
	assert_err_has(err, "--config");
	remove_scratch((const char *const[]){"node.config", NULL});
}

/* ---- singletons ---- */

Test(config, singleton_flags)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--singleton", "ledger=counter", "--singleton",
			   "boss=kv"),
		     0, "%s", err);
	cr_assert_eq(c.nsingletons, 2);
	cr_assert_str_eq(c.singleton_names[0], "ledger");
	cr_assert_str_eq(c.singleton_types[0], "counter");
	cr_assert_str_eq(c.singleton_names[1], "boss");
	cr_assert_str_eq(c.singleton_types[1], "kv");

	static const struct {
		const char *arg, *says;
	} refused[] = {
		{"ledger", "expected NAME=TYPE"},
		{"=counter", "expected NAME=TYPE"},
		{"ledger=", "not one of --types"},
		{"ledger=session", "not one of --types"}, /* known, not hosted */
		{"counter=kv", "is an entity type's"},
		{"session=kv", "is an entity type's"},
		{"Ledger=kv", "lower-case atom"},
		{"net_kernel=kv", "lower-case atom"},
		{"shardnode_x=kv", "lower-case atom"},
	};
	for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
		cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--types", "counter,kv", "--singleton",
				   refused[k].arg),
			     -EINVAL, "%s", refused[k].arg);
		assert_err_has(err, refused[k].says);
	}
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--singleton", "x=kv", "--singleton", "x=counter"),
		     -EINVAL);
	assert_err_has(err, "given twice");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--singleton"), -EINVAL);
}

/* With --host alone the host names the types at start: a singleton's type
 * may be one of them (node_app checks it then), but not with --host-types,
 * which names them all now, nor on a proxy-only node. */
Test(config, singleton_of_a_type_the_host_names)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--host", "b@h", "--singleton", "boss=cart"), 0,
		     "%s", err);
	cr_assert_str_eq(c.singleton_types[0], "cart");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--host", "b@h", "--singleton", "boss=Cart"),
		     -EINVAL);
	assert_err_has(err, "not one of --types");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--host", "b@h", "--host-types", "tally",
			   "--singleton", "boss=cart"),
		     -EINVAL);
	assert_err_has(err, "not one of --types");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--host", "b@h", "--host-types", "cart",
			   "--singleton", "boss=cart"),
		     0, "%s", err);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--host", "b@h", "--proxy-only", "--singleton",
			   "boss=cart"),
		     -EINVAL);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--singleton", "boss=cart"), -EINVAL);
}

/* Types and singletons share the per-node limit. */
Test(config, singletons_count_with_the_types)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	const char *args[8 + 2 * NODE_TYPES_MAX + 1] = {"--name", "a@h", "--cookie", "c", "--types", "counter,kv"};
	size_t n = 6;
	char names[NODE_TYPES_MAX][16];
	for (int k = 0; k < NODE_TYPES_MAX - 1; k++) {
		snprintf(names[k], sizeof names[k], "s%d=kv", k);
		args[n++] = "--singleton";
		args[n++] = names[k];
	}
	args[n] = NULL;
	cr_assert_eq(parse(&c, err, args), -EINVAL);
	assert_err_has(err, "at most 16");
	args[n - 2] = NULL; /* 2 types and 14 singletons */
	cr_assert_eq(parse(&c, err, args), 0, "%s", err);
	cr_assert_eq(c.nsingletons, NODE_TYPES_MAX - 2);
}

Test(config, singletons_key_and_precedence, .init = make_scratch)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	config_defaults(&c);
	cr_assert_eq(apply(&c, "{singletons, [{ledger, counter}, {boss, kv}]}.\n{number_of_shards, 5}.\n", err), 0,
		     "%s", err);
	cr_assert_eq(c.nsingletons, 2);
	cr_assert_str_eq(c.singleton_names[1], "boss");
	cr_assert_eq(c.number_of_shards, 5);
	cr_assert_eq(apply(&c, "{singletons, []}.", err), 0, "%s", err);
	cr_assert_eq(c.nsingletons, 0);
	static const char *const bad[] = {
		"{singletons, ledger}.", "{singletons, [ledger]}.", "{singletons, [{ledger, 1}]}.",
		"{singletons, [{ledger, kv}}.", "{singletons, [{ledger, kv}]}", "{singletons, [{ledger, kv},]}.",
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		cr_assert_eq(apply(&c, bad[k], err), -EINVAL, "%s", bad[k]);
		assert_err_has(err, "singletons");
	}
	/* Every truncation of a good line is refused or read whole, never past its end. */
	const char *good = "{singletons, [{ledger, counter}, {boss, kv}]}.";
	for (size_t n = 0; n < strlen(good); n++) {
		char *cut = sn_dup_exact(good, n);
		config_defaults(&c);
		int rc = config_apply_text(&c, cut, n, "cut.config", err);
		cr_assert(rc == 0 || rc == -EINVAL);
		free(cut);
	}

	/* --set, then --singleton flags, win over the file. */
	char path[PATH_MAX];
	scratch_path(path, sizeof path, "node.config");
	write_file(path, "{singletons, [{ledger, counter}]}.\n", 0600);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--config", path), 0, "%s", err);
	cr_assert_str_eq(c.singleton_names[0], "ledger");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--config", path, "--set",
			   "singletons=[{boss,kv}]"),
		     0, "%s", err);
	cr_assert_eq(c.nsingletons, 1);
	cr_assert_str_eq(c.singleton_names[0], "boss");
	cr_assert_eq(PARSE(&c, err, "--singleton", "chief=counter", "--name", "a@h", "--cookie", "c", "--config", path,
			   "--set", "singletons=[{boss,kv}]"),
		     0, "%s", err);
	cr_assert_eq(c.nsingletons, 1);
	cr_assert_str_eq(c.singleton_names[0], "chief");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--set", "singletons=boss"), -EINVAL);
	assert_err_has(err, "singletons");
	remove_scratch((const char *const[]){"node.config", NULL});
}

/* ---- the default cookie ---- */

static bool all_upper(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 'A' || s[i] > 'Z')
			return false;
	return true;
}

/* How many entries the scratch directory holds. */
static size_t scratch_entries(void)
{
	DIR *d = opendir(scratch_dir);
	cr_assert_not_null(d);
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void scratch_home(void)
{
	make_scratch();
	cr_assert_eq(setenv("HOME", scratch_dir, 1), 0);
}

static void scratch_home_quiet(void)
{
	scratch_home();
	cr_redirect_stdout();
}

Test(config, parsing_writes_no_file, .init = scratch_home_quiet)
{
	/* With no cookie given, parsing succeeds or fails without creating
	 * ~/.erlang.cookie: that is config_resolve_cookie's, called only once
	 * the command line is known to be good. */
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	char missing[PATH_MAX];
	scratch_path(missing, sizeof missing, "absent");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h"), 0, "%s", err);
	cr_assert_eq(c.cookie[0], '\0');
	cr_assert_eq(c.cookie_file[0], '\0');
	cr_assert_eq(PARSE(&c, err, "--sname", "a", "--set", "number_of_shards=5"), 0, "%s", err);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie-file", missing), 0, "%s", err);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--help"), 1);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--types", "ledger"), -EINVAL);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--set", "number_of_shards=0"), -EINVAL);
	cr_assert_eq(PARSE(&c, err, "--name", "a"), -EINVAL);
	cr_assert_eq(scratch_entries(), 0, "parsing created a file in HOME");
	remove_scratch((const char *const[]){NULL});
}

Test(config, default_cookie_is_created, .init = scratch_home)
{
	char path[PATH_MAX];
	scratch_path(path, sizeof path, ".erlang.cookie");

	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h"), 0, "%s", err);
	struct stat st;
	cr_assert_neq(stat(path, &st), 0, "~/.erlang.cookie created by parsing");
	cr_assert_eq(resolve(&c, err), 0, "%s", err);
	cr_assert_eq(strlen(c.cookie), 20);
	cr_assert(all_upper(c.cookie, 20), "cookie '%s'", c.cookie);

	cr_assert_eq(stat(path, &st), 0, "~/.erlang.cookie not created");
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(st.st_mode & 07777, 0400, "mode %o", (unsigned)(st.st_mode & 07777));
	cr_assert_eq(st.st_size, 20);
	char text[32] = {0};
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_eq(fread(text, 1, sizeof text - 1, f), 20);
	fclose(f);
	cr_assert_str_eq(text, c.cookie, "the cookie used is the one written");

	/* A second start reads the same file. */
	char first[CONFIG_NAME_BUF];
	snprintf(first, sizeof first, "%s", c.cookie);
	cr_assert_eq(PARSE(&c, err, "--name", "b@h"), 0, "%s", err);
	cr_assert_eq(resolve(&c, err), 0, "%s", err);
	cr_assert_str_eq(c.cookie, first);
	remove_scratch((const char *const[]){".erlang.cookie", NULL});
}

Test(config, default_cookie_existing_file, .init = scratch_home)
{
	char path[PATH_MAX];
	scratch_path(path, sizeof path, ".erlang.cookie");
	write_file(path, "MYCOOKIE\n", 0400);
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h"), 0, "%s", err);
	cr_assert_eq(resolve(&c, err), 0, "%s", err);
	cr_assert_str_eq(c.cookie, "MYCOOKIE");
	remove_scratch((const char *const[]){".erlang.cookie", NULL});
}

Test(config, default_cookie_unused_when_one_is_given, .init = scratch_home)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "given"), 0, "%s", err);
	cr_assert_eq(resolve(&c, err), 0, "%s", err);
	cr_assert_str_eq(c.cookie, "given");
	cr_assert_eq(scratch_entries(), 0, "~/.erlang.cookie created though --cookie was given");

	char path[PATH_MAX];
	scratch_path(path, sizeof path, "cookie");
	write_file(path, "FROMFILE\n", 0600);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie-file", path), 0, "%s", err);
	cr_assert_eq(resolve(&c, err), 0, "%s", err);
	cr_assert_str_eq(c.cookie, "FROMFILE");
	cr_assert_eq(scratch_entries(), 1, "~/.erlang.cookie created though --cookie-file was given");
	remove_scratch((const char *const[]){"cookie", NULL});
}

Test(config, default_cookie_without_home)
{
	cr_assert_eq(unsetenv("HOME"), 0);
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h"), 0, "%s", err);
	cr_assert_eq(resolve(&c, err), -EINVAL);
	assert_err_has(err, "HOME");
}

Test(config, failure_timeout_must_exceed_the_heartbeat)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--set", "heartbeat_interval_ms=500", "--set",
			   "failure_timeout_ms=500"),
		     -EINVAL);
	cr_assert(strstr(err, "failure_timeout_ms") != NULL, "%s", err);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--set", "heartbeat_interval_ms=500", "--set",
			   "failure_timeout_ms=501"),
		     0, "%s", err);
}

/* ---- plugin_dir: the types named are checked after it is read ---- */

Test(config, types_are_checked_once_plugin_dir_is_known)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF] = "";
	char *args[] = {"--name",     "a@h", "--cookie", "c", "--types", "counter,ledger", "--set",
			"plugin_dir=/opt/types", "--singleton", "books=ledger", NULL};
	config_defaults(&c);
	/* without the types known, parsing leaves them to the caller */
	cr_assert_eq(config_parse_args(&c, 10, args, known_types, NULL, err), 0, "%s", err);
	cr_assert_str_eq(c.plugin_dir, "/opt/types");
	cr_assert_eq(c.ntypes, 2);
	cr_assert_eq(config_check_types(&c, known_types, err), -EINVAL);
	assert_err_has(err, "unknown entity type 'ledger'");

	/* the plugin_dir's type known: accepted */
	const char *with_ledger[] = {"counter", "kv", "session", "ledger", NULL};
	cr_assert_eq(config_check_types(&c, with_ledger, err), 0, "%s", err);

	/* a singleton named like a type that only plugin_dir brings */
	char *named_like[] = {"--name", "a@h", "--cookie", "c", "--types", "counter", "--singleton", "ledger=counter", NULL};
	config_defaults(&c);
	cr_assert_eq(config_parse_args(&c, 8, named_like, known_types, NULL, err), 0, "%s", err);
	cr_assert_eq(config_check_types(&c, with_ledger, err), -EINVAL);
	assert_err_has(err, "singleton ledger: the name is an entity type's");

	/* given known types, config_parse_args checks them itself */
	config_defaults(&c);
	cr_assert_eq(config_parse_args(&c, 10, args, known_types, known_types, err), -EINVAL);
	assert_err_has(err, "unknown entity type 'ledger'");
	config_defaults(&c);
	cr_assert_eq(config_parse_args(&c, 10, args, known_types, with_ledger, err), 0, "%s", err);
}

Test(config, plugin_dir_key)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	config_defaults(&c);
	cr_assert_str_eq(c.plugin_dir, "", "none by default");
	cr_assert_eq(config_set(&c, "plugin_dir=/srv/my types", err), 0, "%s", err);
	cr_assert_str_eq(c.plugin_dir, "/srv/my types");
	const char text[] = "{plugin_dir, \"/opt/x\"}.\n";
	cr_assert_eq(config_apply_text(&c, text, sizeof text - 1, "f", err), 0, "%s", err);
	cr_assert_str_eq(c.plugin_dir, "/opt/x");
}

/* The names a type may have: what --types accepts, and what a node takes
 * from its host's list of types written in Erlang. */
Test(config, valid_type_names)
{
	static const char *const good[] = {"counter", "cart", "a", "user_cart2", "x_1_y"};
	static const char *const bad[] = {"", "Cart", "_cart", "1cart", "cart-x", "../x", "caf\xc3\xa9", "a b",
					  "cart/x"};
	for (size_t k = 0; k < sizeof good / sizeof good[0]; k++)
		cr_assert(config_valid_type_name(good[k]), "%s", good[k]);
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
		cr_assert_not(config_valid_type_name(bad[k]), "%s", bad[k]);
}

/* A type that is both a C type and an Erlang one says where each came
 * from: the default types or --types, and --host-types. */
Test(config, a_type_both_c_and_erlang_names_both_places)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--host", "b@h", "--host-types", "counter"),
		     -EINVAL);
	assert_err_has(err, "type 'counter' is both a C type (one of the default types counter,kv) and an Erlang "
			    "type (--host-types");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--types", "cart", "--host", "b@h",
			   "--host-types", "cart"),
		     -EINVAL);
	assert_err_has(err, "type 'cart' is both a C type (--types) and an Erlang type");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--types", "kv,kv"), -EINVAL);
	assert_err_has(err, "--types: 'kv' given twice");
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--types", "kv", "--host", "b@h", "--host-types",
			   "cart,cart"),
		     -EINVAL);
	assert_err_has(err, "--host-types: 'cart' given twice");
}

/* --types with an empty list: none of the built-in types (types => [] in
 * the wrapper), where no --types means the defaults. */
Test(config, an_empty_types_list_hosts_no_builtin_type)
{
	struct sn_config c;
	char err[CONFIG_ERR_BUF];
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--types", ""), 0, "%s", err);
	cr_assert_eq(c.ntypes, 0u);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--types", "", "--host", "b@h", "--host-types",
			   "cart"),
		     0, "%s", err);
	cr_assert_eq(c.ntypes, 1u);
	cr_assert_str_eq(c.types[0], "cart");
	cr_assert(c.type_on_host[0]);
	cr_assert_eq(PARSE(&c, err, "--name", "a@h", "--cookie", "c", "--types", "kv,"), -EINVAL);
}
