/*
 * pg_conn.h — one PostgreSQL connection driven by the event loop, never
 * blocking it: libpq's asynchronous connect (PQconnectStart/PQconnectPoll),
 * a non-blocking socket watched through epoll, and pipeline mode, so that
 * many statements go out in one write and their results come back in
 * order without a round trip each.
 *
 * Statements are queued with pg_conn_query and sent in batches: each
 * pg_conn_sync ends one (a pipeline sync point: an error in a statement
 * aborts the rest of its batch only, each of those answered
 * PGRES_PIPELINE_ABORTED). While the connection is down, statements wait
 * in the queue and go out once it is up.
 *
 * Losing the connection answers every statement sent or queued with a
 * NULL result (whether a sent one ran is not known), tells the owner, and
 * reconnects by itself with back-off (100 ms, doubling, at most 5 s). The
 * conninfo may name several hosts (`host=a,b target_session_attrs=
 * read-write`): each attempt tries them in order, ends at connect_timeout
 * (10 s if none is set), and one that ended so begins past the host it
 * hung at, so a primary cut off does not hide its promoted standby.
 * Every callback runs on the loop's thread.
 */
#ifndef SN_PG_CONN_H
#define SN_PG_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include <libpq-fe.h>

#include "base/evloop.h"
#include "base/log.h"

struct pg_conn;

/* A statement's outcome: `res` (owned by pg_conn, valid during the call:
 * PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_FATAL_ERROR,
 * PGRES_PIPELINE_ABORTED, ...), or NULL: the connection was lost, or the
 * statement dropped by pg_conn_free. */
typedef void (*pg_result_fn)(void *arg, const PGresult *res);

/* The connection came up (up true) or went down. */
typedef void (*pg_state_fn)(void *arg, bool up);

/* Starts connecting to `conninfo` (a libpq connection string, copied).
 * `log` must outlive the connection; `on_state` may be NULL. Returns the
 * connection (connecting, or waiting to retry), or NULL with *err -ENOMEM
 * or -EINVAL (a conninfo libpq cannot parse, logged). */
struct pg_conn *pg_conn_new(struct evloop *loop, const struct logger *log, const char *conninfo,
			    pg_state_fn on_state, void *arg, int *err);

/* Closes the connection; every statement still queued or sent is answered
 * NULL first. NULL is ignored. */
void pg_conn_free(struct pg_conn *c);

/* Gives the connection up (as lost: what is out is answered NULL, and it
 * reconnects) when statements are out and nothing has come back for `ms`
 * (0, the default: never). A server that froze or was cut off sends no
 * reset: without this, the connection would wait for it for as long as
 * TCP does (many minutes), blind to a standby promoted meanwhile. */
void pg_conn_set_answer_timeout(struct pg_conn *c, uint32_t ms);

/* Inside a pg_result_fn given NULL: whether the statement was never
 * handed to the server (it was queued when the connection was lost or
 * freed), so it certainly did not run. false for one sent, whose outcome
 * is not known. */
bool pg_conn_answering_unsent(const struct pg_conn *c);

/* Whether the connection is up. */
bool pg_conn_up(const struct pg_conn *c);

/* Queues a statement with `nparams` parameters: values[i] (lengths[i]
 * bytes; formats[i] 1 binary, 0 text, NULL-terminated then) or NULL for
 * SQL NULL; all copied. result_format 1 asks for binary results. `done`
 * answers it. Returns 0, or -ENOMEM (not queued, no answer). */
int pg_conn_query(struct pg_conn *c, const char *sql, int nparams, const char *const *values, const int *lengths,
		  const int *formats, int result_format, pg_result_fn done, void *arg);

/* A statement parsed and planned once per connection, then executed by
 * name: a write the node sends thousands of times a second costs the
 * server its execution only. The caller keeps it (a static) for as long
 * as the connection lives; `name` is unique among them. */
struct pg_prepared {
	const char *name;
	const char *sql;
	int nparams;
};

/* As pg_conn_query, for a prepared statement: the first use on each
 * connection prepares it just before (in the same pipeline, so a batch
 * needs no extra round trip). A prepare the server refuses is tried again
 * at the next use (the execution then fails as the statement would). */
int pg_conn_query_prepared(struct pg_conn *c, const struct pg_prepared *st, const char *const *values,
			   const int *lengths, const int *formats, int result_format, pg_result_fn done, void *arg);

/* Ends the current batch: the statements queued since the last sync go
 * out (at once if connected) and their results follow. Returns 0 or
 * -ENOMEM. */
int pg_conn_sync(struct pg_conn *c);

/* Statements queued or sent and not yet answered. */
size_t pg_conn_pending(const struct pg_conn *c);

#endif
