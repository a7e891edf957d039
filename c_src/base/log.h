/*
 * log.h — log records, one line each, in logfmt:
 *
 *   ts=2026-11-25T12:00:00.123Z level=info node=a@h msg="region up" type=counter shard=3
 *
 * ts is UTC; level is debug, info, warning or error; msg is always quoted
 * (`"` and `\` escaped with a backslash, control characters as \n, \t or
 * \xNN); type and shard appear where the record is about one. A record is
 * written with one write to its stream, at most LOG_RECORD_MAX bytes (a
 * longer message is cut and ends in "..."), so records of several nodes
 * sharing a terminal or pipe never interleave.
 *
 * There is no global logger: every object that logs holds a pointer to a
 * `struct logger`, so tests can give each object its own stream and level.
 * The node's logger is a root (stream, level, node name); a part that logs
 * about one entity type holds a child whose records carry type=.
 */
#ifndef SN_LOG_H
#define SN_LOG_H

#include <stdio.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Bytes of one record, its newline included: PIPE_BUF, the most one write
 * to a pipe keeps whole. */
#define LOG_RECORD_MAX 4096

struct logger {
	/* A root: records below min_level are dropped (change it with
	 * log_set_level while other threads log); out is not owned (stderr in
	 * the node; NULL: nothing is written); node, not owned, is the node=
	 * field (omitted when NULL). */
	enum log_level min_level;
	FILE *out;
	const char *node;
	/* A child: parent is the root whose stream, level and node it uses
	 * (its own three fields are ignored); type, not owned, is its type=
	 * field. A root has parent NULL (and may have a type too). */
	const struct logger *parent;
	const char *type;
};

/* Writes one record if `level` is at or above the root's level. lg may be
 * NULL: nothing is written. Never fails visibly: a failed write is ignored. */
void log_at(const struct logger *lg, enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* As log_at, with the field shard=`shard`. */
void log_at_shard(const struct logger *lg, enum log_level level, unsigned long shard, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define log_debug(lg, ...) log_at((lg), LOG_DEBUG, __VA_ARGS__)
#define log_info(lg, ...) log_at((lg), LOG_INFO, __VA_ARGS__)
#define log_warn(lg, ...) log_at((lg), LOG_WARN, __VA_ARGS__)
#define log_error(lg, ...) log_at((lg), LOG_ERROR, __VA_ARGS__)

/* Sets a root's level; safe while other threads log through it. */
void log_set_level(struct logger *root, enum log_level level);

/* A root's level (a child's: its root's). */
enum log_level log_get_level(const struct logger *lg);

/* Parses "debug" | "info" | "warning" (or "warn") | "error". Returns 0, or
 * -EINVAL. */
int log_level_parse(const char *text, enum log_level *out);

/* The level's name as records and set_log_level spell it: "debug",
 * "info", "warning", "error". */
const char *log_level_name(enum log_level level);

#endif
