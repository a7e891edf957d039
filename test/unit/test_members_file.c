/*
 * test_members_file.c — data_dir/members: the text written and read back,
 * every prefix of it (a file cut short parses to the lines before the cut,
 * or is refused, and never over-reads), lines that are not what it writes,
 * and the file itself written, replaced and read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cluster/members_file.h"
#include "unit_helpers.h"

static struct members_record *record_of(const char *self, uint32_t up, const char *const *nodes, size_t n)
{
	struct members_record *r = calloc(1, sizeof *r);
	cr_assert_not_null(r);
	snprintf(r->self, sizeof r->self, "%s", self);
	r->self_up_number = up;
	for (size_t k = 0; k < n; k++)
		snprintf(r->nodes[k], sizeof r->nodes[k], "%s", nodes[k]);
	r->n = n;
	return r;
}

static char *format(const struct members_record *r, int *len)
{
	char *buf = malloc(1 << 20);
	cr_assert_not_null(buf);
	*len = members_file_format(r, buf, 1 << 20);
	cr_assert_gt(*len, 0);
	return buf;
}

Test(members_file, what_is_written_reads_back_whole)
{
	static const char *const nodes[] = {"b@127.0.0.1", "c@10.0.0.3", "sn@host-1.example"};
	struct members_record *r = record_of("a@127.0.0.1", 2147483647u, nodes, 3);
	int len;
	char *text = format(r, &len);
	cr_assert(strstr(text, "self a@127.0.0.1 2147483647\nmember b@127.0.0.1\n") != NULL, "%s", text);
	struct members_record *back = calloc(1, sizeof *back);
	char *exact = sn_dup_exact(text, (size_t)len);
	cr_assert_eq(members_file_parse(exact, (size_t)len, back), 0);
	cr_assert_str_eq(back->self, "a@127.0.0.1");
	cr_assert_eq(back->self_up_number, 2147483647u);
	cr_assert_eq(back->n, 3);
	for (size_t k = 0; k < 3; k++)
		cr_assert_str_eq(back->nodes[k], nodes[k]);
	free(exact);
	free(back);
	free(text);
	free(r);
}

/* Every prefix: the lines before the cut, and a cut line is either a
 * shorter valid line or refused; nothing is read past the end. */
Test(members_file, every_prefix_parses_or_is_refused)
{
	static const char *const nodes[] = {"b@127.0.0.1", "c@127.0.0.1"};
	struct members_record *r = record_of("a@127.0.0.1", 12, nodes, 2);
	int len;
	char *text = format(r, &len);
	struct members_record *back = calloc(1, sizeof *back);
	for (size_t cut = 0; cut <= (size_t)len; cut++) {
		char *exact = sn_dup_exact(text, cut);
		int rc = members_file_parse(exact, cut, back);
		cr_assert(rc == 0 || rc == -EPROTO, "cut %zu: %d", cut, rc);
		if (rc == 0)
			cr_assert_leq(back->n, 2);
		free(exact);
	}
	free(back);
	free(text);
	free(r);
}

Test(members_file, lines_it_does_not_write_are_refused)
{
	static const char *const bad[] = {
		"member\n", "member  b@h\n", "member b@h extra\n", "member nohost\n", "member b@h \n",
		"self a@h\n", "self a@h x1\n", "self a@h 99999999999\n", "self a@h 2147483648\n", "self a@h -1\n", "members b@h\n",
		"hello\n", " member b@h\n",
	};
	struct members_record *back = calloc(1, sizeof *back);
	for (size_t k = 0; k < SN_ARRAY_LEN(bad); k++) {
		char *exact = sn_dup_exact(bad[k], strlen(bad[k]));
		cr_assert_eq(members_file_parse(exact, strlen(bad[k]), back), -EPROTO, "%s", bad[k]);
		free(exact);
	}
	/* comments, empty lines and no final newline are fine */
	static const char ok[] = "# a comment\n\nself a@h 0\nmember b@h";
	cr_assert_eq(members_file_parse(ok, sizeof ok - 1, back), 0);
	cr_assert_eq(back->n, 1);
	cr_assert_str_eq(back->nodes[0], "b@h");
	cr_assert_eq(back->self_up_number, 0);
	free(back);
}

Test(members_file, format_says_when_the_buffer_is_short)
{
	static const char *const nodes[] = {"b@127.0.0.1"};
	struct members_record *r = record_of("a@127.0.0.1", 1, nodes, 1);
	char buf[40];
	cr_assert_eq(members_file_format(r, buf, sizeof buf), -ENOSPC);
	free(r);
}

Test(members_file, written_replaced_and_read_in_a_directory_it_makes)
{
	char dir[] = "/tmp/sn_members_XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char sub[sizeof dir + 16];
	snprintf(sub, sizeof sub, "%s/a/b", dir);
	struct members_record *back = calloc(1, sizeof *back);
	cr_assert_eq(members_file_read(sub, back), -ENOENT, "none before the first write");
	static const char *const first[] = {"b@h", "c@h"};
	struct members_record *r = record_of("a@h", 2, first, 2);
	cr_assert_eq(members_file_write(sub, r), 0);
	r->n = 1;
	r->self_up_number = 7;
	cr_assert_eq(members_file_write(sub, r), 0);
	cr_assert_eq(members_file_read(sub, back), 0);
	cr_assert_eq(back->n, 1);
	cr_assert_eq(back->self_up_number, 7);
	char path[sizeof sub + 16];
	snprintf(path, sizeof path, "%s/members.tmp", sub);
	cr_assert_neq(access(path, F_OK), 0, "no temporary file is left");
	snprintf(path, sizeof path, "%s/members", sub);
	unlink(path);
	snprintf(path, sizeof path, "%s/a/b", dir);
	rmdir(path);
	snprintf(path, sizeof path, "%s/a", dir);
	rmdir(path);
	rmdir(dir);
	free(back);
	free(r);
}
