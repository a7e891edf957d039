/*
 * drop_log.h — messages a process could not route, counted by reason and
 * logged without flooding the log.
 *
 * Nothing a peer sends may vanish without a trace (docs/contract.md "Bad
 * input"), yet a peer that keeps sending garbage must not write a line per
 * message. So: the first message of each reason is logged at once by the
 * caller, with what it was (drop_log_note says when); later ones are only
 * counted, and drop_log_tick writes one line per reason and interval with
 * how many more there were. The counts by reason feed the metrics page.
 */
#ifndef SN_DROP_LOG_H
#define SN_DROP_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"

/* Reasons one drop_log tells apart; a reason beyond them is counted as
 * the last one seen. */
#define DROP_LOG_REASONS_MAX 8
/* At most one summary line per reason in this long. */
#define DROP_LOG_INTERVAL_MS 10000

struct drop_log_reason {
	const char *reason;  /* a string literal, kept by pointer */
	uint64_t total;      /* every drop of this reason */
	uint64_t unlogged;   /* since the last line about it */
};

struct drop_log {
	const struct logger *log; /* not owned */
	const char *who;          /* the process, for the lines: "region counter"; not owned */
	enum log_level level;     /* of the summary lines */
	uint64_t last_summary_ms;
	struct drop_log_reason reasons[DROP_LOG_REASONS_MAX];
	size_t nreasons;
};

/* An empty log for `who` (both borrowed for d's life), its summaries at
 * `level`. */
void drop_log_init(struct drop_log *d, const struct logger *log, const char *who, enum log_level level);

/* Counts one message dropped for `reason` (a string literal). Returns true
 * when it is the first of its reason: the caller logs it now, saying what
 * it was. */
bool drop_log_note(struct drop_log *d, const char *reason);

/* Counts one message dropped for `reason` (drop_log_note) and, when it is
 * the first of its reason, logs it at the log's level as
 * "<who>: <what>: dropped (<reason>; ...): <term>", the term (encoded,
 * validated, no version byte; may be NULL) printed as ~p prints it
 * (term_print.h), cut at 300 bytes. For callers whose first line needs nothing but the message. */
void drop_log_drop(struct drop_log *d, const char *reason, const char *what, const char *term);

/* Writes, once DROP_LOG_INTERVAL_MS have passed since the last time it
 * did, a line for each reason with drops not yet logged: "<who>: N more
 * messages dropped: <reason> (T in all)". Call it from a timer. */
void drop_log_tick(struct drop_log *d, uint64_t now_ms);

/* Drops of every reason so far. */
uint64_t drop_log_count(const struct drop_log *d);

/* Drops of `reason` so far (0 for a reason never seen). */
uint64_t drop_log_total(const struct drop_log *d, const char *reason);

#endif
