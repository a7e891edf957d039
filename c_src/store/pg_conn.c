/* pg_conn.c — see pg_conn.h. */
#include "store/pg_conn.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "store/pg_hosts.h"

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000
/* How long one attempt to connect may take when the conninfo sets no
 * connect_timeout: libpq's own is not enforced for a connection made with
 * PQconnectPoll, so a host that drops the packets (a partition, not a
 * crash) would hold the attempt forever. The next attempt begins past the
 * host it hung at (pg_hosts.h). */
#define CONNECT_TIMEOUT_DEFAULT_MS 10000

/* Prepared statements a connection keeps track of; beyond that, a
 * statement goes out unnamed (parsed each time), as pg_conn_query's. */
#define PREPARED_MAX 16

/* A statement, or a sync point, queued or sent. One allocation. */
struct pg_item {
	struct pg_item *next;
	bool is_sync;
	bool is_prepare; /* pg_conn's own: preparing `prepared` */
	bool answered; /* sent, and its result given to `done` */
	pg_result_fn done;
	void *arg;
	int nparams, result_format;
	const struct pg_prepared *prepared; /* executed by name (or, is_prepare, prepared) */
	struct pg_conn *owner;              /* is_prepare */
	const char *sql;
	const char **values;
	int *lengths, *formats;
	char data[];
};

enum pg_phase { PHASE_WAITING, PHASE_CONNECTING, PHASE_UP };

struct pg_conn {
	struct evloop *loop;
	const struct logger *log;
	struct pg_hosts hosts; /* the conninfo, and its list of hosts */
	uint32_t first_host;   /* where in that list the next attempt starts */
	PGconn *pg;
	int fd;          /* the socket watched, -1: none */
	uint32_t events; /* what it is watched for */
	enum pg_phase phase;
	struct evloop_timer retry;
	uint32_t backoff_ms;
	struct evloop_timer connect_deadline; /* armed while connecting */
	uint32_t connect_timeout_ms;
	/* Armed while statements are out and nothing has come back for
	 * answer_timeout_ms (0: never): a server that went silent (a frozen
	 * machine, a partition: no reset comes) is given up on. */
	struct evloop_timer answer_deadline;
	uint32_t answer_timeout_ms;
	pg_state_fn on_state;
	void *arg;
	struct pg_item *sent, **sent_tail;   /* in the order sent */
	struct pg_item *queue, **queue_tail; /* not sent yet */
	size_t pending;                      /* statements in both */
	bool reading;                        /* in read_results: no sending */
	bool logged_down;                    /* one line per outage */
	bool failing_unsent;                 /* answering NULL statements never sent */
	/* Prepared on this connection (or their prepare is on its way). */
	const struct pg_prepared *ready[PREPARED_MAX];
	unsigned nready;
};

static void start_connect(struct pg_conn *c);

/* ---- lists ---- */

static void append(struct pg_item ***tail, struct pg_item *it)
{
	it->next = NULL;
	**tail = it;
	*tail = &it->next;
}

/* Answers every item of `list` with NULL and frees them. The list is
 * detached first: a callback may queue new statements. */
static void fail_all(struct pg_conn *c, struct pg_item *list)
{
	while (list) {
		struct pg_item *it = list;
		list = it->next;
		if (!it->is_sync) {
			if (!it->is_prepare)
				c->pending--;
			if (!it->answered)
				it->done(it->arg, NULL);
		}
		free(it);
	}
}

/* ---- the socket ---- */

static void on_io(struct evloop *loop, int fd, uint32_t events, void *arg);

/* Watches libpq's current socket (it may change while connecting) for
 * `events`. Returns 0 or -errno. */
static int watch(struct pg_conn *c, uint32_t events)
{
	int fd = PQsocket(c->pg);
	if (fd != c->fd) {
		if (c->fd >= 0)
			evloop_unwatch(c->loop, c->fd);
		c->fd = -1;
		if (fd < 0)
			return -EBADF;
		int rc = evloop_watch(c->loop, fd, events, on_io, c);
		if (rc == 0) {
			c->fd = fd;
			c->events = events;
		}
		return rc;
	}
	if (events == c->events)
		return 0; /* every batch flushes: no epoll_ctl for nothing */
	int rc = evloop_rewatch(c->loop, fd, events);
	if (rc == 0)
		c->events = events;
	return rc;
}

