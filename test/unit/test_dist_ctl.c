/*
 * test_dist_ctl.c — the hand-written SEND and REG_SEND control tuples are
 * byte for byte what ei_x_encode_* writes for them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <ei.h>

#include "protocol/dist_ctl.h"
#include "protocol/dist_frame.h"
#include "unit_helpers.h"

/* The control tuples as dist_node.c encoded them with ei; rc -1 if ei
 * refuses. */
static int ref_send(ei_x_buff *x, const erlang_pid *to)
{
	sn_x_new_with_version(x);
	if (ei_x_encode_tuple_header(x, 3) < 0 || ei_x_encode_long(x, DOP_SEND) < 0 ||
	    ei_x_encode_atom(x, "") < 0 || ei_x_encode_pid(x, to) < 0)
		return -1;
	return 0;
}

static int ref_reg_send(ei_x_buff *x, const erlang_pid *from, const char *name)
{
	sn_x_new_with_version(x);
	if (ei_x_encode_tuple_header(x, 4) < 0 || ei_x_encode_long(x, DOP_REG_SEND) < 0 ||
	    ei_x_encode_pid(x, from) < 0 || ei_x_encode_atom(x, "") < 0 || ei_x_encode_atom(x, name) < 0)
		return -1;
	return 0;
}

static erlang_pid pid_on(const char *node, unsigned num, unsigned serial, unsigned creation)
{
	erlang_pid p = sn_pid(node, num, serial);
	p.creation = creation;
	return p;
}

/* A node name of n bytes: `unit` repeated, then "@h" if it fits. */
static char *node_of(const char *unit, size_t n)
{
	char *s = calloc(1, n + 1);
	cr_assert_not_null(s);
	size_t u = strlen(unit);
	for (size_t k = 0; k + u <= n; k += u)
		memcpy(s + k, unit, u);
	for (size_t k = strlen(s); k < n; k++)
		s[k] = 'x';
	return s;
}

static void check_send(const erlang_pid *to)
{
	char *out = malloc(DIST_CTL_MAX); /* exact size: ASan sees any overrun */
	cr_assert_not_null(out);
	ei_x_buff want;
	int want_rc = ref_send(&want, to);
	int n = dist_ctl_send(out, to);
	if (want_rc < 0) {
		cr_assert_eq(n, -EINVAL, "ei refuses node \"%.40s\", so must we", to->node);
	} else {
		cr_assert_eq(n, want.index, "length for node \"%.40s\" (%zu bytes)", to->node, strlen(to->node));
		cr_assert_eq(memcmp(out, want.buff, (size_t)n), 0, "bytes for node \"%.40s\"", to->node);
		cr_assert_leq(n, DIST_CTL_MAX);
	}
	ei_x_free(&want);
	free(out);
}

static void check_reg_send(const erlang_pid *from, const char *name)
{
	char *out = malloc(DIST_CTL_MAX);
	cr_assert_not_null(out);
	ei_x_buff want;
	int want_rc = ref_reg_send(&want, from, name);
	int n = dist_ctl_reg_send(out, from, name);
	if (want_rc < 0) {
		cr_assert_eq(n, -EINVAL);
	} else {
		cr_assert_eq(n, want.index, "length for name \"%.40s\" (%zu bytes)", name, strlen(name));
		cr_assert_eq(memcmp(out, want.buff, (size_t)n), 0, "bytes for name \"%.40s\"", name);
		cr_assert_leq(n, DIST_CTL_MAX);
	}
	ei_x_free(&want);
	free(out);
}

Test(dist_ctl, send_matches_ei_for_pid_fields)
{
	static const unsigned words[] = {0, 1, 255, 256, 0x7fff, 0x8000, 0x12345678, 0xffffffffu};
	for (size_t a = 0; a < SN_ARRAY_LEN(words); a++)
		for (size_t b = 0; b < SN_ARRAY_LEN(words); b++)
			for (size_t c = 0; c < SN_ARRAY_LEN(words); c++) {
				erlang_pid p = pid_on("bench@127.0.0.1", words[a], words[b], words[c]);
				check_send(&p);
			}
}

