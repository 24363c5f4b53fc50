/* The controller's metadata records: Kafka's KRaft records (the
 * *_record.lua files of engine/proto/schema/data), each tagged with its
 * type (the record's api key in Kafka) and version.
 *
 * In the metadata log (`__cluster_metadata-0`) each one is a record of a
 * RecordBatch v2 with a null key and, as its value, Kafka's framing
 * (AbstractApiMessageSerde):
 *
 *     frame version (unsigned varint, 1) | type (unsigned varint) |
 *     version (unsigned varint) | the message in that version
 *
 * so Kafka's tools that decode __cluster_metadata record values read them.
 * Every record type here is flexible (compact strings and arrays, tagged
 * fields) from version 0, as in Kafka.
 *
 * Functions here are pure: any thread, on values the caller owns. */
#ifndef KIQ_CONTROLLER_METADATA_RECORD_H
#define KIQ_CONTROLLER_METADATA_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"
#include "config/config.h"
#include "proto/messages.h"

/* Kafka's metadata record types (the api keys of its metadata schemas). */
enum kiq_metadata_record_type {
    KIQ_MR_REGISTER_BROKER = 0,
    KIQ_MR_UNREGISTER_BROKER = 1,
    KIQ_MR_TOPIC = 2,
    KIQ_MR_PARTITION = 3,
    KIQ_MR_CONFIG = 4,
    KIQ_MR_PARTITION_CHANGE = 5,
    KIQ_MR_FENCE_BROKER = 7,
    KIQ_MR_UNFENCE_BROKER = 8,
    KIQ_MR_REMOVE_TOPIC = 9,
    KIQ_MR_DELEGATION_TOKEN = 10,
    KIQ_MR_USER_SCRAM_CREDENTIAL = 11,
    KIQ_MR_FEATURE_LEVEL = 12,
    KIQ_MR_CLIENT_QUOTA = 14,
    KIQ_MR_PRODUCER_IDS = 15,
    KIQ_MR_ACCESS_CONTROL_ENTRY = 18,
    KIQ_MR_REMOVE_ACCESS_CONTROL_ENTRY = 19,
    KIQ_MR_REMOVE_USER_SCRAM_CREDENTIAL = 22,
    KIQ_MR_REMOVE_DELEGATION_TOKEN = 26,
};

/* The frame version Kafka writes in front of every metadata record. */
#define KIQ_METADATA_FRAME_VERSION 1


/* One record: which message the union holds and in which version. A plain
 * value; decoded strings and arrays point into the buffer and arena they
 * were decoded from. */
typedef struct kiq_metadata_record {
    int16_t type;    /* enum kiq_metadata_record_type */
    int16_t version;
    union {
        kiq_register_broker_record_t register_broker;
        kiq_unregister_broker_record_t unregister_broker;
        kiq_topic_record_t topic;
        kiq_partition_record_t partition;
        kiq_config_record_t config;
        kiq_partition_change_record_t partition_change;
        kiq_fence_broker_record_t fence_broker;
        kiq_unfence_broker_record_t unfence_broker;
        kiq_remove_topic_record_t remove_topic;
        kiq_feature_level_record_t feature_level;
        kiq_producer_ids_record_t producer_ids;
        kiq_user_scram_credential_record_t user_scram_credential;
        kiq_remove_user_scram_credential_record_t remove_user_scram_credential;
        kiq_access_control_entry_record_t access_control_entry;
        kiq_remove_access_control_entry_record_t remove_access_control_entry;
        kiq_client_quota_record_t client_quota;
        kiq_delegation_token_record_t delegation_token;
        kiq_remove_delegation_token_record_t remove_delegation_token;
    } m;
} kiq_metadata_record_t;

/* Sets type, the version this build writes for it, and the message's
 * defaults. 0, or -1 for a type this build does not know. */
int kiq_metadata_record_init(kiq_metadata_record_t *r, int16_t type);
/* Kafka's name of the record type ("PartitionChangeRecord"), NULL when
 * unknown. */
const char *kiq_metadata_record_name(int16_t type);
/* Appends the framed record value to w. 0, or -1 with the reason (unknown
 * type or version, out of memory). */
int kiq_metadata_record_encode(kiq_wr_t *w, const kiq_metadata_record_t *r);

/* What kiq_metadata_record_decode found besides a record. */
#define KIQ_METADATA_RECORD_UNKNOWN 1

/* Decodes one framed record value p[0..len) into *r, arrays allocated in a.
 * 0; KIQ_METADATA_RECORD_UNKNOWN for a well-framed record of a type or
 * version this build does not know (a newer writer); -1 with the reason
 * when the bytes are malformed, including bytes left over after the
 * message. */
int kiq_metadata_record_decode(const uint8_t *p, size_t len, kiq_arena_t *a, kiq_metadata_record_t *r);

#endif
