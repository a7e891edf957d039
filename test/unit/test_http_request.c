/* Unit tests for base/http_request: every request whole and byte by byte. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "base/http_request.h"

#define MAX_HEAD 8192

/* Every proper prefix of `text` is incomplete or bad, and once bad stays
 * bad; the whole text gives `whole`, which is returned. */
static long parse_every_prefix(const char *text, size_t len, struct http_request *req)
{
	const char *why = NULL;
	long whole = http_request_parse(text, len, MAX_HEAD, req, &why);
	bool bad = false;
	for (size_t n = 0; n < len; n++) {
		struct http_request r;
		long rc = http_request_parse(text, n, MAX_HEAD, &r, &why);
		if (bad)
			cr_assert_eq(rc, HTTP_PARSE_BAD, "prefix %zu of '%s' bad, then not", n, text);
		else if (rc == HTTP_PARSE_BAD)
			bad = true;
		else if (rc > 0)
			cr_assert_eq(rc, whole, "prefix %zu of '%s' complete (%ld), whole %ld", n, text, rc, whole);
		else
			cr_assert_eq(rc, HTTP_PARSE_INCOMPLETE, "prefix %zu of '%s'", n, text);
	}
	if (bad)
		cr_assert_eq(whole, HTTP_PARSE_BAD, "a bad prefix of '%s' but the whole is %ld", text, whole);
	return whole;
}

static bool span_is(const char *p, size_t n, const char *want) { return n == strlen(want) && memcmp(p, want, n) == 0; }

Test(http_request, good_requests)
{
	static const struct {
		const char *text;
		const char *method, *path;
		int minor;
		bool keep_alive;
	} good[] = {
		{"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9100\r\n\r\n", "GET", "/metrics", 1, true},
		{"GET /metrics HTTP/1.1\r\n\r\n", "GET", "/metrics", 1, true},
		{"GET /metrics?name[]=up HTTP/1.1\r\n\r\n", "GET", "/metrics", 1, true},
		{"GET / HTTP/1.0\r\n\r\n", "GET", "/", 0, false},
		{"GET /metrics HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", "GET", "/metrics", 0, true},
		{"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n", "GET", "/metrics", 1, false},
		{"GET /metrics HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n", "GET", "/metrics", 1, false},
		{"GET /metrics HTTP/1.1\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n", "GET", "/metrics", 1,
		 false},
		{"HEAD /metrics HTTP/1.1\r\nAccept: text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n\r\n", "HEAD",
		 "/metrics", 1, true},
		{"GET /metrics HTTP/1.1\r\nContent-Length: 0\r\nX-Empty:\r\nX-Blanks: \t a b \t\r\n\r\n", "GET",
		 "/metrics", 1, true},
		{"POST /metrics HTTP/1.1\r\nUser-Agent: Prometheus/2.42.0\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n",
		 "POST", "/metrics", 1, true},
	};
	for (size_t k = 0; k < sizeof good / sizeof good[0]; k++) {
		struct http_request req;
		size_t len = strlen(good[k].text);
		long rc = parse_every_prefix(good[k].text, len, &req);
		cr_assert_eq(rc, (long)len, "'%s': %ld", good[k].text, rc);
		cr_assert(span_is(req.method, req.method_len, good[k].method), "%s", good[k].text);
		cr_assert(span_is(req.path, req.path_len, good[k].path), "%s", good[k].text);
		cr_assert_eq(req.minor_version, good[k].minor, "%s", good[k].text);
		cr_assert_eq(req.keep_alive, good[k].keep_alive, "%s", good[k].text);
	}
}

Test(http_request, a_pipelined_request_is_not_read_into)
{
	const char two[] = "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
	struct http_request req;
	const char *why;
	long rc = http_request_parse(two, sizeof two - 1, MAX_HEAD, &req, &why);
	cr_assert_eq(rc, 19);
	cr_assert(span_is(req.path, req.path_len, "/a"));
	rc = http_request_parse(two + 19, sizeof two - 1 - 19, MAX_HEAD, &req, &why);
	cr_assert_eq(rc, 19);
	cr_assert(span_is(req.path, req.path_len, "/b"));
}

