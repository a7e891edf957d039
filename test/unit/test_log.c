/* Unit tests for base/log: the logfmt record, its escapes, the cut of a
 * record too long, child loggers, levels. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base/log.h"

/* A root logger writing to a memory stream. */
struct sink {
	char *text;
	size_t len;
	FILE *f;
	struct logger root;
};

static void sink_open(struct sink *s, enum log_level level, const char *node)
{
	s->text = NULL;
	s->len = 0;
	s->f = open_memstream(&s->text, &s->len);
	cr_assert_not_null(s->f);
	s->root = (struct logger){.min_level = level, .out = s->f, .node = node};
}

/* What was written, from the first byte after `ts=…Z `. */
static const char *sink_after_ts(struct sink *s)
{
	fflush(s->f);
	cr_assert(strncmp(s->text, "ts=", 3) == 0, "%s", s->text);
	const char *sp = strchr(s->text, ' ');
	cr_assert_not_null(sp);
	cr_assert_eq(sp[-1], 'Z', "UTC: %s", s->text);
	return sp + 1;
}

static void sink_close(struct sink *s)
{
	fclose(s->f);
	free(s->text);
}

/* Empties the sink; the root keeps its address, level and node. */
static void sink_reset(struct sink *s)
{
	enum log_level level = log_get_level(&s->root);
	const char *node = s->root.node;
	sink_close(s);
	sink_open(s, level, node);
}

Test(log, a_record_is_one_logfmt_line)
{
	struct sink s;
	sink_open(&s, LOG_DEBUG, "a@127.0.0.1");
	log_info(&s.root, "region %s up: %d shards", "counter", 10);
	fflush(s.f);
	/* ts=YYYY-MM-DDTHH:MM:SS.mmmZ */
	cr_assert_eq(strlen(s.text) > 27 && s.text[7] == '-' && s.text[13] == 'T' && s.text[22] == '.', 1, "%s",
		     s.text);
	cr_assert_str_eq(sink_after_ts(&s), "level=info node=a@127.0.0.1 msg=\"region counter up: 10 shards\"\n");
	sink_close(&s);
}

Test(log, levels_are_named_and_filtered)
{
	struct sink s;
	sink_open(&s, LOG_WARN, NULL);
	log_debug(&s.root, "d");
	log_info(&s.root, "i");
	fflush(s.f);
	cr_assert_eq(s.len, 0, "below the level: nothing");
	log_warn(&s.root, "w");
	cr_assert_str_eq(sink_after_ts(&s), "level=warning msg=\"w\"\n", "no node: no node field");
	sink_reset(&s);
	log_error(&s.root, "e");
	cr_assert_str_eq(sink_after_ts(&s), "level=error msg=\"e\"\n");
	sink_reset(&s);

	log_set_level(&s.root, LOG_DEBUG);
	cr_assert_eq(log_get_level(&s.root), LOG_DEBUG);
	log_debug(&s.root, "d");
	cr_assert_str_eq(sink_after_ts(&s), "level=debug msg=\"d\"\n");
	sink_close(&s);

	log_info(NULL, "a NULL logger writes nothing");
	struct logger closed = {.min_level = LOG_DEBUG, .out = NULL};
	log_error(&closed, "no stream: nothing");
}

Test(log, msg_escapes)
{
	struct sink s;
	sink_open(&s, LOG_DEBUG, NULL);
	log_info(&s.root, "q\"uote b\\ack\nnew\ttab \x01\x7f end");
	cr_assert_str_eq(sink_after_ts(&s), "level=info msg=\"q\\\"uote b\\\\ack\\nnew\\ttab \\x01\\x7f end\"\n");
	sink_reset(&s);
	log_info(&s.root, "%s", "");
	cr_assert_str_eq(sink_after_ts(&s), "level=info msg=\"\"\n");
	sink_close(&s);
}

