/*
 * region_instances.c — reports of entity incarnations for the test setting
 * instance_reports_to (region_instances.h). Each report is one message to
 * {shardnode_instances, Node}:
 *
 *   {shardnode_instance, ThisNode, Type, EntityId, started | stopped, TimeUs}
 *
 * TimeUs is the wall clock (CLOCK_REALTIME) in microseconds, as
 * os:system_time(microsecond) reads it: the collector orders the reports
 * of several members by it, which is exact for members on one machine (a
 * test's) and as good as the clocks' agreement elsewhere. Reports are sent
 * as any message to that node; one that cannot be sent is lost (a test
 * setting: the collector then reports what it did not see).
 */
#include "base/evloop.h"
#include "distribution/dist_node.h"
#include "etf/term.h"
#include "etf/term_encode.h"
#include "sharding/region_instances.h"

static void report(void *arg, const struct shard *s, const char *id, size_t len, bool started)
{
	(void)s;
	struct region *r = arg;
	ei_x_buff x;
	if (ei_x_new_with_version(&x) < 0)
		return;
	int rc = ei_x_encode_tuple_header(&x, 6) | term_x_encode_atom(&x, "shardnode_instance") |
		 term_x_encode_atom(&x, dist_node_name(r->cfg.node)) | term_x_encode_atom(&x, r->cfg.name);
	if (rc == 0)
		rc = term_x_append_raw(&x, id, len);
	if (rc == 0)
		rc = term_x_encode_atom(&x, started ? "started" : "stopped") | term_x_encode_uint(&x, evloop_wall_us());
	if (rc == 0)
		(void)outlet_reg_send(&r->cfg.out, &r->pid, "shardnode_instances", r->cfg.instance_reports_to, x.buff,
				      (size_t)x.index);
	ei_x_free(&x);
}

static void report_started(struct entity *e, void *arg)
{
	struct shard *s = arg;
	report(s->instances.arg, s, entity_id(e), e->id_len, true);
}

void region_instances_watch(struct region *r, struct shard *s)
{
	if (r->cfg.instance_reports_to == NULL || r->cfg.instance_reports_to[0] == '\0')
		return;
	s->instances = (struct shard_instance_hook){report, r};
	entity_table_each(&s->entities, report_started, s);
}
