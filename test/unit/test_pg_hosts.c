/*
 * test_pg_hosts.c — the hosts of a conninfo (pg_hosts.h): how many, which
 * entry a connection's host and port are, a connection started with the
 * list begun elsewhere, the connect_timeout read as libpq reads it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "store/pg_hosts.h"

static struct pg_hosts parse(const char *ci)
{
	struct pg_hosts h;
	char *why = NULL;
	cr_assert_eq(pg_hosts_parse(&h, ci, &why), 0, "%s", ci);
	cr_assert_null(why);
	return h;
}

Test(pg_hosts, a_list_is_counted_and_its_entries_found)
{
	struct pg_hosts h = parse("host=127.0.0.2,127.0.0.3,127.0.0.4 port=7001,7002,7003 dbname=x");
	cr_assert_eq(h.n, 3);
	cr_assert_eq(pg_hosts_index(&h, "127.0.0.3", "7002"), 1);
	cr_assert_eq(pg_hosts_index(&h, "127.0.0.3", "7001"), -1, "a host with another entry's port");
	cr_assert_eq(pg_hosts_index(&h, "127.0.0.9", "7002"), -1);
	cr_assert_eq(pg_hosts_index(&h, NULL, "7002"), -1);
	pg_hosts_free(&h);
	/* One port for every host; one host; none (libpq's defaults). */
	h = parse("host=127.0.0.2,127.0.0.3 port=7001");
	cr_assert_eq(h.n, 2);
	cr_assert_eq(pg_hosts_index(&h, "127.0.0.3", "7001"), 1);
	pg_hosts_free(&h);
	h = parse("host=127.0.0.2");
	cr_assert_eq(h.n, 1);
	cr_assert_eq(pg_hosts_index(&h, "127.0.0.2", "5432"), 0);
	pg_hosts_free(&h);
	h = parse("dbname=x");
	cr_assert_eq(h.n, 1);
	pg_hosts_free(&h);
	h = parse("hostaddr=127.0.0.2,127.0.0.3 port=1,2");
	cr_assert_eq(h.n, 2);
	cr_assert_eq(pg_hosts_index(&h, "127.0.0.3", "2"), 1);
	pg_hosts_free(&h);
	/* Lists of different lengths (libpq refuses them when connecting):
	 * looked up without reading past either. */
	h = parse("host=127.0.0.2,127.0.0.3,127.0.0.4 hostaddr=127.0.0.2,127.0.0.3 port=1,2");
	cr_assert_eq(h.n, 3);
	cr_assert_eq(pg_hosts_index(&h, "127.0.0.4", "3"), -1);
	cr_assert_eq(pg_hosts_index(&h, "127.0.0.3", "2"), 1);
	pg_hosts_free(&h);
}

Test(pg_hosts, a_bad_conninfo_is_refused_with_libpqs_reason)
{
	struct pg_hosts h;
	char *why = NULL;
	cr_assert_eq(pg_hosts_parse(&h, "host=a no_such_option=1", &why), -EINVAL);
	cr_assert_not_null(why);
	PQfreemem(why);
}

/* Started at entry 1, the connection tries 127.0.0.3 first (nothing
 * listens on these ports: it is only started, never polled). */
Test(pg_hosts, a_connection_begins_at_the_entry_asked)
{
	struct pg_hosts h = parse("host=127.0.0.2,127.0.0.3,127.0.0.4 port=7001,7002,7003 dbname=x user=u");
	for (uint32_t first = 0; first < 3; first++) {
		PGconn *pg = pg_hosts_connect_start(&h, first);
		cr_assert_not_null(pg);
		char want_host[16], want_port[8];
		snprintf(want_host, sizeof want_host, "127.0.0.%u", 2 + first);
		snprintf(want_port, sizeof want_port, "%u", 7001 + first);
		cr_assert_str_eq(PQhost(pg), want_host);
		cr_assert_str_eq(PQport(pg), want_port);
		cr_assert_str_eq(PQdb(pg), "x");
		cr_assert_str_eq(PQuser(pg), "u");
		PQfinish(pg);
	}
	pg_hosts_free(&h);
}

Test(pg_hosts, connect_timeout_is_read_as_libpq_reads_it)
{
	static const struct {
		const char *ci;
		uint32_t ms;
	} cases[] = {{"dbname=x", 777},          {"connect_timeout=5", 5000}, {"connect_timeout=1", 2000},
		     {"connect_timeout=0", 777}, {"connect_timeout=-3", 777}, {"connect_timeout=99999", 3600000}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct pg_hosts h = parse(cases[k].ci);
		cr_assert_eq(pg_hosts_connect_timeout_ms(&h, 777), cases[k].ms, "%s", cases[k].ci);
		pg_hosts_free(&h);
	}
}
