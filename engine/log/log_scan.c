/* A whole partition log record by record; see log_scan.h. */
#include "log/log_scan.h"

#include "core/error.h"
#include "core/say.h"

int kiq_partition_log_scan(kiq_partition_log_t *log, const char *what, int (*record)(const kiq_record_t *, void *),
                           void *ctx)
{
    return kiq_partition_log_scan_markers(log, what, record, NULL, ctx);
}

int kiq_partition_log_scan_markers(kiq_partition_log_t *log, const char *what,
                                   int (*record)(const kiq_record_t *, void *),
                                   void (*marker)(void *ctx, int64_t producer_id, bool commit), void *ctx)
{
    int64_t offset = kiq_partition_log_start_offset(log);
    int64_t end = kiq_partition_log_end_offset(log);
    kiq_wr_t w;
    while (offset < end) {
        kiq_wr_init(&w);
        int n = kiq_partition_log_read(log, offset, 1 << 20, end, &w);
        if (n <= 0 || w.err) {
            kiq_wr_free(&w);
            if (n == 0) break;
            return kiq_error_set("cannot read %s at offset %lld: %s", what, (long long)offset,
                                 n == KIQ_LOG_OUT_OF_RANGE ? "out of range" : kiq_error_get());
        }
        kiq_batch_iter_t it;
        kiq_batch_iter_init(&it, w.buf, w.len, true);
        const uint8_t *batch;
        size_t blen;
        kiq_batch_header_t h;
        int64_t next = offset;
        while (kiq_batch_iter_next(&it, &batch, &blen, &h) == 1) {
            next = kiq_batch_last_offset(&h) + 1;
            if (kiq_batch_is_control(&h)) {
                int type = marker ? kiq_batch_control_type(batch, blen) : -1;
                if (type == KIQ_CONTROL_COMMIT || type == KIQ_CONTROL_ABORT)
                    marker(ctx, h.producer_id, type == KIQ_CONTROL_COMMIT);
                continue;
            }
            if (kiq_batch_foreach_record(batch, blen, KIQ_BATCH_MAX_DECOMPRESSED, record, ctx) != 0)
                KIQ_WARN("%s batch at offset %lld is malformed: %s; skipped", what, (long long)h.base_offset,
                         kiq_error_get());
        }
        kiq_wr_free(&w);
        if (next <= offset) break; /* never spin on a read that does not advance */
        offset = next;
    }
    return 0;
}
