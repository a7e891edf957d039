/* drop_log.c — see drop_log.h. */
#include "etf/drop_log.h"

#include <stdlib.h>
#include <string.h>

#include <ei.h>

#include "etf/term_print.h"

void drop_log_init(struct drop_log *d, const struct logger *log, const char *who, enum log_level level)
{
	memset(d, 0, sizeof *d);
	d->log = log;
	d->who = who;
	d->level = level;
}

static struct drop_log_reason *find(const struct drop_log *d, const char *reason)
{
	for (size_t k = 0; k < d->nreasons; k++)
		if (d->reasons[k].reason == reason || strcmp(d->reasons[k].reason, reason) == 0)
			return (struct drop_log_reason *)&d->reasons[k];
	return NULL;
}

bool drop_log_note(struct drop_log *d, const char *reason)
{
	struct drop_log_reason *r = find(d, reason);
	if (r == NULL) {
		if (d->nreasons == DROP_LOG_REASONS_MAX) {
			/* Callers name a handful of reasons: this is a bug of
			 * theirs, but the drop is still counted. */
			r = &d->reasons[DROP_LOG_REASONS_MAX - 1];
			r->total++;
			r->unlogged++;
			return false;
		}
		r = &d->reasons[d->nreasons++];
		r->reason = reason;
		r->total = 1;
		return true;
	}
	r->total++;
	r->unlogged++;
	return false;
}

void drop_log_drop(struct drop_log *d, const char *reason, const char *what, const char *term)
{
	if (!drop_log_note(d, reason))
		return;
	char *text = NULL;
	size_t i = 0;
	if (term != NULL && term_print(term, &i, 300, &text) != 0)
		text = NULL;
	log_at(d->log, d->level, "%s: %s: dropped (%s; the next ones are counted, a line each %d s): %s", d->who,
	       what, reason, DROP_LOG_INTERVAL_MS / 1000, text != NULL ? text : "");
	free(text);
}

void drop_log_tick(struct drop_log *d, uint64_t now_ms)
{
	if (now_ms - d->last_summary_ms < DROP_LOG_INTERVAL_MS)
		return;
	bool said = false;
	for (size_t k = 0; k < d->nreasons; k++) {
		struct drop_log_reason *r = &d->reasons[k];
		if (r->unlogged == 0)
			continue;
		log_at(d->log, d->level, "%s: %llu more messages dropped: %s (%llu in all)", d->who,
		       (unsigned long long)r->unlogged, r->reason, (unsigned long long)r->total);
		r->unlogged = 0;
		said = true;
	}
	if (said)
		d->last_summary_ms = now_ms;
}

uint64_t drop_log_count(const struct drop_log *d)
{
	uint64_t n = 0;
	for (size_t k = 0; k < d->nreasons; k++)
		n += d->reasons[k].total;
	return n;
}

uint64_t drop_log_total(const struct drop_log *d, const char *reason)
{
	const struct drop_log_reason *r = find(d, reason);
	return r != NULL ? r->total : 0;
}
