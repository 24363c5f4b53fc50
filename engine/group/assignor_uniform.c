/* The uniform server-side assignor (consumer_group.h): every member gets
 * about as many partitions as any other that could take them, and keeps
 * what it had where the balance allows, so a rebalance moves few. */
#include <stdlib.h>
#include <string.h>

#include "group/consumer_group.h"

typedef struct flat {
    const kiq_cg_topic_t *topics;
    int ntopics;
    int *base;  /* topic index -> first slot */
    int total;  /* slots: one per partition */
    int *owner; /* slot -> member index, -1: none */
} flat_t;

static int topic_of(const flat_t *f, int slot)
{
    int t = 0;
    while (t + 1 < f->ntopics && f->base[t + 1] <= slot) t++;
    return t;
}

static int slot_of(const flat_t *f, const kiq_cg_tp_t *tp)
{
    for (int t = 0; t < f->ntopics; t++)
        if (memcmp(f->topics[t].id.b, tp->topic.b, sizeof tp->topic.b) == 0)
            return tp->partition >= 0 && tp->partition < f->topics[t].npartitions ? f->base[t] + tp->partition : -1;
    return -1;
}

int kiq_cg_assign_uniform(kiq_cgroup_t *cg, const kiq_cg_topic_t *topics, int ntopics)
{
    int n = cg->nmembers, rc = -1;
    flat_t f = {topics, ntopics, calloc((size_t)ntopics + 1, sizeof(int)), 0, NULL};
    kiq_cg_member_t **mem = calloc((size_t)n + 1, sizeof *mem);
    int *count = calloc((size_t)n + 1, sizeof *count);
    if (!f.base || !mem || !count) goto out;
    for (int t = 0; t < ntopics; t++) {
        f.base[t] = f.total;
        f.total += topics[t].npartitions > 0 ? topics[t].npartitions : 0;
    }
    if (!(f.owner = malloc((size_t)(f.total ? f.total : 1) * sizeof *f.owner))) goto out;
    for (int s = 0; s < f.total; s++) f.owner[s] = -1;
    int i = 0;
    for (kiq_cg_member_t *m = cg->members; m; m = m->next) mem[i++] = m;
    /* bool[member][topic]: may it take the topic's partitions */
    bool *may = calloc((size_t)(n ? n : 1) * (size_t)(ntopics ? ntopics : 1), sizeof *may);
    if (!may) goto out;
    for (i = 0; i < n; i++)
        for (int t = 0; t < ntopics; t++) may[i * ntopics + t] = kiq_cg_member_subscribes(mem[i], topics[t].name);
    /* what each had, while it still may have it */
    for (i = 0; i < n; i++) {
        for (int k = 0; k < mem[i]->target.n; k++) {
            int s = slot_of(&f, &mem[i]->target.v[k]);
            if (s >= 0 && f.owner[s] < 0 && may[i * ntopics + topic_of(&f, s)]) {
                f.owner[s] = i;
                count[i]++;
            }
        }
    }
    /* the rest, each to the least loaded member that may take it */
    for (int s = 0; s < f.total; s++) {
        if (f.owner[s] >= 0) continue;
        int t = topic_of(&f, s), best = -1;
        for (i = 0; i < n; i++)
            if (may[i * ntopics + t] && (best < 0 || count[i] < count[best])) best = i;
        if (best >= 0) {
            f.owner[s] = best;
            count[best]++;
        }
    }
    /* then even out: a partition moves while another eligible member has
     * two fewer; each move lowers the spread, so this ends */
    for (bool moved = true; moved;) {
        moved = false;
        for (int s = f.total - 1; s >= 0; s--) {
            int a = f.owner[s], t = topic_of(&f, s), best = -1;
            if (a < 0) continue;
            for (i = 0; i < n; i++)
                if (may[i * ntopics + t] && count[i] + 1 < count[a] && (best < 0 || count[i] < count[best])) best = i;
            if (best >= 0) {
                f.owner[s] = best;
                count[a]--;
                count[best]++;
                moved = true;
            }
        }
    }
    free(may);
    for (i = 0; i < n; i++) mem[i]->target.n = 0;
    rc = 0;
    for (int s = 0; s < f.total && rc == 0; s++) {
        if (f.owner[s] < 0) continue;
        int t = topic_of(&f, s);
        rc = kiq_cg_set_add(&mem[f.owner[s]]->target, &topics[t].id, s - f.base[t]);
    }
out:
    free(f.base);
    free(f.owner);
    free(mem);
    free(count);
    return rc;
}
