/*
 * version.h — the version of shardnode this node is, as the start line, the
 * metrics page's shardnode_info and the admin's sys:get_state tell it.
 *
 * The one place it is written down is the application's vsn in
 * erl_wrapper/src/shardnode.app.src; the Makefile passes it as
 * -DSHARDNODE_VERSION="...". A build that does not (a unit test binary)
 * says "unknown".
 */
#ifndef SN_VERSION_H
#define SN_VERSION_H

#ifndef SHARDNODE_VERSION
#define SHARDNODE_VERSION "unknown"
#endif

#endif
