/* Records between RecordBatch v2 bytes and Lua tables, for interceptors.
 * Both run on the thread that owns the lua_State, inside a protected call:
 * they raise Lua errors. A record table is { key, value, timestamp,
 * headers = { {name, value}, ... } } plus `offset` and `leader_epoch`
 * (fetched data) or `offset_delta` (produced data); null keys and values
 * are nil. kafkaiq.core's parse_records uses the same shape. */
#ifndef KIQ_LUA_HOOK_RECORDS_H
#define KIQ_LUA_HOOK_RECORDS_H

#include <lua.h>

#include "core/arena.h"
#include "record/batch.h"

/* Pushes the records of the v2 batches in data[0..len) as an array.
 * Control batches are left out. fetched: the data comes from the log (a
 * truncated last batch is skipped, records carry absolute offsets);
 * otherwise from a producer (offset deltas). */
void kiq_hook_push_records(lua_State *L, const uint8_t *data, size_t len, bool fetched);

/* An aborted transaction as a read_committed Fetch names it. */
typedef struct kiq_hook_aborted {
    int64_t producer_id, first_offset;
} kiq_hook_aborted_t;

/* kiq_hook_push_records for fetched data read_committed: the records of
 * the n aborted transactions (ordered by first offset) are left out, as
 * Kafka's consumer does: a producer's transactional batches from its
 * aborted transaction's first offset until its ABORT marker. */
void kiq_hook_push_committed_records(lua_State *L, const uint8_t *data, size_t len, const kiq_hook_aborted_t *ab,
                                     int n);

/* Builds one batch from the array of record tables at idx, with the codec,
 * producer fields and transactional flag of `like`. A record without a
 * timestamp gets like->base_timestamp. Returns the batch in arena memory, or
 * NULL (with *len 0) when the array is empty. */
uint8_t *kiq_hook_build_batch(lua_State *L, int idx, const kiq_batch_header_t *like,
                              kiq_arena_t *a, size_t *len);

#endif
