/*
 * metrics_page.h — the node's metrics page in the Prometheus text format
 * (docs/metrics.md says what each metric means): what the parts of a
 * node_app count, gathered when a scrape asks, and the standard
 * `process_` metrics.
 *
 * The parts keep plain counters and histograms on the loop (no locks, no
 * allocation on their paths); this reads them on the loop, so a page is
 * one consistent moment.
 */
#ifndef SN_METRICS_PAGE_H
#define SN_METRICS_PAGE_H

#include "base/bytebuf.h"

/* An http_render_fn (base/http_server.h): appends the page of the
 * node_app `arg` to out. Returns 0 or -ENOMEM. */
int metrics_page_render(void *arg, struct bytebuf *out);

#endif