/* libpq's message on one line, into out (cut to its size): a line that
 * goes on ("\n\t...") joins with a space, the next host's with "; ". */
static void one_line(const char *msg, char *out, size_t size)
{
	size_t o = 0;
	for (size_t k = 0; msg[k] != '\0' && o + 3 < size; k++) {
		if (msg[k] != '\n') {
			out[o++] = msg[k];
			continue;
		}
		while (msg[k + 1] == '\t')
			k++;
		if (msg[k + 1] == '\0')
			break;
		if (msg[k] == '\t') {
			out[o++] = ' ';
		} else {
			out[o++] = ';';
			out[o++] = ' ';
		}
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

/* The connection failed or was lost: everything waiting is answered
 * NULL, and a new attempt comes after the back-off. */
static void lost(struct pg_conn *c, const char *why)
{
	bool was_up = c->phase == PHASE_UP;
	if (!c->logged_down) {
		char msg[512];
		one_line(c->pg ? PQerrorMessage(c->pg) : "", msg, sizeof msg);
		log_warn(c->log, "postgres: %s%s%s (retrying every %u ms at most)", why, msg[0] ? ": " : "", msg,
			 BACKOFF_MAX_MS);
		c->logged_down = true;
	}
	if (c->fd >= 0)
		evloop_unwatch(c->loop, c->fd);
	c->fd = -1;
	if (c->pg)
		PQfinish(c->pg);
	c->pg = NULL;
	c->phase = PHASE_WAITING;
	evloop_timer_stop(c->loop, &c->connect_deadline);
	evloop_timer_stop(c->loop, &c->answer_deadline);
	c->nready = 0; /* a new connection prepares afresh */
	struct pg_item *sent = c->sent, *queued = c->queue;
	c->sent = NULL;
	c->sent_tail = &c->sent;
	c->queue = NULL;
	c->queue_tail = &c->queue;
	evloop_timer_start(c->loop, &c->retry, c->backoff_ms);
	c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
	fail_all(c, sent);
	c->failing_unsent = true;
	fail_all(c, queued);
	c->failing_unsent = false;
	if (was_up && c->on_state)
		c->on_state(c->arg, false);
}

/* Writes what libpq holds; watches for writability while some is left.
 * Returns false if the connection was lost. */
static bool flush(struct pg_conn *c)
{
	int rc = PQflush(c->pg);
	if (rc < 0) {
		lost(c, "sending failed");
		return false;
	}
	if (watch(c, EPOLLIN | (rc == 1 ? EPOLLOUT : 0)) != 0) {
		lost(c, "cannot watch the socket");
		return false;
	}
	return true;
}

/* ---- prepared statements ---- */

static bool is_ready(const struct pg_conn *c, const struct pg_prepared *st)
{
	for (unsigned i = 0; i < c->nready; i++)
		if (c->ready[i] == st)
			return true;
	return false;
}

static void unready(struct pg_conn *c, const struct pg_prepared *st)
{
	for (unsigned i = 0; i < c->nready; i++)
		if (c->ready[i] == st) {
			c->ready[i] = c->ready[--c->nready];
			return;
		}
}

/* The answer to a prepare: a refusal (or a lost connection) means the
 * next use prepares again. */
static void on_prepared(void *arg, const PGresult *res)
{
	struct pg_item *p = arg;
	if (res == NULL || PQresultStatus(res) != PGRES_COMMAND_OK)
		unready(p->owner, p->prepared);
}

/* Sends the prepare of `st` ahead of its first execution on this
 * connection. Returns 1 if sent (or not needed), 0 if libpq refused to
 * send, -1 if the statement is to go unnamed instead (no memory, or the
 * table of prepared statements is full). */
static int prepare(struct pg_conn *c, const struct pg_prepared *st)
{
	if (is_ready(c, st))
		return 1;
	struct pg_item *p = c->nready < PREPARED_MAX ? calloc(1, sizeof *p) : NULL;
	if (p == NULL)
		return -1;
	p->is_prepare = true;
	p->prepared = st;
	p->owner = c;
	p->done = on_prepared;
	p->arg = p;
	append(&c->sent_tail, p);
	c->ready[c->nready++] = st;
	return PQsendPrepare(c->pg, st->name, st->sql, st->nparams, NULL);
}

/* Sends one statement: by name if it is a prepared one (prepared first if
 * need be). Returns libpq's 1 (sent) or 0. */
static int send_statement(struct pg_conn *c, struct pg_item *it)
{
	int named = it->prepared ? prepare(c, it->prepared) : -1;
	append(&c->sent_tail, it); /* answered with the rest if sending fails */
	if (named == 0)
		return 0;
	if (named == 1)
		return PQsendQueryPrepared(c->pg, it->prepared->name, it->nparams, it->values, it->lengths,
					   it->formats, it->result_format);
	return PQsendQueryParams(c->pg, it->sql, it->nparams, NULL, it->values, it->lengths, it->formats,
				 it->result_format);
}

/* ---- sending and reading ---- */

/* Sends every queued item, in order. */
/* Keeps the answer deadline: armed while statements are out — started
 * afresh when an answer came (`progress`), else left running — stopped
 * when none is. */
static void await_answers(struct pg_conn *c, bool progress)
{
	if (c->answer_timeout_ms == 0 || c->phase != PHASE_UP || c->sent == NULL) {
		evloop_timer_stop(c->loop, &c->answer_deadline);
		return;
	}
	if (progress || !evloop_timer_armed(&c->answer_deadline))
		(void)evloop_timer_start(c->loop, &c->answer_deadline, c->answer_timeout_ms);
}

static void send_queued(struct pg_conn *c)
{
	if (c->phase != PHASE_UP || c->reading || c->queue == NULL)
		return;
	while (c->queue) {
		struct pg_item *it = c->queue;
		c->queue = it->next;
		if (c->queue == NULL)
			c->queue_tail = &c->queue;
		int ok;
		if (it->is_sync) {
			append(&c->sent_tail, it);
			ok = PQpipelineSync(c->pg);
		} else {
			ok = send_statement(c, it);
		}
		if (!ok) {
			lost(c, "sending a statement failed");
			return;
		}
	}
	if (flush(c))
		await_answers(c, false);
}

/* Hands out the results that have come, in order. */
static void read_results(struct pg_conn *c)
{
	c->reading = true;
	while (c->pg && !PQisBusy(c->pg)) {
		PGresult *res = PQgetResult(c->pg);
		struct pg_item *head = c->sent;
		if (res == NULL) {
			/* The end of one statement's results, or nothing more now. */
			if (head == NULL || head->is_sync || !head->answered)
				break;
		} else if (PQresultStatus(res) == PGRES_PIPELINE_SYNC) {
			PQclear(res);
			if (head == NULL || !head->is_sync)
				continue; /* not ours to count */
		} else {
			if (head != NULL && !head->is_sync && !head->answered) {
				head->answered = true;
				head->done(head->arg, res);
			}
			PQclear(res); /* a second result of one statement: not asked for */
			continue;
		}
		c->sent = head->next;
		if (c->sent == NULL)
			c->sent_tail = &c->sent;
		if (!head->is_sync && !head->is_prepare)
			c->pending--;
		free(head);
	}
	c->reading = false;
}

static void connected(struct pg_conn *c)
{
	if (PQsetnonblocking(c->pg, 1) != 0 || PQenterPipelineMode(c->pg) != 1) {
		lost(c, "cannot enter pipeline mode");
		return;
	}
	c->phase = PHASE_UP;
	evloop_timer_stop(c->loop, &c->connect_deadline);
	c->backoff_ms = BACKOFF_FIRST_MS;
	if (c->logged_down)
		log_info(c->log, "postgres: connected again");
	c->logged_down = false;
	if (!flush(c))
		return;
	if (c->on_state)
		c->on_state(c->arg, true);
	send_queued(c);
}

static void on_io(struct evloop *loop, int fd, uint32_t events, void *arg)
{
	(void)loop;
	(void)fd;
	struct pg_conn *c = arg;
	if (c->phase == PHASE_CONNECTING) {
		/* Each step may have closed the socket and opened another, for
		 * the next host of the conninfo's list: the new one often has
		 * the old one's number, and the kernel dropped the old one from
		 * epoll with its closing. So it is watched afresh after every
		 * step, whatever its number. */
		evloop_unwatch(c->loop, c->fd);
		c->fd = -1;
		switch (PQconnectPoll(c->pg)) {
		case PGRES_POLLING_READING:
			if (watch(c, EPOLLIN) != 0)
				lost(c, "cannot watch the socket");
			return;
		case PGRES_POLLING_WRITING:
			if (watch(c, EPOLLOUT) != 0)
				lost(c, "cannot watch the socket");
			return;
		case PGRES_POLLING_OK:
			connected(c);
			return;
		default:
			lost(c, "connecting failed");
			return;
		}
	}
	if (c->phase != PHASE_UP)
		return;
	if ((events & EPOLLOUT) && !flush(c))
		return;
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		if (!PQconsumeInput(c->pg)) {
			lost(c, "the connection broke");
			return;
		}
		read_results(c);
		if (c->phase == PHASE_UP)
			await_answers(c, true);
	}
	if (c->pg && PQstatus(c->pg) == CONNECTION_BAD) {
		lost(c, "the connection broke");
		return;
	}
	send_queued(c); /* what callbacks queued meanwhile */
}

/* The server's notices ("relation already exists, skipping") go to the
 * log at debug level, not to stderr as libpq's default does. */
static void on_notice(void *arg, const char *message)
{
	const struct pg_conn *c = arg;
	size_t n = strlen(message);
	while (n > 0 && message[n - 1] == '\n')
		n--;
	log_debug(c->log, "postgres: %.*s", (int)n, message);
}

static void start_connect(struct pg_conn *c)
{
	c->pg = pg_hosts_connect_start(&c->hosts, c->first_host);
	if (c->pg == NULL || PQstatus(c->pg) == CONNECTION_BAD) {
		lost(c, "cannot start connecting");
		return;
	}
	PQsetNoticeProcessor(c->pg, on_notice, c);
	c->phase = PHASE_CONNECTING;
	evloop_timer_start(c->loop, &c->connect_deadline, c->connect_timeout_ms);
	/* As if PQconnectPoll had said PGRES_POLLING_WRITING. */
	if (watch(c, EPOLLOUT) != 0)
		lost(c, "cannot watch the socket");
}

static void on_retry(struct evloop *loop, void *arg)
{
	(void)loop;
	start_connect(arg);
}

static void on_answer_deadline(struct evloop *loop, void *arg)
{
	(void)loop;
	struct pg_conn *c = arg;
	if (c->phase != PHASE_UP || c->sent == NULL)
		return;
	char why[64];
	snprintf(why, sizeof why, "the server answered nothing for %u ms", c->answer_timeout_ms);
	lost(c, why);
}

static void on_connect_deadline(struct evloop *loop, void *arg)
{
	(void)loop;
	struct pg_conn *c = arg;
	if (c->phase != PHASE_CONNECTING)
		return;
	/* The next attempt begins past the host this one hung at, so that a
	 * host that drops the packets does not keep the others untried. */
	if (c->hosts.n > 1) {
		int k = pg_hosts_index(&c->hosts, PQhost(c->pg), PQport(c->pg));
		c->first_host = (uint32_t)(k >= 0 ? k + 1 : (int)c->first_host + 1) % c->hosts.n;
	}
	lost(c, "connecting timed out");
}


/* ---- the interface ---- */

struct pg_conn *pg_conn_new(struct evloop *loop, const struct logger *log, const char *conninfo,
			    pg_state_fn on_state, void *arg, int *err)
{
	struct pg_conn *c = calloc(1, sizeof *c);
	if (c == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	char *why = NULL;
	*err = pg_hosts_parse(&c->hosts, conninfo, &why);
	if (*err != 0) {
		log_error(log, "postgres: bad postgres_conninfo: %s", why ? why : "out of memory");
		PQfreemem(why);
		free(c);
		return NULL;
	}
	c->connect_timeout_ms = pg_hosts_connect_timeout_ms(&c->hosts, CONNECT_TIMEOUT_DEFAULT_MS);
	c->loop = loop;
	c->log = log;
	c->fd = -1;
	c->on_state = on_state;
	c->arg = arg;
	c->backoff_ms = BACKOFF_FIRST_MS;
	c->sent_tail = &c->sent;
	c->queue_tail = &c->queue;
	evloop_timer_init(&c->retry, on_retry, c);
	evloop_timer_init(&c->connect_deadline, on_connect_deadline, c);
	evloop_timer_init(&c->answer_deadline, on_answer_deadline, c);
	*err = 0;
	start_connect(c);
	return c;
}

void pg_conn_free(struct pg_conn *c)
{
	if (c == NULL)
		return;
	evloop_timer_stop(c->loop, &c->retry);
	evloop_timer_stop(c->loop, &c->connect_deadline);
	evloop_timer_stop(c->loop, &c->answer_deadline);
	if (c->fd >= 0)
		evloop_unwatch(c->loop, c->fd);
	if (c->pg)
		PQfinish(c->pg);
	c->pg = NULL;
	c->phase = PHASE_WAITING;
	struct pg_item *sent = c->sent, *queued = c->queue;
	c->sent = c->queue = NULL;
	fail_all(c, sent);
	c->failing_unsent = true;
	fail_all(c, queued);
	pg_hosts_free(&c->hosts);
	free(c);
}

bool pg_conn_answering_unsent(const struct pg_conn *c) { return c->failing_unsent; }

void pg_conn_set_answer_timeout(struct pg_conn *c, uint32_t ms)
{
	c->answer_timeout_ms = ms;
	await_answers(c, true);
}

bool pg_conn_up(const struct pg_conn *c)
{
	return c->phase == PHASE_UP;
}

size_t pg_conn_pending(const struct pg_conn *c)
{
	return c->pending;
}

/* Queues a statement: `st` a prepared one (its SQL is not copied), or
 * NULL and `sql` copied. */
static int queue_statement(struct pg_conn *c, const struct pg_prepared *st, const char *sql, int nparams,
			   const char *const *values, const int *lengths, const int *formats, int result_format,
			   pg_result_fn done, void *arg)
{
	if (nparams < 0)
		return -EINVAL;
	size_t n = (size_t)nparams;
	size_t sql_len = st ? 0 : strlen(sql) + 1;
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		if (values[i] != NULL)
			bytes += formats && formats[i] ? (size_t)lengths[i] : strlen(values[i]) + 1;
	/* Arrays first (aligned), then the SQL and the parameters' bytes. */
	size_t arrays = n * (sizeof(char *) + 2 * sizeof(int));
	struct pg_item *it = malloc(sizeof *it + arrays + sql_len + bytes);
	if (it == NULL)
		return -ENOMEM;
	*it = (struct pg_item){.done = done, .arg = arg, .nparams = nparams, .result_format = result_format,
			       .prepared = st};
	it->values = (const char **)(void *)it->data;
	it->lengths = (int *)(void *)(it->data + n * sizeof(char *));
	it->formats = it->lengths + n;
	char *p = it->data + arrays;
	if (st) {
		it->sql = st->sql;
	} else {
		memcpy(p, sql, sql_len);
		it->sql = p;
		p += sql_len;
	}
	for (size_t i = 0; i < n; i++) {
		bool binary = formats && formats[i];
		it->formats[i] = binary ? 1 : 0;
		it->lengths[i] = binary ? lengths[i] : 0;
		if (values[i] == NULL) {
			it->values[i] = NULL;
			continue;
		}
		size_t len = binary ? (size_t)lengths[i] : strlen(values[i]) + 1;
		memcpy(p, values[i], len);
		it->values[i] = p;
		p += len;
	}
	if (n == 0) {
		it->values = NULL;
		it->lengths = NULL;
		it->formats = NULL;
	}
	append(&c->queue_tail, it);
	c->pending++;
	return 0;
}

int pg_conn_query(struct pg_conn *c, const char *sql, int nparams, const char *const *values, const int *lengths,
		  const int *formats, int result_format, pg_result_fn done, void *arg)
{
	return queue_statement(c, NULL, sql, nparams, values, lengths, formats, result_format, done, arg);
}

int pg_conn_query_prepared(struct pg_conn *c, const struct pg_prepared *st, const char *const *values,
			   const int *lengths, const int *formats, int result_format, pg_result_fn done, void *arg)
{
	return queue_statement(c, st, st->sql, st->nparams, values, lengths, formats, result_format, done, arg);
}

int pg_conn_sync(struct pg_conn *c)
{
	struct pg_item *it = calloc(1, sizeof *it);
	if (it == NULL)
		return -ENOMEM;
	it->is_sync = true;
	append(&c->queue_tail, it);
	send_queued(c);
	return 0;
}
