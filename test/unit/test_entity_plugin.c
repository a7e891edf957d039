/*
 * test_entity_plugin.c — loading entity types from a directory of shared
 * objects: files that are not loadable are skipped, a missing directory is
 * no error, and the example plugin priv/examples/account.so (built by `make`) loads
 * once, with later copies and names already taken skipped.
 *
 * A plugin resolves its ei calls against the executable that loads it (the
 * node is linked with -rdynamic for that). A test binary that does not
 * export ei cannot load it; the tests that need a real plugin then skip,
 * saying so.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "entity/entity_builtin.h"
#include "entity/entity_plugin.h"
#include "entity/entity_type.h"
#include "base/log.h"
#include "unit_helpers.h"

#define ACCOUNT_SO "priv/examples/account.so"

/* ---- helpers ---- */

struct tmpdir {
	char path[64];
};

static void tmpdir_make(struct tmpdir *d)
{
	strcpy(d->path, "/tmp/sn_plugin_XXXXXX");
	cr_assert_not_null(mkdtemp(d->path), "mkdtemp: %s", strerror(errno));
}

static void tmpdir_path(const struct tmpdir *d, const char *name, char *out, size_t outsz)
{
	cr_assert_lt((size_t)snprintf(out, outsz, "%s/%s", d->path, name), outsz);
}

static void write_file(const struct tmpdir *d, const char *name, const void *bytes, size_t n)
{
	char path[PATH_MAX];
	tmpdir_path(d, name, path, sizeof path);
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fwrite(bytes, 1, n, f), n);
	cr_assert_eq(fclose(f), 0);
}

static void copy_in(const struct tmpdir *d, const char *from, const char *name)
{
	FILE *f = fopen(from, "rb");
	cr_assert_not_null(f, "%s: %s", from, strerror(errno));
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	long n = ftell(f);
	cr_assert_gt(n, 0);
	rewind(f);
	char *buf = malloc((size_t)n);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	write_file(d, name, buf, (size_t)n);
	free(buf);
}

/* Removes the directory and what is in it (files and empty directories). */
static void tmpdir_remove(const struct tmpdir *d)
{
	DIR *dir = opendir(d->path);
	cr_assert_not_null(dir);
	struct dirent *de;
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char path[PATH_MAX];
		tmpdir_path(d, de->d_name, path, sizeof path);
		if (unlink(path) != 0)
			cr_assert_eq(rmdir(path), 0, "%s: %s", path, strerror(errno));
	}
	closedir(dir);
	cr_assert_eq(rmdir(d->path), 0);
}

/* A logger writing to a temporary file, read back with log_text. */
struct capture {
	struct logger log;
	char *text;
};

static void capture_start(struct capture *c)
{
	c->log = (struct logger){.min_level = LOG_DEBUG, .out = tmpfile(), .node = "test@127.0.0.1"};
	c->text = NULL;
	cr_assert_not_null(c->log.out);
}

static const char *capture_text(struct capture *c)
{
	free(c->text);
	cr_assert_eq(fflush(c->log.out), 0);
	long n = ftell(c->log.out);
	cr_assert_geq(n, 0);
	c->text = calloc(1, (size_t)n + 1);
	cr_assert_not_null(c->text);
	rewind(c->log.out);
	cr_assert_eq(fread(c->text, 1, (size_t)n, c->log.out), (size_t)n);
	return c->text;
}

static void capture_end(struct capture *c)
{
	fclose(c->log.out);
	free(c->text);
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* Skips the test unless priv/examples/account.so exists and this process can load
 * it (its ei references resolve). */
static void need_account_plugin(void)
{
	if (access(ACCOUNT_SO, R_OK) != 0)
		cr_skip_test("%s not found (run `make` from the repository root first)", ACCOUNT_SO);
	char path[PATH_MAX];
	cr_assert_not_null(realpath(ACCOUNT_SO, path));
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *why = dlerror();
		if (why != NULL && strstr(why, "undefined symbol") != NULL)
			cr_skip_test("%s cannot be loaded by this binary, which does not export ei "
				     "(link it with -rdynamic and the whole of libei): %s",
				     ACCOUNT_SO, why);
		cr_assert_fail("dlopen %s: %s", path, why ? why : "?");
	}
	dlclose(h);
}

static enum entity_after call(const struct entity_type *t, void *state, const char *fmt, ei_x_buff *reply)
{
	ei_x_buff msg;
	sn_x_new(&msg);
	cr_assert_eq(ei_x_format_wo_ver(&msg, fmt), 0);
	char *m = sn_dup_exact(msg.buff, (size_t)msg.index);
	sn_x_new(reply);
	enum entity_after after = t->handle(state, m, (size_t)msg.index, reply);
	free(m);
	ei_x_free(&msg);
	return after;
}

