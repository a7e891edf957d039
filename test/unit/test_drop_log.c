/*
 * test_drop_log.c — messages dropped, by reason: the first of each reason
 * is the caller's to log, the next ones are summed up in one line per
 * reason and interval, and every one is counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "etf/drop_log.h"

static int count_lines(char *text, size_t len, const char *needle)
{
	int n = 0;
	for (const char *p = text; p != NULL && p < text + len && (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

Test(drop_log, the_first_of_each_reason_then_one_line_per_interval)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct logger lg = {.min_level = LOG_DEBUG, .out = f};
	struct drop_log d;
	drop_log_init(&d, &lg, "region counter", LOG_WARN);

	cr_assert(drop_log_note(&d, "bad_cast"), "the first: the caller logs it");
	cr_assert_not(drop_log_note(&d, "bad_cast"));
	cr_assert(drop_log_note(&d, "buffer_full"), "another reason's first");
	for (int k = 0; k < 98; k++)
		cr_assert_not(drop_log_note(&d, "bad_cast"));
	cr_assert_eq(drop_log_total(&d, "bad_cast"), 100);
	cr_assert_eq(drop_log_total(&d, "buffer_full"), 1);
	cr_assert_eq(drop_log_total(&d, "never"), 0);

	drop_log_tick(&d, 20000);
	fflush(f);
	cr_assert_eq(count_lines(text, len, "region counter: 99 more messages dropped: bad_cast (100 in all)"), 1, "%s",
		     text);
	cr_assert_eq(count_lines(text, len, "buffer_full"), 0, "nothing more of it to say");

	/* within the interval: counted, not said */
	cr_assert_not(drop_log_note(&d, "bad_cast"));
	drop_log_tick(&d, 25000);
	fflush(f);
	cr_assert_eq(count_lines(text, len, "more messages dropped"), 1);
	drop_log_tick(&d, 30000);
	fflush(f);
	cr_assert_eq(count_lines(text, len, "region counter: 1 more messages dropped: bad_cast (101 in all)"), 1);
	/* nothing new: no line however long it is */
	drop_log_tick(&d, 90000);
	fflush(f);
	cr_assert_eq(count_lines(text, len, "more messages dropped"), 2);
	fclose(f);
	free(text);
}

Test(drop_log, reasons_beyond_the_limit_are_still_counted)
{
	struct drop_log d;
	drop_log_init(&d, NULL, "node", LOG_INFO);
	static const char *const reasons[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"};
	for (size_t k = 0; k < 10; k++)
		(void)drop_log_note(&d, reasons[k]);
	cr_assert_eq(d.nreasons, DROP_LOG_REASONS_MAX);
	uint64_t sum = 0;
	for (size_t k = 0; k < d.nreasons; k++)
		sum += d.reasons[k].total;
	cr_assert_eq(sum, 10, "every drop counted");
}
