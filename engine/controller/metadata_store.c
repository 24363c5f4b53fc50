/* The metadata store interface's calls; see metadata_store.h. */
#include "controller/metadata_store.h"

#include <stdlib.h>

int kiq_metadata_store_append(kiq_metadata_store_t *s, const kiq_metadata_record_t *records, size_t n,
                              int64_t *last_offset)
{
    if (n == 0) return 0;
    int64_t last = -1;
    int rc = s->ops->append(s->impl, records, n, &last);
    if (rc == 0 && last_offset) *last_offset = last;
    return rc;
}

int kiq_metadata_store_replay(kiq_metadata_store_t *s, kiq_metadata_replay_fn cb, void *ctx)
{
    return s->ops->replay(s->impl, cb, ctx);
}

void kiq_metadata_store_free(kiq_metadata_store_t *s)
{
    if (!s) return;
    s->ops->close(s->impl);
    free(s);
}