static long long call_int(const struct entity_type *t, void *state, const char *fmt)
{
	ei_x_buff r;
	cr_assert_not(entity_after_stops(call(t, state, fmt, &r)), "%s keeps the entity", fmt);
	int i = 0;
	long long v;
	cr_assert_eq(ei_decode_longlong(r.buff, &i, &v), 0, "%s: an integer reply", fmt);
	cr_assert_eq(i, r.index);
	ei_x_free(&r);
	return v;
}

/* ---- directories without loadable plugins ---- */

Test(entity_plugin, junk_is_skipped)
{
	struct tmpdir d;
	tmpdir_make(&d);
	/* Random bytes named like a plugin. */
	unsigned char junk[4096];
	uint32_t x = 0x12345678;
	for (size_t k = 0; k < sizeof junk; k++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		junk[k] = (unsigned char)x;
	}
	write_file(&d, "junk.so", junk, sizeof junk);
	/* An ELF magic followed by junk, and an empty file. */
	memcpy(junk, "\177ELF\2\1\1", 7);
	write_file(&d, "elfish.so", junk, sizeof junk);
	write_file(&d, "empty.so", "", 0);
	/* A directory named like a plugin. */
	char sub[PATH_MAX];
	tmpdir_path(&d, "dir.so", sub, sizeof sub);
	cr_assert_eq(mkdir(sub, 0700), 0);
	/* Names that are not *.so are never opened. */
	write_file(&d, ".so", junk, 16);
	write_file(&d, "junk.so.1", junk, 16);
	write_file(&d, "junk.SO", junk, 16);
	write_file(&d, "junkso", junk, 16);

	struct capture c;
	capture_start(&c);
	struct entity_plugins p;
	memset(&p, 0xAA, sizeof p);
	entity_plugins_load(&p, d.path, entity_builtin_types(), &c.log);
	cr_assert_eq(p.count, 0);
	cr_assert_null(p.types[0]);
	const char *log = capture_text(&c);
	cr_assert_eq(count_of(log, "not loaded"), 4, "junk, elfish, empty, dir: %s", log);
	cr_assert_not_null(strstr(log, "junk.so not loaded"), "%s", log);
	cr_assert_null(strstr(log, "junk.so.1"), "%s", log);
	cr_assert_null(strstr(log, "junkso"), "%s", log);
	cr_assert_null(strstr(log, "SO"), "%s", log);
	entity_plugins_free(&p);
	cr_assert_eq(p.count, 0);
	capture_end(&c);
	tmpdir_remove(&d);
}

Test(entity_plugin, no_plugins_in_dir)
{
	struct tmpdir d;
	tmpdir_make(&d);
	write_file(&d, "README", "nothing here\n", 13);
	write_file(&d, "shardnode", "\177ELF", 4);

	struct capture c;
	capture_start(&c);
	struct entity_plugins p;
	entity_plugins_load(&p, d.path, NULL, &c.log);
	cr_assert_eq(p.count, 0);
	cr_assert_null(p.types[0]);
	cr_assert_str_eq(capture_text(&c), "", "nothing to say");
	entity_plugins_free(&p);
	capture_end(&c);

	/* An empty directory, and no logger at all. */
	char empty[PATH_MAX];
	tmpdir_path(&d, "empty", empty, sizeof empty);
	cr_assert_eq(mkdir(empty, 0700), 0);
	entity_plugins_load(&p, empty, NULL, NULL);
	cr_assert_eq(p.count, 0);
	entity_plugins_free(&p);
	tmpdir_remove(&d);
}

Test(entity_plugin, missing_dir)
{
	struct capture c;
	capture_start(&c);
	struct entity_plugins p;
	memset(&p, 0x55, sizeof p);
	entity_plugins_load(&p, "/nonexistent/shardnode/priv", entity_builtin_types(), &c.log);
	cr_assert_eq(p.count, 0);
	cr_assert_null(p.types[0]);
	cr_assert_str_eq(capture_text(&c), "", "a missing directory is not an error");
	entity_plugins_free(&p);

	/* A path that is a file, not a directory. */
	struct tmpdir d;
	tmpdir_make(&d);
	write_file(&d, "file", "x", 1);
	char file[PATH_MAX];
	tmpdir_path(&d, "file", file, sizeof file);
	entity_plugins_load(&p, file, NULL, &c.log);
	cr_assert_eq(p.count, 0);
	entity_plugins_free(&p);
	tmpdir_remove(&d);
	capture_end(&c);
}

