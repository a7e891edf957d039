/* members_file.c — see members_file.h. */
#include "cluster/members_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "store/store_files.h"

#define HEADER "# shardnode: the members this node last knew (written on every change)\n"
/* A file this module writes is at most this long: the header, and a
 * line per member of at most "member " + a name + "\n". */
#define FILE_MAX (sizeof HEADER + (CLUSTER_MEMBERS_MAX + 1) * (NODE_NAME_BUF + 24))

/* The name token tok[0..len): a node name as node_name.h accepts it, with
 * no space (one could not be read back from a line). */
static int take_name(const char *tok, size_t len, char out[NODE_NAME_BUF])
{
	if (!node_name_valid(tok, len) || memchr(tok, ' ', len) != NULL)
		return -EPROTO;
	memcpy(out, tok, len);
	out[len] = '\0';
	return 0;
}

/* Splits line[0..len) at single spaces into at most 3 tokens. Returns how
 * many, or -1 for more (or an empty one). */
static int tokens(const char *line, size_t len, const char *tok[3], size_t tlen[3])
{
	int n = 0;
	size_t start = 0;
	for (size_t k = 0; k <= len; k++) {
		if (k < len && line[k] != ' ')
			continue;
		if (k == start || n == 3)
			return -1;
		tok[n] = line + start;
		tlen[n++] = k - start;
		start = k + 1;
	}
	return n;
}

static int parse_line(const char *line, size_t len, struct members_record *out)
{
	const char *tok[3];
	size_t tlen[3];
	int n = tokens(line, len, tok, tlen);
	if (n == 2 && tlen[0] == 6 && memcmp(tok[0], "member", 6) == 0) {
		if (out->n == CLUSTER_MEMBERS_MAX)
			return 0; /* more than a cluster holds: the rest is not kept */
		if (take_name(tok[1], tlen[1], out->nodes[out->n]) != 0)
			return -EPROTO;
		out->n++;
		return 0;
	}
	if (n == 3 && tlen[0] == 4 && memcmp(tok[0], "self", 4) == 0) {
		if (take_name(tok[1], tlen[1], out->self) != 0 || tlen[2] == 0 || tlen[2] > 10)
			return -EPROTO;
		uint64_t up = 0;
		for (size_t k = 0; k < tlen[2]; k++) {
			if (tok[2][k] < '0' || tok[2][k] > '9')
				return -EPROTO;
			up = up * 10 + (uint64_t)(tok[2][k] - '0');
		}
		if (up > UINT32_MAX / 2) /* far beyond any cluster's admissions; +1 must not wrap */
			return -EPROTO;
		out->self_up_number = (uint32_t)up;
		return 0;
	}
	return -EPROTO;
}

int members_file_parse(const char *text, size_t len, struct members_record *out)
{
	out->n = 0;
	out->self[0] = '\0';
	out->self_up_number = 0;
	size_t start = 0;
	while (start < len) {
		const char *nl = memchr(text + start, '\n', len - start);
		size_t end = nl != NULL ? (size_t)(nl - text) : len;
		size_t line_len = end - start;
		if (line_len > 0 && text[start] != '#') {
			int rc = parse_line(text + start, line_len, out);
			if (rc != 0)
				return rc;
		}
		start = end + 1;
	}
	return 0;
}

int members_file_format(const struct members_record *r, char *buf, size_t cap)
{
	int w = snprintf(buf, cap, "%sself %s %u\n", HEADER, r->self, r->self_up_number);
	if (w < 0 || (size_t)w >= cap)
		return -ENOSPC;
	size_t len = (size_t)w;
	for (size_t k = 0; k < r->n; k++) {
		if (strchr(r->nodes[k], ' ') != NULL)
			continue; /* no node name of a peer has one; it could not be read back */
		w = snprintf(buf + len, cap - len, "member %s\n", r->nodes[k]);
		if (w < 0 || (size_t)w >= cap - len)
			return -ENOSPC;
		len += (size_t)w;
	}
	return (int)len;
}

/* dir/name into out. Returns 0 or -ENAMETOOLONG. */
static int path_of(const char *dir, const char *name, char out[PATH_MAX])
{
	int w = snprintf(out, PATH_MAX, "%s/%s", dir, name);
	return w < 0 || w >= PATH_MAX ? -ENAMETOOLONG : 0;
}

int members_file_read(const char *dir, struct members_record *out)
{
	char path[PATH_MAX];
	int rc = path_of(dir, "members", path);
	if (rc)
		return rc;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char *text = malloc(FILE_MAX + 1);
	size_t len = 0;
	rc = text == NULL ? -ENOMEM : 0;
	while (rc == 0) {
		ssize_t got = read(fd, text + len, FILE_MAX + 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			rc = -errno;
		else if (got == 0)
			break;
		else if ((len += (size_t)got) > FILE_MAX)
			rc = -EFBIG;
	}
	close(fd);
	if (rc == 0)
		rc = members_file_parse(text, len, out);
	free(text);
	return rc;
}

/* Writes all of buf to fd. Returns 0 or -errno. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t put = write(fd, buf, len);
		if (put < 0 && errno == EINTR)
			continue;
		if (put < 0)
			return -errno;
		buf += put;
		len -= (size_t)put;
	}
	return 0;
}

int members_file_write(const char *dir, const struct members_record *r)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int rc = path_of(dir, "members", path);
	if (rc == 0)
		rc = path_of(dir, "members.tmp", tmp);
	if (rc == 0)
		rc = store_make_dirs(dir);
	if (rc)
		return rc;
	char *text = malloc(FILE_MAX);
	if (text == NULL)
		return -ENOMEM;
	int len = members_file_format(r, text, FILE_MAX);
	int fd = len < 0 ? len : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = len < 0 ? len : -errno; /* before free, which may set errno */
		free(text);
		return rc;
	}
	rc = write_all(fd, text, (size_t)len);
	free(text);
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc != 0)
		unlink(tmp);
	return rc;
}
