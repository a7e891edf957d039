/*
 * log.h — one-line log records on a stream.
 *
 * Each record is "LEVEL time node: text". There is no global logger: every
 * object that logs holds a pointer to the node's `struct logger`, so tests can
 * give each object its own stream and level.
 */
#ifndef SN_LOG_H
#define SN_LOG_H

#include <stdio.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

struct logger {
	enum log_level min_level; /* records below this level are dropped */
	FILE *out;                /* not owned; stderr in the node */
	const char *node;         /* not owned; printed in every record, may be NULL */
};

/* Writes one record if `level` >= lg->min_level. lg may be NULL: nothing is
 * written. Never fails visibly: a short write to the stream is ignored. */
void log_at(const struct logger *lg, enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_debug(lg, ...) log_at((lg), LOG_DEBUG, __VA_ARGS__)
#define log_info(lg, ...) log_at((lg), LOG_INFO, __VA_ARGS__)
#define log_warn(lg, ...) log_at((lg), LOG_WARN, __VA_ARGS__)
#define log_error(lg, ...) log_at((lg), LOG_ERROR, __VA_ARGS__)

/* Parses "debug" | "info" | "warn" | "error". Returns 0, or -EINVAL. */
int log_level_parse(const char *text, enum log_level *out);

#endif
