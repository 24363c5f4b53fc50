/* The scrubber; see log_scrubber.h. */
#include "log/log_scrubber.h"

#include <inttypes.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"
#include "log/log_verify.h"

struct kiq_log_scrubber {
    kiq_topics_t *topics;
    int64_t interval_ms;
    kiq_worker_t *worker;
};

static int scrub_partition(kiq_topic_t *topic, int32_t p, kiq_partition_log_t *l)
{
    kiq_log_closed_segment_t *segs;
    uint64_t generation;
    int n = kiq_partition_log_closed_segments(l, &segs, &generation);
    int found = 0;
    for (int i = 0; i < n; i++) {
        /* through the segment's own descriptor: the bytes a fetch would
         * send, even if retention or the cleaner replaces the file now */
        kiq_segment_t *seg = segs[i].seg;
        kiq_log_verify_result_t res;
        if (kiq_log_verify_fd(seg->fd, segs[i].size, seg->path, segs[i].base_offset - 1, 0, &res) != 1) continue;
        if (kiq_partition_log_damage(l, seg, res.sound_bytes, res.last_offset + 1, res.why) == 1) {
            KIQ_ERROR("scrub: %s-%d: %s: %s; the partition is marked damaged and offsets from %lld on are not served",
                      topic->name, p, seg->path, res.why, (long long)res.last_offset + 1);
            found++;
        }
    }
    if (n > 0) kiq_partition_log_closed_release(segs, n);
    return found;
}

int kiq_log_scrub(kiq_topics_t *topics)
{
    int count, found = 0;
    kiq_topic_t **list = kiq_topics_list(topics, &count);
    for (int i = 0; list && i < count; i++) {
        kiq_topic_t *topic = list[i];
        if (atomic_load(&topic->deleted)) continue;
        for (int32_t p = 0; p < topic->npartitions; p++) {
            kiq_partition_log_t *l = atomic_load(&topic->partitions[p]->log);
            if (!l || kiq_partition_log_offline(l)) continue;
            found += kiq_partition_log_check_files(l, true);
            found += scrub_partition(topic, p, l);
        }
    }
    if (list) kiq_topics_list_free(list, count);
    return found;
}

static int64_t scrub_round(void *arg)
{
    kiq_log_scrubber_t *s = arg;
    kiq_log_scrub(s->topics);
    return s->interval_ms;
}

kiq_log_scrubber_t *kiq_log_scrubber_new(kiq_topics_t *topics, int64_t interval_ms)
{
    if (interval_ms <= 0) return NULL;
    kiq_log_scrubber_t *s = calloc(1, sizeof *s);
    if (!s) {
        kiq_error_set("out of memory");
        return NULL;
    }
    s->topics = topics;
    s->interval_ms = interval_ms;
    kiq_worker_config_t wc = {"log-scrubber", scrub_round, s, interval_ms};
    if (!(s->worker = kiq_worker_start(&wc))) {
        free(s);
        return NULL;
    }
    return s;
}

void kiq_log_scrubber_free(kiq_log_scrubber_t *s)
{
    if (!s) return;
    kiq_worker_stop(s->worker);
    free(s);
}
