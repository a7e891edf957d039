/* scratch.c — see scratch.h. */
#include "base/scratch.h"

#include <stdlib.h>

void scratch_init(struct scratch *s)
{
	s->x.buff = NULL;
	s->x.buffsz = 0;
	s->x.index = 0;
	s->busy = false;
}

ei_x_buff *scratch_get(struct scratch *s, ei_x_buff *spare)
{
	if (!s->busy) {
		if (s->x.buff == NULL) {
			s->x.buff = malloc(SCRATCH_INITIAL);
			s->x.buffsz = s->x.buff != NULL ? SCRATCH_INITIAL : 0;
		}
		if (s->x.buff != NULL) {
			s->x.index = 0;
			s->busy = true;
			return &s->x;
		}
	}
	return ei_x_new(spare) < 0 ? NULL : spare;
}

void scratch_put(struct scratch *s, ei_x_buff *x)
{
	if (x != &s->x) {
		ei_x_free(x);
		return;
	}
	s->busy = false;
	s->x.index = 0;
	if (s->x.buffsz > SCRATCH_KEEP_MAX) {
		/* Freed rather than shrunk: the next scratch_get allocates the
		 * initial size again, and one code path is simpler to trust. */
		free(s->x.buff);
		s->x.buff = NULL;
		s->x.buffsz = 0;
	}
}

void scratch_free(struct scratch *s)
{
	free(s->x.buff);
	scratch_init(s);
}
