/* http_request.c — see http_request.h. */
#include "base/http_request.h"

#include <string.h>
#include <strings.h>

/* RFC 9110 tchar: the characters of a method or header name. */
static bool is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return true;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A byte of a target: visible ASCII. */
static bool is_vchar(unsigned char c) { return c > 0x20 && c < 0x7f; }

/* A byte of a header value: visible, obs-text, or blank. */
static bool is_field_char(unsigned char c) { return c == ' ' || c == '\t' || (c > 0x20 && c != 0x7f); }

struct cursor {
	const unsigned char *p, *end;
	const char *why;
};

/* Outcomes of a step: the bytes ran out (maybe more will come), or they
 * are wrong. */
enum { MORE = 1, BAD = 2 };

static int expect(struct cursor *c, char ch, const char *why)
{
	if (c->p == c->end)
		return MORE;
	if (*c->p != (unsigned char)ch) {
		c->why = why;
		return BAD;
	}
	c->p++;
	return 0;
}

/* CRLF, and nothing else. */
static int crlf(struct cursor *c, const char *why)
{
	int rc = expect(c, '\r', why);
	return rc ? rc : expect(c, '\n', why);
}

/* The value of a comma-separated token list contains `token`,
 * case-insensitively. */
static bool list_has(const char *v, size_t n, const char *token)
{
	size_t tl = strlen(token), k = 0;
	while (k < n) {
		while (k < n && (v[k] == ' ' || v[k] == '\t' || v[k] == ','))
			k++;
		size_t start = k;
		while (k < n && v[k] != ',' && v[k] != ' ' && v[k] != '\t')
			k++;
		if (k - start == tl && strncasecmp(v + start, token, tl) == 0)
			return true;
	}
	return false;
}

static int request_line(struct cursor *c, struct http_request *req)
{
	const unsigned char *start = c->p;
	while (c->p < c->end && is_tchar(*c->p) && c->p - start < 16)
		c->p++;
	if (c->p == c->end)
		return MORE;
	if (c->p == start || *c->p != ' ') {
		c->why = "bad method";
		return BAD;
	}
	req->method = (const char *)start;
	req->method_len = (size_t)(c->p - start);
	c->p++;
	int rc = expect(c, '/', "the target must start with /");
	if (rc)
		return rc;
	start = c->p - 1;
	const unsigned char *query = NULL;
	while (c->p < c->end && is_vchar(*c->p)) {
		if (*c->p == '?' && query == NULL)
			query = c->p;
		c->p++;
	}
	if (c->p == c->end)
		return MORE;
	if (*c->p != ' ') {
		c->why = "bad byte in the target";
		return BAD;
	}
	req->path = (const char *)start;
	req->path_len = (size_t)((query ? query : c->p) - start);
	c->p++;
	static const char version[] = "HTTP/1.";
	for (const char *v = version; *v; v++)
		if ((rc = expect(c, *v, "bad HTTP version")) != 0)
			return rc;
	if (c->p == c->end)
		return MORE;
	if (*c->p != '0' && *c->p != '1') {
		c->why = "bad HTTP version";
		return BAD;
	}
	req->minor_version = *c->p - '0';
	c->p++;
	return crlf(c, "the request line must end in CRLF");
}

/* One header line, or the empty line (*done). */
static int header_line(struct cursor *c, struct http_request *req, bool *done, bool *saw_close)
{
	if (c->p == c->end)
		return MORE;
	if (*c->p == '\r') {
		int rc = crlf(c, "a bare CR");
		if (rc == 0)
			*done = true;
		return rc;
	}
	const unsigned char *name = c->p;
	while (c->p < c->end && is_tchar(*c->p))
		c->p++;
	if (c->p == c->end)
		return MORE;
	if (c->p == name || *c->p != ':') {
		c->why = name == c->p && (*c->p == ' ' || *c->p == '\t') ? "folded header line" : "bad header name";
		return BAD;
	}
	size_t name_len = (size_t)(c->p - name);
	c->p++;
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
	const unsigned char *value = c->p;
	while (c->p < c->end && is_field_char(*c->p))
		c->p++;
	if (c->p == c->end)
		return MORE;
	const unsigned char *value_end = c->p;
	while (value_end > value && (value_end[-1] == ' ' || value_end[-1] == '\t'))
		value_end--;
	int rc = crlf(c, "bad byte in a header value");
	if (rc)
		return rc;
	const char *v = (const char *)value;
	size_t vn = (size_t)(value_end - value);
	if (name_len == 14 && strncasecmp((const char *)name, "content-length", 14) == 0) {
		bool digits = vn > 0;
		bool zero = true;
		for (size_t k = 0; k < vn; k++) {
			digits &= v[k] >= '0' && v[k] <= '9';
			zero &= v[k] == '0';
		}
		if (!digits || !zero) {
			c->why = digits ? "a request with a body" : "bad Content-Length";
			return BAD;
		}
	} else if (name_len == 17 && strncasecmp((const char *)name, "transfer-encoding", 17) == 0) {
		c->why = "a request with a body";
		return BAD;
	} else if (name_len == 10 && strncasecmp((const char *)name, "connection", 10) == 0) {
		/* close wins over keep-alive, in any line */
		if (list_has(v, vn, "close")) {
			req->keep_alive = false;
			*saw_close = true;
		} else if (list_has(v, vn, "keep-alive") && !*saw_close) {
			req->keep_alive = true;
		}
	}
	return 0;
}

long http_request_parse(const char *buf, size_t len, size_t max_head, struct http_request *req,
			const char **why)
{
	struct cursor c = {(const unsigned char *)buf, (const unsigned char *)buf + (len < max_head ? len : max_head),
			   NULL};
	memset(req, 0, sizeof *req);
	int rc = request_line(&c, req);
	req->keep_alive = req->minor_version == 1;
	bool done = false, saw_close = false;
	for (int n = 0; rc == 0 && !done; n++) {
		if (n > HTTP_MAX_HEADERS) {
			c.why = "too many header lines";
			rc = BAD;
			break;
		}
		rc = header_line(&c, req, &done, &saw_close);
	}
	if (rc == 0)
		return (long)(c.p - (const unsigned char *)buf);
	if (rc == BAD) {
		*why = c.why;
		return HTTP_PARSE_BAD;
	}
	if (len >= max_head) {
		*why = "request head too large";
		return HTTP_PARSE_TOO_LARGE;
	}
	return HTTP_PARSE_INCOMPLETE;
}
