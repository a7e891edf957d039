/* handshake.c — see handshake.h. */
#include "protocol/handshake.h"
#include "base/byteorder.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

static int copy_node_name(const uint8_t *src, size_t n, char out[NODE_NAME_BUF])
{
	if (!node_name_valid((const char *)src, n))
		return -EPROTO;
	memcpy(out, src, n);
	out[n] = '\0';
	return 0;
}

int handshake_frame_sized(const uint8_t *buf, size_t len, size_t len_bytes, const uint8_t **msg, size_t *msg_len,
			  size_t *consumed)
{
	if (len < len_bytes)
		return 0;
	size_t n = len_bytes == 4 ? be32_read(buf) : be16_read(buf);
	if (n == 0 || n > HANDSHAKE_MAX_MESSAGE)
		return -EPROTO;
	if (len - len_bytes < n)
		return 0;
	*msg = buf + len_bytes;
	*msg_len = n;
	*consumed = n + len_bytes;
	return 1;
}

int handshake_frame(const uint8_t *buf, size_t len, const uint8_t **msg, size_t *msg_len, size_t *consumed)
{
	return handshake_frame_sized(buf, len, 2, msg, msg_len, consumed);
}

int handshake_decode_name(const uint8_t *msg, size_t len, struct handshake_name *out)
{
	/* 'N' Flags:8 Creation:4 NameLen:2 Name */
	if (len < 15 || msg[0] != 'N')
		return -EPROTO;
	size_t nlen = be16_read(msg + 13);
	if (len != 15 + nlen)
		return -EPROTO;
	out->flags = be64_read(msg + 1);
	out->creation = be32_read(msg + 9);
	return copy_node_name(msg + 15, nlen, out->node);
}

int handshake_decode_status(const uint8_t *msg, size_t len, char *out, size_t outsz)
{
	if (len < 2 || msg[0] != 's' || len - 1 >= outsz)
		return -EPROTO;
	memcpy(out, msg + 1, len - 1);
	out[len - 1] = '\0';
	if (strlen(out) != len - 1)
		return -EPROTO; /* embedded NUL */
	return 0;
}

int handshake_decode_challenge(const uint8_t *msg, size_t len, struct handshake_challenge *out)
{
	/* 'N' Flags:8 Challenge:4 Creation:4 NameLen:2 Name */
	if (len < 19 || msg[0] != 'N')
		return -EPROTO;
	size_t nlen = be16_read(msg + 17);
	if (len != 19 + nlen)
		return -EPROTO;
	out->flags = be64_read(msg + 1);
	out->challenge = be32_read(msg + 9);
	out->creation = be32_read(msg + 13);
	return copy_node_name(msg + 19, nlen, out->node);
}

int handshake_decode_reply(const uint8_t *msg, size_t len, uint32_t *challenge, uint8_t digest[HANDSHAKE_DIGEST_LEN])
{
	if (len != 1 + 4 + HANDSHAKE_DIGEST_LEN || msg[0] != 'r')
		return -EPROTO;
	*challenge = be32_read(msg + 1);
	memcpy(digest, msg + 5, HANDSHAKE_DIGEST_LEN);
	return 0;
}

int handshake_decode_ack(const uint8_t *msg, size_t len, uint8_t digest[HANDSHAKE_DIGEST_LEN])
{
	if (len != 1 + HANDSHAKE_DIGEST_LEN || msg[0] != 'a')
		return -EPROTO;
	memcpy(digest, msg + 1, HANDSHAKE_DIGEST_LEN);
	return 0;
}

/* Appends the 2-byte length and the body. */
static int append_framed(struct bytebuf *out, const uint8_t *body, size_t n)
{
	uint8_t len[2];
	be16_write(len, (uint32_t)n);
	int rc = bytebuf_reserve(out, n + 2);
	if (rc)
		return rc;
	bytebuf_append(out, len, 2);
	bytebuf_append(out, body, n);
	return 0;
}

int handshake_encode_name(struct bytebuf *out, uint64_t flags, uint32_t creation, const char *node)
{
	uint8_t body[15 + NODE_NAME_BUF];
	size_t nlen = strnlen(node, NODE_NAME_BUF - 1);
	uint8_t *p = body;
	*p++ = 'N';
	p = be64_write(p, flags);
	p = be32_write(p, creation);
	p = be16_write(p, (uint32_t)nlen);
	memcpy(p, node, nlen);
	return append_framed(out, body, 15 + nlen);
}

int handshake_encode_status(struct bytebuf *out, const char *status)
{
	uint8_t body[32];
	size_t n = strnlen(status, sizeof body - 1);
	body[0] = 's';
	memcpy(body + 1, status, n);
	return append_framed(out, body, n + 1);
}

int handshake_encode_challenge(struct bytebuf *out, uint64_t flags, uint32_t challenge, uint32_t creation,
			const char *node)
{
	uint8_t body[19 + NODE_NAME_BUF];
	size_t nlen = strnlen(node, NODE_NAME_BUF - 1);
	uint8_t *p = body;
	*p++ = 'N';
	p = be64_write(p, flags);
	p = be32_write(p, challenge);
	p = be32_write(p, creation);
	p = be16_write(p, (uint32_t)nlen);
	memcpy(p, node, nlen);
	return append_framed(out, body, 19 + nlen);
}

int handshake_encode_reply(struct bytebuf *out, uint32_t challenge, const uint8_t digest[HANDSHAKE_DIGEST_LEN])
{
	uint8_t body[1 + 4 + HANDSHAKE_DIGEST_LEN];
	body[0] = 'r';
	be32_write(body + 1, challenge);
	memcpy(body + 5, digest, HANDSHAKE_DIGEST_LEN);
	return append_framed(out, body, sizeof body);
}

int handshake_encode_ack(struct bytebuf *out, const uint8_t digest[HANDSHAKE_DIGEST_LEN])
{
	uint8_t body[1 + HANDSHAKE_DIGEST_LEN];
	body[0] = 'a';
	memcpy(body + 1, digest, HANDSHAKE_DIGEST_LEN);
	return append_framed(out, body, sizeof body);
}

void handshake_digest(const char *cookie, uint32_t challenge, uint8_t out[HANDSHAKE_DIGEST_LEN])
{
	char decimal[16];
	int n = snprintf(decimal, sizeof decimal, "%u", challenge);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int outlen = HANDSHAKE_DIGEST_LEN;
	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_md5(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, cookie, strlen(cookie)) != 1 ||
	    EVP_DigestUpdate(ctx, decimal, (size_t)n) != 1 ||
	    EVP_DigestFinal_ex(ctx, out, &outlen) != 1) {
		/* Cannot happen with a working libcrypto; an all-zero digest
		 * simply fails authentication. */
		memset(out, 0, HANDSHAKE_DIGEST_LEN);
	}
	EVP_MD_CTX_free(ctx);
}

bool handshake_digest_equal(const uint8_t a[HANDSHAKE_DIGEST_LEN], const uint8_t b[HANDSHAKE_DIGEST_LEN])
{
	return CRYPTO_memcmp(a, b, HANDSHAKE_DIGEST_LEN) == 0;
}
