/* A partition's records as a topic browser (kafka-ui, AKHQ) shows them,
 * for the live page's message view (GET /api/messages) and any other
 * boundary: read from this broker's replica of the partition, up to its
 * high watermark (what a consumer may read), built once (core/view.h):
 *
 *   topic, partition, log_start_offset, high_watermark, next_offset (the
 *   offset after the last record shown), messages = [{offset, timestamp,
 *   timestamp_type ("create_time" | "log_append_time"), key?, key_base64?,
 *   value?, value_base64?, value_bytes, truncated?, headers = [{key,
 *   value? | value_base64?}], producer_id?, transactional?}]
 *
 * Keys and values are text when their bytes are UTF-8 without NULs, else
 * base64; absent when null. A value is cut to at most KIQ_MESSAGE_SHOWN
 * bytes, between characters when it is text (truncated true, value_bytes
 * its whole size). Control batches
 * (transaction markers) are skipped. Any thread. */
#ifndef KIQ_SERVER_BROKER_MESSAGES_H
#define KIQ_SERVER_BROKER_MESSAGES_H

#include <stdint.h>

#include "core/view.h"
#include "server/broker.h"

#define KIQ_MESSAGES_MAX 100
#define KIQ_MESSAGE_SHOWN 4096

/* At most limit (1..KIQ_MESSAGES_MAX) records from offset from (-1: the
 * newest limit below the high watermark) into v: 0, or -1 with the reason
 * (no such topic or partition, not hosted here, its log unreadable). */
int kiq_broker_messages_view(kiq_broker_t *b, const char *topic, int32_t partition, int64_t from, int limit,
                             const kiq_view_t *v);

#endif
