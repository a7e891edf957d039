/*
 * process_stats.h — this process's CPU time, memory and descriptors, read
 * from /proc (Linux), for the standard `process_` metrics that Prometheus
 * clients export.
 */
#ifndef SN_PROCESS_STATS_H
#define SN_PROCESS_STATS_H

#include <stdint.h>

struct process_stats {
	uint64_t cpu_ns;          /* user and system CPU time */
	uint64_t resident_bytes;
	uint64_t virtual_bytes;
	uint64_t open_fds;
	uint64_t max_fds;         /* the soft limit */
	uint64_t start_time_s;    /* since the epoch */
};

/* Fills *out from /proc/self/stat, /proc/self/fd, /proc/stat and the fd
 * limit; reads with open/read into stack buffers (no allocation but
 * opendir's). Returns 0, or a negative errno when /proc/self/stat cannot
 * be read (*out then holds what could be read, zero elsewhere). */
int process_stats_read(struct process_stats *out);

#endif