Test(log, a_child_adds_type_and_uses_its_roots_level)
{
	struct sink s;
	sink_open(&s, LOG_INFO, "n@h");
	struct logger child = {.parent = &s.root, .type = "counter", .min_level = LOG_DEBUG};
	log_debug(&child, "below the root's level");
	fflush(s.f);
	cr_assert_eq(s.len, 0);
	log_info(&child, "up");
	cr_assert_str_eq(sink_after_ts(&s), "level=info node=n@h msg=\"up\" type=counter\n");
	sink_reset(&s);
	log_at_shard(&child, LOG_WARN, 42, "move of shard %d abandoned", 42);
	cr_assert_str_eq(sink_after_ts(&s), "level=warning node=n@h msg=\"move of shard 42 abandoned\" type=counter shard=42\n");
	sink_reset(&s);
	log_at_shard(&s.root, LOG_INFO, 0, "no type");
	cr_assert_str_eq(sink_after_ts(&s), "level=info node=n@h msg=\"no type\" shard=0\n");
	sink_reset(&s);
	/* a name that cannot stand bare is quoted */
	struct logger odd = {.parent = &s.root, .type = "a b"};
	log_info(&odd, "x");
	cr_assert_str_eq(sink_after_ts(&s), "level=info node=n@h msg=\"x\" type=\"a b\"\n");
	log_set_level(&s.root, LOG_ERROR);
	cr_assert_eq(log_get_level(&child), LOG_ERROR, "a child reads its root's level");
	sink_close(&s);
}

/* Every length of message around the limit: the record is at most
 * LOG_RECORD_MAX bytes, one line, ends in `..."` + tail when cut, and a cut
 * never splits an escape. */
Test(log, a_long_record_is_cut_whole)
{
	struct sink s;
	sink_open(&s, LOG_DEBUG, "n@h");
	struct logger child = {.parent = &s.root, .type = "counter"};
	char *msg = malloc(2 * LOG_RECORD_MAX);
	cr_assert_not_null(msg);
	for (size_t n = LOG_RECORD_MAX - 200; n < LOG_RECORD_MAX + 10; n++) {
		for (int quotes = 0; quotes < 2; quotes++) {
			for (size_t k = 0; k < n; k++)
				msg[k] = quotes && k % 3 == 0 ? '"' : 'm';
			msg[n] = '\0';
			sink_reset(&s);
			log_at_shard(&child, LOG_INFO, 7, "%s", msg);
			fflush(s.f);
			size_t len = strlen(s.text);
			cr_assert_leq(len, LOG_RECORD_MAX, "n=%zu: %zu bytes", n, len);
			cr_assert_eq(s.text[len - 1], '\n');
			cr_assert_null(memchr(s.text, '\n', len - 1), "one line");
			const char *tail = "\" type=counter shard=7\n";
			cr_assert_str_eq(s.text + len - strlen(tail), tail, "n=%zu: the tail is whole", n);
			const char *body = strstr(s.text, "msg=\"") + 5;
			size_t blen = (size_t)(s.text + len - strlen(tail) - body);
			bool cut = blen >= 3 && memcmp(body + blen - 3, "...", 3) == 0;
			size_t escaped = quotes ? n + (n + 2) / 3 : n;
			if (!cut)
				cr_assert_eq(blen, escaped, "n=%zu: not cut, so whole", n);
			else
				cr_assert_lt(blen - 3, escaped, "n=%zu", n);
			/* backslashes before the cut come in pairs with a quote: \" */
			for (size_t k = 0; k + 3 < blen; k++)
				if (body[k] == '\\')
					cr_assert_eq(body[++k], '"', "n=%zu: an escape split at %zu", n, k);
		}
	}
	free(msg);
	sink_close(&s);
}

Test(log, level_names_parse)
{
	enum log_level l;
	static const struct {
		const char *text;
		enum log_level level;
	} ok[] = {{"debug", LOG_DEBUG}, {"info", LOG_INFO}, {"warning", LOG_WARN}, {"warn", LOG_WARN}, {"error", LOG_ERROR}};
	for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
		cr_assert_eq(log_level_parse(ok[k].text, &l), 0, "%s", ok[k].text);
		cr_assert_eq(l, ok[k].level);
	}
	static const char *const bad[] = {"", "Info", "warnings", "notice", "critical", "debug "};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
		cr_assert_eq(log_level_parse(bad[k], &l), -EINVAL, "'%s'", bad[k]);
	cr_assert_str_eq(log_level_name(LOG_DEBUG), "debug");
	cr_assert_str_eq(log_level_name(LOG_WARN), "warning");
	cr_assert_str_eq(log_level_name(LOG_ERROR), "error");
}
