/*
 * http_request_fuzz.c — libFuzzer target for the metrics endpoint's request
 * parser (base/http_request.h), whose input is anybody's bytes. Checked on
 * each input:
 *   - no read outside the input (ASan, on an exact-size copy);
 *   - a whole head: its length is within the input, the method and path
 *     point into it (the path starts with '/'), the head alone parses to
 *     the same length, and one byte less is incomplete;
 *   - once a prefix is bad, the whole is bad (the verdict never goes back);
 *   - a smaller max_head gives the same verdict, or too large.
 * A failed check names itself and aborts; libFuzzer keeps the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/http_request.h"
#include "fuzz_checks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);
	if (buf == NULL)
		return 0;
	memcpy(buf, data, size);
	struct http_request req;
	const char *why = NULL;
	long whole = http_request_parse(buf, size, 8192, &req, &why);
	check(whole >= HTTP_PARSE_TOO_LARGE);
	if (whole > 0) {
		check((size_t)whole <= size);
		check(req.method >= buf && req.method + req.method_len <= buf + whole && req.method_len > 0);
		check(req.path >= buf && req.path + req.path_len <= buf + whole && req.path_len > 0 && req.path[0] == '/');
		check(req.minor_version == 0 || req.minor_version == 1);
		struct http_request again;
		check(http_request_parse(buf, (size_t)whole, 8192, &again, &why) == whole);
		check(again.keep_alive == req.keep_alive);
		check(http_request_parse(buf, (size_t)whole - 1, 8192, &again, &why) == HTTP_PARSE_INCOMPLETE);
	} else if (whole != HTTP_PARSE_INCOMPLETE) {
		check(why != NULL);
	}
	/* a bad prefix: the whole is bad too */
	if (size > 1) {
		struct http_request r;
		if (http_request_parse(buf, size / 2, 8192, &r, &why) == HTTP_PARSE_BAD)
			check(whole == HTTP_PARSE_BAD);
	}
	/* a smaller limit: the same verdict, or too large (the first 64 bytes
	 * hold no end, and no bad byte) */
	struct http_request small;
	long limited = http_request_parse(buf, size, 64, &small, &why);
	check(limited == whole || limited == HTTP_PARSE_TOO_LARGE);
	free(buf);
	return 0;
}
