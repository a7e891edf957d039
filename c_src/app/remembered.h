/*
 * remembered.h — the members a node knew when it last ran, read at start
 * from data_dir/members (members_file.h), so that membership asks them to
 * let it join as it asks its seeds (docs/contract.md "A cluster").
 */
#ifndef SN_REMEMBERED_H
#define SN_REMEMBERED_H

#include "app/config.h"
#include "base/log.h"
#include "cluster/members_file.h"

/* Reads cfg->data_dir/members. Returns the record (the caller frees it)
 * or NULL: no file (a node never started on this data_dir), or one that
 * cannot be read or was written by another node (said at warning; the
 * seeds still serve). A node started without seeds whose data_dir holds a
 * store but no members file (a release before 0.2.0 kept none) is warned
 * that it forms a new cluster. Nothing is written. */
struct members_record *remembered_load(const struct sn_config *cfg, const struct logger *log);

#endif