Test(dist_ctl, send_matches_ei_for_node_names)
{
	/* ASCII of every length up to and past the SMALL_ATOM_UTF8_EXT limit,
	 * 2-, 3- and 4-byte UTF-8 (up to 255 characters, 1020 bytes, and past
	 * it), and text that is not UTF-8. */
	static const char *units[] = {"a", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xFF", "\xC3",
				      "a\x80", "\xE2\x82"};
	for (size_t u = 0; u < SN_ARRAY_LEN(units); u++) {
		for (size_t n = 0; n <= MAXATOMLEN_UTF8 - 1; n++) {
			char *node = node_of(units[u], n);
			erlang_pid p = pid_on(node, 7, 9, 0x5eed);
			check_send(&p);
			free(node);
		}
	}
}

Test(dist_ctl, reg_send_matches_ei)
{
	erlang_pid from = pid_on("loadgen1@127.0.0.1", 3, 4, 5);
	static const char *units[] = {"a", "\xE9", "\xC3\xA9", "\xFF"};
	for (size_t u = 0; u < SN_ARRAY_LEN(units); u++) {
		for (size_t n = 0; n <= 300; n++) {
			char *name = node_of(units[u], n);
			check_reg_send(&from, name);
			free(name);
		}
	}
	char *node = node_of("\xF0\x9F\x98\x80", 1020);
	erlang_pid wide = pid_on(node, 1, 2, 3);
	check_reg_send(&wide, "counter");
	free(node);
	erlang_pid bad = pid_on("\xFF@h", 1, 2, 3);
	check_reg_send(&bad, "counter");
	char out[DIST_CTL_MAX];
	cr_assert_eq(dist_ctl_reg_send(out, &bad, "counter"), -EINVAL);
}

Test(dist_ctl, unterminated_node_is_refused)
{
	erlang_pid p;
	memset(&p, 'a', sizeof p);
	char out[DIST_CTL_MAX];
	cr_assert_eq(dist_ctl_send(out, &p), -EINVAL);
}

Test(dist_ctl, the_bound_holds_for_the_longest_fields)
{
	/* 1020-byte node (255 four-byte characters) and a 255-byte Latin-1
	 * name of high bytes: the longest REG_SEND there is. */
	char *node = node_of("\xF0\x9F\x98\x80", 1020);
	erlang_pid p = pid_on(node, 0xffffffffu, 0xffffffffu, 0xffffffffu);
	char name[256];
	memset(name, 0xE9, 255);
	name[255] = '\0';
	char *out = malloc(DIST_CTL_MAX);
	cr_assert_not_null(out);
	int n = dist_ctl_reg_send(out, &p, name);
	cr_assert_eq(n, DIST_CTL_MAX, "the bound is exact");
	check_reg_send(&p, name);
	free(out);
	free(node);
}

/* ALIAS_SEND {33, From, Alias} as ei writes it, the alias copied as it is;
 * the longest pid and reference fit the bound. */
Test(dist_ctl, alias_send_matches_ei)
{
	char *node = node_of("\xF0\x9F\x98\x80", 1020);
	const char *nodes[] = {"a@h", node};
	for (size_t k = 0; k < SN_ARRAY_LEN(nodes); k++) {
		erlang_pid from = pid_on(nodes[k], 0xffffffffu, 0xffffffffu, 0xffffffffu);
		erlang_ref alias = sn_ref(nodes[k], 5);
		alias.len = 5;
		ei_x_buff ref, want;
		sn_x_new(&ref);
		cr_assert_eq(ei_x_encode_ref(&ref, &alias), 0);
		sn_x_new_with_version(&want);
		cr_assert_eq(ei_x_encode_tuple_header(&want, 3), 0);
		cr_assert_eq(ei_x_encode_long(&want, DOP_ALIAS_SEND), 0);
		cr_assert_eq(ei_x_encode_pid(&want, &from), 0);
		cr_assert_eq(ei_x_encode_ref(&want, &alias), 0);
		char *out = malloc(DIST_CTL_ALIAS_MAX);
		cr_assert_not_null(out);
		int n = dist_ctl_alias_send(out, &from, ref.buff, (size_t)ref.index);
		cr_assert_eq(n, want.index);
		cr_assert_eq(memcmp(out, want.buff, (size_t)n), 0);
		if (k == 1)
			cr_assert_eq(n, DIST_CTL_ALIAS_MAX, "the bound is exact");
		cr_assert_eq(dist_ctl_alias_send(out, &from, ref.buff, DIST_CTL_REF_MAX + 1), -EINVAL);
		free(out);
		ei_x_free(&ref);
		ei_x_free(&want);
	}
	free(node);
}
