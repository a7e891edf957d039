/* log.c — see log.h. */
#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR"};

void log_at(const struct logger *lg, enum log_level level, const char *fmt, ...)
{
	if (lg == NULL || lg->out == NULL || level < lg->min_level)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char stamp[32];
	strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);

	/* One fprintf per part, but under the stream lock so a record is never
	 * split by another thread's output (resolver threads may log). */
	flockfile(lg->out);
	fprintf(lg->out, "%-5s %s.%03ld %s: ", level_names[level], stamp,
		ts.tv_nsec / 1000000, lg->node ? lg->node : "shardnode");
	va_list ap;
	va_start(ap, fmt);
	vfprintf(lg->out, fmt, ap);
	va_end(ap);
	fputc('\n', lg->out);
	funlockfile(lg->out);
	fflush(lg->out);
}

int log_level_parse(const char *text, enum log_level *out)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	for (int i = 0; i < 4; i++) {
		if (strcmp(text, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}
