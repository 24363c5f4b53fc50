/* The range server-side assignor (consumer_group.h): per topic, its
 * subscribers sorted by member id take contiguous ranges of partitions, so
 * members subscribed to co-partitioned topics get the same partition
 * numbers of each. */
#include <stdlib.h>
#include <string.h>

#include "group/consumer_group.h"

static int by_id(const void *a, const void *b)
{
    return strcmp((*(kiq_cg_member_t *const *)a)->id, (*(kiq_cg_member_t *const *)b)->id);
}

int kiq_cg_assign_range(kiq_cgroup_t *cg, const kiq_cg_topic_t *topics, int ntopics)
{
    kiq_cg_member_t **subs = calloc((size_t)cg->nmembers + 1, sizeof *subs);
    if (!subs) return -1;
    for (kiq_cg_member_t *m = cg->members; m; m = m->next) m->target.n = 0;
    int rc = 0;
    for (int t = 0; t < ntopics && rc == 0; t++) {
        int ns = 0;
        for (kiq_cg_member_t *m = cg->members; m; m = m->next)
            if (kiq_cg_member_subscribes(m, topics[t].name)) subs[ns++] = m;
        if (ns == 0) continue;
        qsort(subs, (size_t)ns, sizeof *subs, by_id);
        int32_t np = topics[t].npartitions, each = np / ns, extra = np % ns, p = 0;
        for (int i = 0; i < ns && rc == 0; i++)
            for (int32_t k = 0; k < each + (i < extra) && rc == 0; k++)
                rc = kiq_cg_set_add(&subs[i]->target, &topics[t].id, p++);
    }
    free(subs);
    return rc;
}
