/*
 * http_request.h — a strict parser of HTTP/1.x request heads, for the
 * metrics endpoint.
 *
 * Stateless and allocation-free (picohttpparser's way): it is given the
 * bytes received so far, from the start of the request, and says whether
 * they hold a whole head, may still become one, or never will. What it
 * finds points into those bytes.
 *
 * Strict: a request line `METHOD SP /target SP HTTP/1.0|1.1 CRLF`, header
 * lines `name: value CRLF` (no folded lines, no bare LF, no control bytes),
 * an empty line. A request with a body (Content-Length other than 0, or
 * any Transfer-Encoding) is refused: nothing served here takes one, and
 * skipping a body is how requests get smuggled.
 */
#ifndef SN_HTTP_REQUEST_H
#define SN_HTTP_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

/* At most this many header lines. */
#define HTTP_MAX_HEADERS 64

struct http_request {
	const char *method; /* not NUL-terminated; points into the input */
	size_t method_len;
	const char *path;   /* the target up to '?' (or its end) */
	size_t path_len;
	int minor_version;  /* HTTP/1.0 or 1.1 */
	bool keep_alive;    /* 1.1 without `Connection: close`, or 1.0 with `Connection: keep-alive` */
};

enum http_parse_result {
	HTTP_PARSE_INCOMPLETE = 0, /* valid so far: more bytes may complete it */
	HTTP_PARSE_BAD = -1,       /* malformed, or has a body */
	HTTP_PARSE_TOO_LARGE = -2, /* no complete head within max_head bytes */
};

/* Parses the head at the start of buf[0 .. len). Returns the head's length
 * in bytes (> 0) with *req filled, or an http_parse_result. A head longer
 * than max_head bytes is HTTP_PARSE_TOO_LARGE, found as soon as max_head
 * valid bytes hold no end. *why is set to a short reason (static) for
 * HTTP_PARSE_BAD and HTTP_PARSE_TOO_LARGE. */
long http_request_parse(const char *buf, size_t len, size_t max_head, struct http_request *req,
			const char **why);

#endif
