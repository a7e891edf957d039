/*
 * test_dns_seeds.c — the pure parts of --join-dns: the seed names made of
 * this node's name part and each address (sorted, each once, IPv6 too,
 * those too long left out), and who forms the cluster: the lowest of them,
 * only when it is one of them.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "app/dns_seeds.h"

static size_t names(const char *our_node, const char *const *addrs, size_t n, char (*out)[NODE_NAME_BUF],
		    size_t max)
{
	char in[RESOLVER_ADDRS_MAX][RESOLVER_ADDR_BUF];
	for (size_t k = 0; k < n; k++)
		strcpy(in[k], addrs[k]); /* test data, known to fit */
	return dns_seeds_names(our_node, (const char (*)[RESOLVER_ADDR_BUF])in, n, out, max);
}

Test(dns_seeds, names_are_base_at_address_sorted_each_once)
{
	const char *const addrs[] = {"10.0.0.3", "10.0.0.1", "fd00::2", "10.0.0.3", "10.0.0.2"};
	char out[8][NODE_NAME_BUF];
	size_t n = names("sn@10.0.0.2", addrs, 5, out, 8);
	cr_assert_eq(n, 4);
	cr_assert_str_eq(out[0], "sn@10.0.0.1");
	cr_assert_str_eq(out[1], "sn@10.0.0.2");
	cr_assert_str_eq(out[2], "sn@10.0.0.3");
	cr_assert_str_eq(out[3], "sn@fd00::2");
}

Test(dns_seeds, at_most_max_and_a_name_without_host_is_its_own_base)
{
	const char *const addrs[] = {"10.0.0.9", "10.0.0.8", "10.0.0.7"};
	char out[2][NODE_NAME_BUF];
	cr_assert_eq(names("sn@h", addrs, 3, out, 2), 2);
	cr_assert_str_eq(out[0], "sn@10.0.0.8", "the first two answers, sorted");
	cr_assert_eq(names("bare", addrs, 1, out, 2), 1);
	cr_assert_str_eq(out[0], "bare@10.0.0.9");
	cr_assert_eq(names("sn@h", addrs, 0, out, 2), 0);
}

Test(dns_seeds, a_name_that_would_not_fit_is_left_out)
{
	char base[NODE_NAME_BUF];
	memset(base, 'b', NODE_NAME_BUF - 12);
	memcpy(base + NODE_NAME_BUF - 12, "@h", 3);
	/* the base is NODE_NAME_BUF - 12 long: '@' and an address of 10
	 * characters fill the buffer but its NUL, 11 do not fit */
	const char *const addrs[] = {"100.100.1.1", "10.0.0.100"};
	char out[4][NODE_NAME_BUF];
	size_t n = names(base, addrs, 2, out, 4);
	cr_assert_eq(n, 1);
	cr_assert_eq(strlen(out[0]), NODE_NAME_BUF - 1);
	cr_assert_str_eq(out[0] + NODE_NAME_BUF - 12, "@10.0.0.100");
}

Test(dns_seeds, the_lowest_name_forms_the_cluster_only_if_it_is_ours)
{
	const char *const addrs[] = {"10.0.0.2", "10.0.0.1", "10.0.0.3"};
	char out[4][NODE_NAME_BUF];
	size_t n = names("sn@10.0.0.1", addrs, 3, out, 4);
	const char (*ro)[NODE_NAME_BUF] = (const char (*)[NODE_NAME_BUF])out;
	cr_assert(dns_seeds_lowest("sn@10.0.0.1", ro, n));
	cr_assert(!dns_seeds_lowest("sn@10.0.0.2", ro, n));
	cr_assert(!dns_seeds_lowest("sn@10.0.0.0", ro, n), "not among them: never forms");
	cr_assert(!dns_seeds_lowest("sn@10.0.0.1", ro, 0));
}