Test(entity_plugin, exe_dir)
{
	char dir[PATH_MAX];
	cr_assert_eq(entity_plugins_exe_dir(dir, sizeof dir), 0);
	cr_assert_eq(dir[0], '/', "absolute: %s", dir);
	struct stat st;
	cr_assert_eq(stat(dir, &st), 0, "%s", dir);
	cr_assert(S_ISDIR(st.st_mode));

	/* A buffer too small for the path is an error, not a cut-off path. */
	char small[4];
	cr_assert_lt(entity_plugins_exe_dir(small, sizeof small), 0);
	size_t n = strlen(dir);
	char *exact = malloc(n + 1);
	cr_assert_not_null(exact);
	cr_assert_lt(entity_plugins_exe_dir(exact, n + 1), 0, "room for the directory but not the file name");
	free(exact);
}

/* ---- the account example plugin ---- */

Test(entity_plugin, account_loads_and_handles)
{
	need_account_plugin();
	struct tmpdir d;
	tmpdir_make(&d);
	copy_in(&d, ACCOUNT_SO, "account.so");
	write_file(&d, "junk.so", "not an ELF file", 15);

	struct capture c;
	capture_start(&c);
	struct entity_plugins p;
	entity_plugins_load(&p, d.path, entity_builtin_types(), &c.log);
	cr_assert_eq(p.count, 1, "log: %s", capture_text(&c));
	cr_assert_null(p.types[1]);
	const struct entity_type *t = p.types[0];
	cr_assert_str_eq(t->name, "account");
	cr_assert_eq(t->api_version, ENTITY_API_VERSION);
	cr_assert(entity_type_keeps_state(t), "the example implements API v2");
	cr_assert_not_null(t->handle);
	cr_assert_gt(t->state_size, 0);
	cr_assert_not_null(p.handles[0]);
	const char *log = capture_text(&c);
	cr_assert_not_null(strstr(log, "entity type account loaded from"), "%s", log);
	cr_assert_not_null(strstr(log, "junk.so not loaded"), "%s", log);

	void *state = calloc(1, t->state_size);
	cr_assert_not_null(state);
	if (t->start)
		cr_assert_eq(t->start(state, "j", 1), 0);
	cr_assert_eq(call_int(t, state, "{deposit, 5}"), 5);
	cr_assert_eq(call_int(t, state, "{deposit, 10}"), 15);
	cr_assert_eq(call_int(t, state, "{withdraw, 4}"), 11);
	cr_assert_eq(call_int(t, state, "balance"), 11);
	ei_x_buff r;
	cr_assert_eq(call(t, state, "{deposit, 1}", &r), ENTITY_CONTINUE | ENTITY_CHANGED, "a deposit changes it");
	ei_x_free(&r);
	cr_assert_eq(call(t, state, "balance", &r), ENTITY_CONTINUE, "reading changes nothing");
	ei_x_free(&r);
	/* API v2: the balance as a term, restored into a fresh state. */
	ei_x_buff st;
	sn_x_new(&st);
	cr_assert_eq(t->encode_state(state, &st), 0);
	void *copy = calloc(1, t->state_size);
	cr_assert_not_null(copy);
	cr_assert_eq(t->decode_state(copy, st.buff, (size_t)st.index), 0);
	cr_assert_eq(call_int(t, copy, "balance"), 12);
	cr_assert_eq(t->decode_state(copy, "\x64\x00\x01x", 4), -EPROTO, "an atom is no balance");
	free(copy);
	ei_x_free(&st);
	cr_assert_eq(call(t, state, "{withdraw, 100}", &r), ENTITY_CONTINUE, "a refused withdrawal changes nothing");
	char *text = NULL;
	int i = 0;
	cr_assert_geq(ei_s_print_term(&text, r.buff, &i), 0);
	cr_assert_str_eq(text, "{error, insufficient_funds}");
	free(text);
	ei_x_free(&r);
	if (t->stop)
		t->stop(state);
	free(state);

	entity_plugins_free(&p);
	cr_assert_eq(p.count, 0);
	cr_assert_null(p.types[0]);
	capture_end(&c);
	tmpdir_remove(&d);
}

