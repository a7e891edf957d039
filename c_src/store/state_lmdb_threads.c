/* state_lmdb_threads.c — the LMDB store's writer and reader threads
 * (state_lmdb_internal.h); the loop's side is state_lmdb.c. Each takes its
 * queue whole under the store's mutex, works on it without the mutex, and
 * wakes the loop through the eventfd. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/state_lmdb_internal.h"

static void wake_loop(struct state_lmdb *s)
{
	uint64_t one = 1;
	/* Can only fail with the counter at its maximum: the loop is woken
	 * already. */
	ssize_t w = write(s->event_fd, &one, sizeof one);
	(void)w;
}

/* ---- the writer thread ---- */

/* Reports a commit to the loop. Called with mu held. */
static void push_result(struct state_lmdb *s, uint64_t upto, int mdb_rc)
{
	int status = state_lmdb_errno(mdb_rc);
	for (;;) {
		if (s->results_count > 0) {
			struct commit_result *last =
				&s->results[(s->results_head + s->results_count - 1) % RESULTS_MAX];
			if (last->status == status) {
				last->upto = upto;
				break;
			}
		}
		if (s->results_count < RESULTS_MAX) {
			s->results[(s->results_head + s->results_count) % RESULTS_MAX] =
				(struct commit_result){.upto = upto, .status = status, .mdb_rc = mdb_rc};
			s->results_count++;
			break;
		}
		if (s->stopping)
			return; /* nobody will read it: every type is closed */
		pthread_cond_wait(&s->results_cv, &s->mu);
	}
	wake_loop(s);
}

void *state_lmdb_writer_main(void *arg)
{
	struct state_lmdb *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (s->writes == NULL && !s->stopping)
			pthread_cond_wait(&s->writes_cv, &s->mu);
		if (s->writes == NULL)
			break; /* stopping, and everything is written */
		struct write_op *batch = s->writes;
		s->writes = NULL;
		s->writes_tail = &s->writes;
		/* The sequence numbers are the queue's order: the last one of the
		 * batch is the highest. It is not stored in the op: count them. */
		uint64_t n = 0;
		for (struct write_op *w = batch; w != NULL; w = w->next)
			n++;
		pthread_mutex_unlock(&s->mu);

		int rc = state_lmdb_commit_batch(s->env, batch);
		while (batch) {
			struct write_op *next = batch->next;
			free(batch);
			batch = next;
		}

		pthread_mutex_lock(&s->mu);
		s->taken += n;
		push_result(s, s->taken, rc);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- the reader thread ---- */

void *state_lmdb_reader_main(void *arg)
{
	struct state_lmdb *s = arg;
	MDB_txn *txn = NULL;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (s->loads == NULL && !s->stopping)
			pthread_cond_wait(&s->loads_cv, &s->mu);
		if (s->stopping)
			break; /* loads still queued are dropped in state_lmdb_free */
		struct load_op *batch = s->loads;
		s->loads = NULL;
		s->loads_tail = &s->loads;
		pthread_mutex_unlock(&s->mu);

		/* One read transaction answers the whole batch; it is renewed,
		 * not recreated, between batches. */
		int rc = txn ? mdb_txn_renew(txn) : mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
		struct load_op *answers = NULL, **tail = &answers;
		while (batch) {
			struct load_op *l = batch;
			batch = l->next;
			l->next = NULL;
			if (rc != 0) {
				l->found = state_lmdb_errno(rc);
			} else {
				l = state_lmdb_answer(txn, l);
			}
			*tail = l;
			tail = &l->next;
		}
		if (rc == 0)
			mdb_txn_reset(txn);
		else if (txn != NULL) {
			mdb_txn_abort(txn);
			txn = NULL;
		}

		pthread_mutex_lock(&s->mu);
		*s->answers_tail = answers;
		s->answers_tail = tail;
		wake_loop(s);
	}
	pthread_mutex_unlock(&s->mu);
	if (txn)
		mdb_txn_abort(txn);
	return NULL;
}

