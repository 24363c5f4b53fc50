/* A coordinator topic's records for one append; see keyed_records.h. */
#include "record/keyed_records.h"

#include "core/error.h"

void kiq_keyed_records_init(kiq_keyed_records_t *rs, int64_t now_ms)
{
    kiq_batch_builder_init(&rs->bb, 0, now_ms);
    rs->now_ms = now_ms;
    rs->count = 0;
}

void kiq_keyed_records_free(kiq_keyed_records_t *rs) { kiq_batch_builder_free(&rs->bb); }

int kiq_keyed_records_add(kiq_keyed_records_t *rs, kiq_wr_t *key, kiq_wr_t *value)
{
    int rc = -1;
    if (key->err || (value && value->err))
        kiq_error_set("out of memory");
    else if ((rc = kiq_batch_builder_add(&rs->bb, key->buf, (int32_t)key->len, value ? value->buf : NULL,
                                         value ? (int32_t)value->len : -1, NULL, 0, rs->now_ms)) == 0)
        rs->count++;
    kiq_wr_free(key);
    if (value) kiq_wr_free(value);
    return rc;
}

int kiq_keyed_records_build(kiq_keyed_records_t *rs, kiq_wr_t *w)
{
    kiq_wr_init(w);
    if (kiq_batch_builder_finish(&rs->bb, w) == 0 && !w->err) return 0;
    kiq_wr_free(w);
    return w->err ? kiq_error_set("out of memory") : -1;
}