Test(entity_plugin, second_copy_is_skipped)
{
	need_account_plugin();
	struct tmpdir d;
	tmpdir_make(&d);
	copy_in(&d, ACCOUNT_SO, "account.so");
	copy_in(&d, ACCOUNT_SO, "account_copy.so");

	struct capture c;
	capture_start(&c);
	struct entity_plugins p;
	entity_plugins_load(&p, d.path, entity_builtin_types(), &c.log);
	const char *log = capture_text(&c);
	cr_assert_eq(p.count, 1, "one account type: %s", log);
	cr_assert_str_eq(p.types[0]->name, "account");
	cr_assert_null(p.types[1]);
	cr_assert_eq(count_of(log, "entity type account loaded"), 1, "%s", log);
	cr_assert_eq(count_of(log, "a type of that name already exists"), 1, "%s", log);

	/* The copy that loaded is the one still usable. */
	void *state = calloc(1, p.types[0]->state_size);
	cr_assert_not_null(state);
	cr_assert_eq(call_int(p.types[0], state, "{deposit, 5}"), 5);
	free(state);
	entity_plugins_free(&p);
	capture_end(&c);
	tmpdir_remove(&d);
}

static enum entity_after taken_handle(void *state, const char *msg, size_t len, ei_x_buff *reply)
{
	(void)state;
	(void)msg;
	(void)len;
	ei_x_encode_atom(reply, "builtin");
	return ENTITY_CONTINUE;
}

Test(entity_plugin, taken_name_is_skipped)
{
	need_account_plugin();
	struct tmpdir d;
	tmpdir_make(&d);
	copy_in(&d, ACCOUNT_SO, "account.so");

	static const struct entity_type compiled_account = {
		.api_version = ENTITY_API_VERSION, .name = "account", .handle = taken_handle};
	const struct entity_type *const *builtins = entity_builtin_types();
	const struct entity_type *taken[8];
	size_t n = 0;
	for (; builtins[n] && n < 6; n++)
		taken[n] = builtins[n];
	taken[n++] = &compiled_account;
	taken[n] = NULL;

	struct capture c;
	capture_start(&c);
	struct entity_plugins p;
	entity_plugins_load(&p, d.path, taken, &c.log);
	const char *log = capture_text(&c);
	cr_assert_eq(p.count, 0, "%s", log);
	cr_assert_null(p.types[0]);
	cr_assert_not_null(strstr(log, "a type of that name already exists"), "%s", log);
	entity_plugins_free(&p);

	/* The same directory with the name free loads it. */
	entity_plugins_load(&p, d.path, builtins, &c.log);
	cr_assert_eq(p.count, 1);
	entity_plugins_free(&p);
	capture_end(&c);
	tmpdir_remove(&d);
}

/* plugin_dir: a second directory adds to the first; a type already loaded
 * from the first is skipped; a directory that cannot be opened is an error
 * the caller sees, and adds nothing. */
Test(entity_plugin, add_dir_appends_and_reports_a_missing_dir)
{
	need_account_plugin();
	struct tmpdir first, second;
	tmpdir_make(&first);
	tmpdir_make(&second);
	copy_in(&first, ACCOUNT_SO, "account.so");
	copy_in(&second, ACCOUNT_SO, "account_again.so");
	write_file(&second, "junk.so", "not an ELF file", 15);

	struct capture c;
	capture_start(&c);
	struct entity_plugins p;
	entity_plugins_load(&p, first.path, entity_builtin_types(), &c.log);
	cr_assert_eq(p.count, 1);
	cr_assert_eq(entity_plugins_add_dir(&p, second.path, entity_builtin_types(), &c.log), 0);
	const char *log = capture_text(&c);
	cr_assert_eq(p.count, 1, "the account of the first directory stays the only one: %s", log);
	cr_assert_null(p.types[1]);
	cr_assert_not_null(strstr(log, "account_again.so skipped: a type of that name already exists"), "%s", log);
	cr_assert_not_null(strstr(log, "junk.so not loaded"), "%s", log);

	cr_assert_eq(entity_plugins_add_dir(&p, "/nonexistent/shardnode/types", NULL, &c.log), -ENOENT);
	char file[PATH_MAX];
	tmpdir_path(&second, "junk.so", file, sizeof file);
	cr_assert_eq(entity_plugins_add_dir(&p, file, NULL, &c.log), -ENOTDIR);
	cr_assert_eq(p.count, 1);
	entity_plugins_free(&p);

	/* into an empty set, the second directory's copy is the one loaded */
	memset(&p, 0, sizeof p);
	cr_assert_eq(entity_plugins_add_dir(&p, second.path, entity_builtin_types(), &c.log), 0);
	cr_assert_eq(p.count, 1);
	cr_assert_str_eq(p.types[0]->name, "account");
	entity_plugins_free(&p);
	capture_end(&c);
	tmpdir_remove(&first);
	tmpdir_remove(&second);
}
