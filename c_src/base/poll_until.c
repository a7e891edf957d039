/* poll_until.c — see poll_until.h. */
#include "base/poll_until.h"

static void on_poll(struct evloop *loop, void *arg)
{
	struct poll_until *p = arg;
	bool in_time = p->check(p->arg);
	if (in_time || evloop_now_ms(loop) >= p->deadline_ms) {
		p->active = false;
		p->done(p->arg, in_time);
		return;
	}
	if (evloop_timer_start(loop, &p->timer, p->every_ms) != 0) {
		/* The timer heap could not grow: end the wait now rather than
		 * never, as the deadline would have. */
		p->active = false;
		p->done(p->arg, false);
	}
}

void poll_until_init(struct poll_until *p, struct evloop *loop, poll_until_check_fn *check,
		     poll_until_done_fn *done, void *arg)
{
	*p = (struct poll_until){.loop = loop, .check = check, .done = done, .arg = arg};
	evloop_timer_init(&p->timer, on_poll, p);
}

int poll_until_start(struct poll_until *p, uint32_t first_ms, uint32_t every_ms, uint32_t timeout_ms)
{
	p->every_ms = every_ms;
	p->deadline_ms = evloop_now_ms(p->loop) + timeout_ms;
	int rc = evloop_timer_start(p->loop, &p->timer, first_ms);
	p->active = rc == 0;
	return rc;
}

void poll_until_stop(struct poll_until *p)
{
	if (p->loop != NULL)
		evloop_timer_stop(p->loop, &p->timer);
	p->active = false;
}
