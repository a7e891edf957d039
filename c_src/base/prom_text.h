/*
 * prom_text.h — the Prometheus text exposition format (version 0.0.4),
 * written into a byte buffer: a family's HELP and TYPE lines, samples, and
 * histograms with cumulative `le` buckets, `_sum` and `_count`.
 *
 * Numbers are formatted by hand (no printf): a page of ten thousand
 * series is written in well under a millisecond.
 */
#ifndef SN_PROM_TEXT_H
#define SN_PROM_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "base/bytebuf.h"
#include "base/histogram.h"

struct prom_text {
	struct bytebuf *out; /* not owned; appended to */
	int err;             /* 0, or -ENOMEM once an append failed: the page is incomplete */
};

/* "# HELP name help" and "# TYPE name type" (type: counter, gauge,
 * histogram). `help` must hold no newline or backslash. */
void prom_family(struct prom_text *p, const char *name, const char *type, const char *help);

/* One sample, `name{labels} v`. `labels` is the text between the braces
 * (built with prom_label), or NULL or "" for none. */
void prom_u64(struct prom_text *p, const char *name, const char *labels, uint64_t v);

/* As prom_u64, the value being `ns` nanoseconds written as seconds. */
void prom_seconds(struct prom_text *p, const char *name, const char *labels, uint64_t ns);

/* name_bucket{labels,le="…"} for every bound and +Inf (cumulative counts),
 * name_sum{labels} in seconds, name_count{labels}. */
void prom_histogram(struct prom_text *p, const char *name, const char *labels, const struct histogram *h);

/* Appends `key="value"` to the label text buf[0 .. *len) (a comma first
 * when it is not empty), the value escaped as the format wants (\\, \",
 * \n); keeps buf NUL-terminated. Returns 0, or -ENOSPC when it does not
 * fit in cap bytes (buf unchanged). */
int prom_label(char *buf, size_t cap, size_t *len, const char *key, const char *value);

#endif
