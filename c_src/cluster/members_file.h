/*
 * members_file.h — the members a node last knew, kept in
 * `data_dir/members` so that a node started again finds its cluster
 * (docs/contract.md "A cluster": members remembered). Written on every
 * change of the member list that changes what it holds; read once at
 * start, when its members are asked to let the node join before it may
 * form a cluster of its own.
 *
 * The file is text, a line each, so an operator can read and edit it:
 *
 *   # shardnode: the members this node last knew (written on every change)
 *   self a@127.0.0.1 3
 *   member b@127.0.0.1
 *   member c@127.0.0.1
 *
 * `self NODE UP` is this node's up-number when it was written (0: it was
 * not up): an entry of its own at or below it that gossip brings after a
 * restart is of the old incarnation. `member NODE` is another member that
 * was neither down nor removed. Lines starting with '#' and empty lines
 * are skipped. It is replaced whole (a temporary file, then rename), not
 * fsync'ed: a crash keeps the old file or the new one, and losing the
 * latest change costs only a join tried at a node that left.
 */
#ifndef SN_MEMBERS_FILE_H
#define SN_MEMBERS_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/node_limits.h"
#include "protocol/node_name.h"

/* What the file holds. About 64 KB: allocate it, do not put it on the
 * stack of a deep call. */
struct members_record {
	char self[NODE_NAME_BUF];  /* this node; "" when the file had no self line */
	uint32_t self_up_number;   /* 0: this node was not up */
	size_t n;
	char nodes[CLUSTER_MEMBERS_MAX][NODE_NAME_BUF]; /* the other members */
};

/* Parses the file's text (len bytes, need not end in NUL) into *out. Node
 * names are checked as node_name.h checks them; at most
 * CLUSTER_MEMBERS_MAX members are kept. Returns 0, or -EPROTO for a line
 * that is none of the above (out then holds the lines before it). Pure. */
int members_file_parse(const char *text, size_t len, struct members_record *out);

/* Writes the text of r into buf (cap bytes, NUL-terminated). Returns the
 * length without the NUL, or -ENOSPC (buf then holds part of it). Pure. */
int members_file_format(const struct members_record *r, char *buf, size_t cap);

/* Reads `dir`/members into *out. Returns 0; -ENOENT when there is none (a
 * node never started with this data_dir); -EPROTO (a bad line, see
 * members_file_parse); -EFBIG (larger than any file this writes); or
 * -errno of a file operation. */
int members_file_read(const char *dir, struct members_record *out);

/* Writes r to `dir`/members, creating dir if needed, through
 * `dir`/members.tmp and rename. Returns 0 or -errno (the old file, if any,
 * is then left as it was). */
int members_file_write(const char *dir, const struct members_record *r);

#endif
