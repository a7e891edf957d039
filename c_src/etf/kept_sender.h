/*
 * kept_sender.h — a message's sender kept small in the record that holds
 * the message: its numbers here, its node name's bytes among the record's
 * own data. Header only; pure.
 */
#ifndef SN_KEPT_SENDER_H
#define SN_KEPT_SENDER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ei.h>

#include "etf/term.h"

/* A message's sender as a record that keeps it (a region's waiting
 * message and held reply, the node's local message) stores it: an
 * erlang_pid carries a kilobyte for its node name (MAXATOMLEN_UTF8), so
 * the record keeps the name's bytes among its own data and these
 * numbers. node_len 0: no sender. */
struct kept_sender {
	uint16_t node_len;
	uint32_t num, serial, creation;
};

/* The bytes `from` (NULL: none) takes among a record's data. */
static inline size_t kept_sender_size(const erlang_pid *from)
{
	return from != NULL ? strnlen(from->node, sizeof from->node - 1) : 0;
}

/* Keeps `from` (NULL: none) in *k, its node name at `node`
 * (kept_sender_size bytes of the record's data). */
static inline void kept_sender_keep(struct kept_sender *k, char *node, const erlang_pid *from)
{
	size_t n = kept_sender_size(from);
	*k = (struct kept_sender){.node_len = (uint16_t)n};
	if (from != NULL) {
		memcpy(node, from->node, n);
		k->num = from->num;
		k->serial = from->serial;
		k->creation = from->creation;
	}
}

/* The sender kept in k (its name at `node`) written out to *out; NULL
 * if there is none (*out untouched), else out. */
static inline const erlang_pid *kept_sender_pid(const struct kept_sender *k, const char *node, erlang_pid *out)
{
	if (k->node_len == 0)
		return NULL;
	term_pid_set(out, node, k->node_len, k->num, k->serial, k->creation);
	return out;
}

#endif
