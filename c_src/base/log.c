/* log.c — see log.h. */
#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

static const char *const level_names[] = {"debug", "info", "warning", "error"};

static const struct logger *root_of(const struct logger *lg)
{
	while (lg->parent != NULL)
		lg = lg->parent;
	return lg;
}

/* Appends to a bounded buffer: *len grows by n if n bytes fit in `cap`,
 * else nothing is appended and false returned. */
static bool put(char *buf, size_t cap, size_t *len, const char *s, size_t n)
{
	if (n > cap - *len)
		return false;
	memcpy(buf + *len, s, n);
	*len += n;
	return true;
}

/* `s` escaped as the inside of a quoted logfmt value, as much of it as
 * fits in cap bytes; an escape is never split. Returns false if s was cut. */
static bool put_escaped(char *buf, size_t cap, size_t *len, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		char e[4];
		size_t n;
		if (ch == '"' || ch == '\\') {
			e[0] = '\\', e[1] = (char)ch, n = 2;
		} else if (ch == '\n' || ch == '\t') {
			e[0] = '\\', e[1] = ch == '\n' ? 'n' : 't', n = 2;
		} else if (ch < 0x20 || ch == 0x7f) {
			e[0] = '\\', e[1] = 'x', e[2] = hex[ch >> 4], e[3] = hex[ch & 15], n = 4;
		} else {
			e[0] = (char)ch, n = 1;
		}
		if (!put(buf, cap, len, e, n))
			return false;
	}
	return true;
}

/* A name-like value (node, type): bare when it can be, else quoted. */
static void put_value(char *buf, size_t cap, size_t *len, const char *s)
{
	bool bare = *s != '\0';
	for (const char *p = s; *p && bare; p++)
		bare = *p > ' ' && *p != '"' && *p != '=' && *p != '\\' && *p != 0x7f;
	if (bare) {
		put(buf, cap, len, s, strlen(s));
		return;
	}
	put(buf, cap, len, "\"", 1);
	put_escaped(buf, cap > 1 ? cap - 1 : 0, len, s);
	put(buf, cap, len, "\"", 1);
}

static void log_record(const struct logger *lg, enum log_level level, bool has_shard, unsigned long shard,
		       const char *fmt, va_list ap)
{
	if (lg == NULL)
		return;
	const struct logger *root = root_of(lg);
	if (root->out == NULL || level < log_get_level(root))
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char stamp[64];
	size_t sn = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp + sn, sizeof stamp - sn, ".%03ldZ", ts.tv_nsec / 1000000);

	/* ts, level, node: at most ~340 bytes (a node name is < 256). */
	char head[512];
	size_t hl = 0;
	put(head, sizeof head, &hl, "ts=", 3);
	put(head, sizeof head, &hl, stamp, strlen(stamp));
	put(head, sizeof head, &hl, " level=", 7);
	put(head, sizeof head, &hl, level_names[level], strlen(level_names[level]));
	if (root->node != NULL) {
		put(head, sizeof head, &hl, " node=", 6);
		put_value(head, sizeof head, &hl, root->node);
	}
	/* type and shard: short, and kept whole when msg is cut. */
	char tail[320];
	size_t tl = 0;
	const char *type = lg->type != NULL ? lg->type : root->type;
	if (type != NULL) {
		put(tail, sizeof tail, &tl, " type=", 6);
		put_value(tail, sizeof tail - 32, &tl, type);
	}
	if (has_shard) {
		char num[32];
		int n = snprintf(num, sizeof num, " shard=%lu", shard);
		put(tail, sizeof tail, &tl, num, (size_t)n);
	}

	char msg[LOG_RECORD_MAX];
	vsnprintf(msg, sizeof msg, fmt, ap);

	char rec[LOG_RECORD_MAX];
	size_t len = 0;
	put(rec, sizeof rec, &len, head, hl);
	put(rec, sizeof rec, &len, " msg=\"", 6);
	/* room for the message: all but the closing quote, "...", the tail
	 * and the newline */
	size_t cap = sizeof rec - 1 - 3 - tl - 1;
	if (!put_escaped(rec, cap, &len, msg) || strlen(msg) == sizeof msg - 1)
		put(rec, sizeof rec, &len, "...", 3);
	put(rec, sizeof rec, &len, "\"", 1);
	put(rec, sizeof rec, &len, tail, tl);
	put(rec, sizeof rec, &len, "\n", 1);

	/* One fwrite of the whole record: on an unbuffered stream (stderr)
	 * that is one write; the stream lock keeps threads' records apart. */
	flockfile(root->out);
	fwrite(rec, 1, len, root->out);
	fflush(root->out);
	funlockfile(root->out);
}

void log_at(const struct logger *lg, enum log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_record(lg, level, false, 0, fmt, ap);
	va_end(ap);
}

void log_at_shard(const struct logger *lg, enum log_level level, unsigned long shard, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_record(lg, level, true, shard, fmt, ap);
	va_end(ap);
}

void log_set_level(struct logger *root, enum log_level level)
{
	__atomic_store_n(&root->min_level, level, __ATOMIC_RELAXED);
}

enum log_level log_get_level(const struct logger *lg)
{
	return __atomic_load_n(&root_of(lg)->min_level, __ATOMIC_RELAXED);
}

int log_level_parse(const char *text, enum log_level *out)
{
	for (int i = 0; i < 4; i++) {
		if (strcmp(text, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	if (strcmp(text, "warn") == 0) {
		*out = LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

const char *log_level_name(enum log_level level)
{
	return level >= LOG_DEBUG && level <= LOG_ERROR ? level_names[level] : "info";
}