Test(http_request, bad_requests)
{
	static const char *const bad[] = {
		" GET /metrics HTTP/1.1\r\n\r\n",
		"GET  /metrics HTTP/1.1\r\n\r\n",
		"GET metrics HTTP/1.1\r\n\r\n",
		"GET http://host/metrics HTTP/1.1\r\n\r\n",
		"GET /met rics HTTP/1.1\r\n\r\n",
		"GET /metrics HTTP/2.0\r\n\r\n",
		"GET /metrics HTTP/1.2\r\n\r\n",
		"GET /metrics http/1.1\r\n\r\n",
		"GET /metrics HTTP/1.1 \r\n\r\n",
		"GET /metrics HTTP/1.1\n\n",
		"GET /metrics HTTP/1.1\r\nHost: x\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: x\r\n\n",
		"GET /metrics HTTP/1.1\r\nHost: x\rx\r\n\r\n",
		"GET /metrics HTTP/1.1\r\n folded: x\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost: x\r\n  continued\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nNo colon\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n",
		"GET /metrics HTTP/1.1\r\n: x\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nX-Ctl: a\x01z\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nX-Del: a\x7fz\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
		"GET /metrics HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nContent-Length: 0x0\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nContent-Length:\r\n\r\n",
		"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"GETTINGGETTINGGET /metrics HTTP/1.1\r\n\r\n", /* a method of 17 characters */
		"G(T /metrics HTTP/1.1\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", /* a TLS ClientHello */
		"\r\n",
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		struct http_request req;
		cr_assert_eq(parse_every_prefix(bad[k], strlen(bad[k]), &req), HTTP_PARSE_BAD, "'%s'", bad[k]);
		const char *why = NULL;
		http_request_parse(bad[k], strlen(bad[k]), MAX_HEAD, &req, &why);
		cr_assert_not_null(why, "'%s' says why", bad[k]);
	}
	/* A NUL anywhere is bad, not the end of the text. */
	const char nul[] = "GET /metrics HTTP/1.1\r\nX: a\0b\r\n\r\n";
	struct http_request req;
	cr_assert_eq(parse_every_prefix(nul, sizeof nul - 1, &req), HTTP_PARSE_BAD);
}

Test(http_request, limits)
{
	/* A head longer than max_head: too large once max_head bytes are in,
	 * whatever follows. */
	char big[MAX_HEAD + 64];
	size_t n = (size_t)snprintf(big, sizeof big, "GET /metrics HTTP/1.1\r\nX-Long: ");
	memset(big + n, 'a', sizeof big - n);
	struct http_request req;
	const char *why;
	cr_assert_eq(http_request_parse(big, MAX_HEAD - 1, MAX_HEAD, &req, &why), HTTP_PARSE_INCOMPLETE);
	cr_assert_eq(http_request_parse(big, MAX_HEAD, MAX_HEAD, &req, &why), HTTP_PARSE_TOO_LARGE);
	cr_assert_str_eq(why, "request head too large");
	cr_assert_eq(http_request_parse(big, sizeof big, MAX_HEAD, &req, &why), HTTP_PARSE_TOO_LARGE);
	/* A head of exactly max_head bytes is whole. */
	memcpy(big + MAX_HEAD - 4, "\r\n\r\n", 4);
	cr_assert_eq(http_request_parse(big, MAX_HEAD, MAX_HEAD, &req, &why), MAX_HEAD);

	/* HTTP_MAX_HEADERS lines are fine, one more is not. */
	char many[HTTP_MAX_HEADERS * 8 + 64];
	size_t len = (size_t)snprintf(many, sizeof many, "GET / HTTP/1.1\r\n");
	for (int k = 0; k < HTTP_MAX_HEADERS; k++)
		len += (size_t)snprintf(many + len, sizeof many - len, "H%02d: x\r\n", k % 100);
	memcpy(many + len, "\r\n", 3);
	cr_assert_eq(http_request_parse(many, len + 2, MAX_HEAD, &req, &why), (long)len + 2);
	len += (size_t)snprintf(many + len, sizeof many - len, "H: x\r\n\r\n");
	cr_assert_eq(http_request_parse(many, len, MAX_HEAD, &req, &why), HTTP_PARSE_BAD);
	cr_assert_str_eq(why, "too many header lines");
}
