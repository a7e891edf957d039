/* process_stats.c — see process_stats.h. */
#include "base/process_stats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* The file's first bytes, NUL-terminated. Returns their length or -errno. */
static long read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = 0;
	while (n + 1 < cap) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	return (long)n;
}

/* The boot time, seconds since the epoch ("btime" of /proc/stat); 0 if
 * unknown. */
static uint64_t boot_time_s(void)
{
	char buf[8192];
	if (read_small("/proc/stat", buf, sizeof buf) <= 0)
		return 0;
	const char *b = strstr(buf, "\nbtime ");
	return b ? strtoull(b + 7, NULL, 10) : 0;
}

int process_stats_read(struct process_stats *out)
{
	memset(out, 0, sizeof *out);
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		out->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	DIR *d = opendir("/proc/self/fd");
	if (d != NULL) {
		struct dirent *de;
		while ((de = readdir(d)) != NULL)
			out->open_fds += de->d_name[0] != '.';
		out->open_fds--; /* the directory's own descriptor */
		closedir(d);
	}
	char buf[1024];
	long n = read_small("/proc/self/stat", buf, sizeof buf);
	if (n <= 0)
		return n < 0 ? (int)n : -EIO;
	/* The command name, field 2, is in parentheses and may hold spaces:
	 * the fields are counted from its closing one, which is field 2's end. */
	const char *p = strrchr(buf, ')');
	if (p == NULL)
		return -EIO;
	p++;
	unsigned long long f[25] = {0}; /* f[k]: field k + 1 of stat(5), from field 3 on */
	for (int k = 2; k < 25 && *p; k++) {
		while (*p == ' ')
			p++;
		char *end;
		f[k] = strtoull(p, &end, 10);
		if (end == p) /* field 3, the state, is a letter */
			while (*end && *end != ' ')
				end++;
		p = end;
	}
	long ticks = sysconf(_SC_CLK_TCK);
	long page = sysconf(_SC_PAGESIZE);
	if (ticks <= 0)
		ticks = 100;
	/* utime 14, stime 15, starttime 22, vsize 23, rss 24 */
	out->cpu_ns = (f[13] + f[14]) * (1000000000ull / (unsigned long long)ticks);
	out->virtual_bytes = f[22];
	out->resident_bytes = f[23] * (unsigned long long)(page > 0 ? page : 4096);
	uint64_t boot = boot_time_s();
	out->start_time_s = boot ? boot + f[21] / (unsigned long long)ticks : 0;
	return 0;
}
