/*
 * pg_hosts.h — the hosts a libpq conninfo names (`host=a,b port=p,q`),
 * and a connection started with that list begun at another of them.
 *
 * Why: a connection made step by step (PQconnectPoll, as pg_conn makes
 * it) tries the hosts in order and ignores connect_timeout, so a first
 * host that drops the packets (cut off, not crashed) would hold every
 * attempt and the standby after it would never be tried. pg_conn bounds
 * each attempt itself and starts the next one past the host that hung.
 */
#ifndef SN_PG_HOSTS_H
#define SN_PG_HOSTS_H

#include <stdint.h>

#include <libpq-fe.h>

struct pg_hosts {
	PQconninfoOption *opts; /* the conninfo parsed; owned */
	uint32_t n;             /* entries of its host (or hostaddr) list; 1 when it names one or none */
};

/* Parses `conninfo`. Returns 0; -EINVAL with *why libpq's reason (free it
 * with PQfreemem); or -ENOMEM (*why NULL). */
int pg_hosts_parse(struct pg_hosts *h, const char *conninfo, char **why);

/* Frees what h holds. */
void pg_hosts_free(struct pg_hosts *h);

/* The conninfo's connect_timeout as a limit in ms (libpq's reading: less
 * than 2 s is 2 s), or default_ms when it sets none (or 0: for ever). */
uint32_t pg_hosts_connect_timeout_ms(const struct pg_hosts *h, uint32_t default_ms);

/* The entry of the list that host `host` and port `port` (PQhost, PQport
 * of a connection) are, or -1. */
int pg_hosts_index(const struct pg_hosts *h, const char *host, const char *port);

/* PQconnectStartParams with the conninfo's options, the host, hostaddr
 * and port lists begun at entry `first` (< n; 0: as written). NULL when
 * memory runs out (as PQconnectStart). */
PGconn *pg_hosts_connect_start(const struct pg_hosts *h, uint32_t first);

#endif
