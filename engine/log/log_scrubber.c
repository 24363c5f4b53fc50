/* The scrubber; see log_scrubber.h. */
#include "log/log_scrubber.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/say.h"
#include "core/worker.h"
#include "log/log_names.h"
#include "log/log_verify.h"

/* Segments of one partition looked at per pass at most. */
#define MAX_SEGMENTS 4096

struct kiq_log_scrubber {
    kiq_topics_t *topics;
    int64_t interval_ms;
    kiq_worker_t *worker;
};

static int scrub_partition(kiq_topic_t *topic, int32_t p, kiq_partition_log_t *l, kiq_log_segment_info_t *segs)
{
    int n = kiq_partition_log_segments(l, segs, MAX_SEGMENTS);
    if (n > MAX_SEGMENTS) n = MAX_SEGMENTS;
    int found = 0;
    for (int i = 0; i + 1 < n; i++) { /* the last is the active one */
        char path[PATH_MAX], why[512] = "";
        if (kiq_log_segment_path(path, sizeof path, kiq_partition_log_dir(l), segs[i].base_offset, KIQ_LOG_SUFFIX) != 0)
            continue;
        int64_t last, batches = 0;
        /* retention or the cleaner may replace or remove it meanwhile:
         * an unreadable file is not damage */
        if (kiq_log_verify_segment(path, segs[i].base_offset - 1, 0, &last, &batches, why, sizeof why) != 1) continue;
        if (kiq_partition_log_damage(l, segs[i].base_offset, why) == 1) {
            KIQ_ERROR("scrub: %s-%d: %s: %s; the partition is marked damaged", topic->name, p, path, why);
            found++;
        }
    }
    return found;
}

int kiq_log_scrub(kiq_topics_t *topics)
{
    int count, found = 0;
    kiq_topic_t **list = kiq_topics_list(topics, &count);
    kiq_log_segment_info_t *segs = malloc(MAX_SEGMENTS * sizeof *segs);
    for (int i = 0; list && segs && i < count; i++) {
        kiq_topic_t *topic = list[i];
        if (atomic_load(&topic->deleted)) continue;
        for (int32_t p = 0; p < topic->npartitions; p++) {
            kiq_partition_log_t *l = atomic_load(&topic->partitions[p]->log);
            if (l && !kiq_partition_log_offline(l)) found += scrub_partition(topic, p, l, segs);
        }
    }
    free(segs);
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
