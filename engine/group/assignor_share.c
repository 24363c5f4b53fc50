/* The share groups' server-side assignor (Kafka's SimpleAssignor for share
 * groups, KIP-932): every partition of a subscribed topic goes to at least
 * one of its subscribers. With no more subscribers than partitions they
 * are dealt out in turn; with more, partitions are shared, each member
 * getting one, so no member idles: in a share group several members may
 * consume one partition, the partition's leader handing each its own
 * records. Members in id order, so the same group gets the same answer. */
#include <stdlib.h>
#include <string.h>

#include "group/consumer_group.h"

static int by_id(const void *a, const void *b)
{
    return strcmp((*(kiq_cg_member_t *const *)a)->id, (*(kiq_cg_member_t *const *)b)->id);
}

int kiq_cg_assign_share(kiq_cgroup_t *cg, const kiq_cg_topic_t *topics, int ntopics)
{
    int n = cg->nmembers;
    kiq_cg_member_t **mem = calloc((size_t)(n ? n : 1), sizeof *mem);
    kiq_cg_member_t **subs = calloc((size_t)(n ? n : 1), sizeof *subs);
    int rc = -1;
    if (!mem || !subs) goto out;
    int i = 0;
    for (kiq_cg_member_t *m = cg->members; m; m = m->next) {
        m->target.n = 0;
        mem[i++] = m;
    }
    qsort(mem, (size_t)n, sizeof *mem, by_id);
    for (int t = 0; t < ntopics; t++) {
        int ns = 0, np = topics[t].npartitions;
        for (i = 0; i < n; i++)
            if (kiq_cg_member_subscribes(mem[i], topics[t].name)) subs[ns++] = mem[i];
        if (ns == 0 || np <= 0) continue;
        if (ns <= np) {
            for (int p = 0; p < np; p++)
                if (kiq_cg_set_add(&subs[p % ns]->target, &topics[t].id, p) != 0) goto out;
        } else {
            for (i = 0; i < ns; i++)
                if (kiq_cg_set_add(&subs[i]->target, &topics[t].id, i % np) != 0) goto out;
        }
    }
    rc = 0;
out:
    free(mem);
    free(subs);
    return rc;
}
