/* Data messages (engine/proto/schema/data): the __consumer_offsets and
 * __transaction_state keys and values, metadata records, transaction markers,
 * .txnindex entries and the consumer protocol payloads. Every one round-trips at every
 * version; bytes laid out by hand as Kafka writes them decode to the right
 * fields and re-encode to the same bytes; any truncation fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "proto/messages.h"

static void roundtrip(const kiq_data_codec_t *c, int16_t v, bool sample)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    void *m = kiq_arena_alloc(&a, c->size);
    void *back = kiq_arena_alloc(&a, c->size);
    if (sample)
        kiq_data_sample(c->name)(m, v, &a, 7);
    else
        c->init(m);
    kiq_wr_t w1, w2;
    kiq_wr_init(&w1);
    kiq_wr_init(&w2);
    assert_int_equal(c->encode(&w1, v, m), 0);
    kiq_rd_t r;
    kiq_rd_init(&r, w1.buf, w1.len);
    if (c->decode(&r, v, &a, back) != 0)
        fail_msg("%s v%d: decode failed at %zu: %s", c->name, v, kiq_rd_offset(&r), r.err);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_int_equal(c->encode(&w2, v, back), 0);
    assert_int_equal(w1.len, w2.len);
    assert_memory_equal(w1.buf, w2.buf, w1.len);
    kiq_wr_free(&w1);
    kiq_wr_free(&w2);
    kiq_arena_reset(&a);
}

static void test_every_message_every_version(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int16_t min, max;
    } want[] = {
        {"OffsetCommitKey", 0, 1},    {"OffsetCommitValue", 0, 3},
        {"GroupMetadataKey", 2, 2},   {"GroupMetadataValue", 0, 3},
        {"ConsumerProtocolSubscription", 0, 1}, {"ConsumerProtocolAssignment", 0, 1},
        {"RegisterBrokerRecord", 0, 3}, {"TopicRecord", 0, 0},
        {"PartitionRecord", 0, 2},      {"ConfigRecord", 0, 0},
        {"PartitionChangeRecord", 0, 2}, {"FenceBrokerRecord", 0, 0},
        {"UnfenceBrokerRecord", 0, 0},  {"RemoveTopicRecord", 0, 0},
        {"TransactionLogKey", 0, 0},    {"TransactionLogValue", 0, 1},
        {"EndTxnMarker", 0, 0},         {"ControlRecordKey", 0, 0},
        {"AbortedTxn", 0, 0},           {"ProducerIdsRecord", 0, 0},
        {"LeaderChangeMessage", 0, 1},  {"SnapshotHeaderRecord", 0, 0},
        {"SnapshotFooterRecord", 0, 0}, {"VotersRecord", 0, 0},
        {"KRaftVersionRecord", 0, 0},   {"UnregisterBrokerRecord", 0, 0},
        {"FeatureLevelRecord", 0, 0},
        {"UserScramCredentialRecord", 0, 0}, {"RemoveUserScramCredentialRecord", 0, 0},
        {"AccessControlEntryRecord", 0, 0}, {"RemoveAccessControlEntryRecord", 0, 0},
        {"ClientQuotaRecord", 0, 0},
        {"DelegationTokenRecord", 0, 0}, {"RemoveDelegationTokenRecord", 0, 0},
        {"ConsumerGroupMetadataKey", 3, 3}, {"ConsumerGroupMetadataValue", 0, 0},
        {"ConsumerGroupMemberMetadataKey", 5, 5}, {"ConsumerGroupMemberMetadataValue", 0, 0},
        {"ConsumerGroupTargetAssignmentMetadataKey", 6, 6}, {"ConsumerGroupTargetAssignmentMetadataValue", 0, 0},
        {"ConsumerGroupTargetAssignmentMemberKey", 7, 7}, {"ConsumerGroupTargetAssignmentMemberValue", 0, 0},
        {"ConsumerGroupCurrentMemberAssignmentKey", 8, 8}, {"ConsumerGroupCurrentMemberAssignmentValue", 0, 0},
        {"ShareSnapshotKey", 0, 0},     {"ShareSnapshotValue", 0, 0},
    };
    assert_int_equal(kiq_data_codec_count, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const kiq_data_codec_t *c = kiq_data_codec(want[i].name);
        assert_non_null(c);
        assert_int_equal(c->min_version, want[i].min);
        assert_int_equal(c->max_version, want[i].max);
        assert_non_null(kiq_data_sample(c->name));
        for (int16_t v = c->min_version; v <= c->max_version; v++) {
            roundtrip(c, v, true);
            roundtrip(c, v, false);
        }
    }
    assert_null(kiq_data_codec("OffsetCommit"));
    assert_null(kiq_data_codec("offsetcommitvalue"));
    assert_null(kiq_data_codec(NULL));
    assert_null(kiq_data_sample("Nope"));
}

static size_t encoded_len(const kiq_data_codec_t *c, int16_t v)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    void *m = kiq_arena_alloc(&a, c->size);
    kiq_data_sample(c->name)(m, v, &a, 3);
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(c->encode(&w, v, m), 0);
    size_t n = w.len;
    kiq_wr_free(&w);
    kiq_arena_reset(&a);
    return n;
}

/* Fields come and go with the version: expire_timestamp only in v1,
 * leader_epoch from v3; a member's rebalance_timeout from v1. */
static void test_versions_change_layout(void **state)
{
    (void)state;
    const kiq_data_codec_t *c = kiq_data_codec("OffsetCommitValue");
    size_t v0 = encoded_len(c, 0);
    assert_int_equal(encoded_len(c, 1), v0 + 8);
    assert_int_equal(encoded_len(c, 2), v0);
    assert_int_equal(encoded_len(c, 3), v0 + 4);
    c = kiq_data_codec("GroupMetadataValue");
    /* two sample members, 4 bytes of rebalance_timeout each */
    assert_int_equal(encoded_len(c, 1), encoded_len(c, 0) + 8);
    assert_int_equal(encoded_len(c, 2), encoded_len(c, 1) + 8);
}

/* Decodes buf, then every shorter prefix must fail. */
static void check_truncations_fail(const kiq_data_codec_t *c, int16_t v, const uint8_t *buf, size_t len)
{
    kiq_arena_t a;
    kiq_arena_init(&a);
    void *m = kiq_arena_alloc(&a, c->size);
    for (size_t n = 0; n < len; n++) {
        kiq_rd_t r;
        kiq_rd_init(&r, buf, n);
        if (c->decode(&r, v, &a, m) == 0) fail_msg("%s v%d: %zu of %zu bytes decoded", c->name, v, n, len);
        assert_non_null(r.err);
    }
    kiq_arena_reset(&a);
}

static void check_reencodes(const kiq_data_codec_t *c, int16_t v, const void *m, const uint8_t *buf, size_t len)
{
    kiq_wr_t w;
    kiq_wr_init(&w);
    assert_int_equal(c->encode(&w, v, m), 0);
    assert_int_equal(w.len, len);
    assert_memory_equal(w.buf, buf, len);
    kiq_wr_free(&w);
}

/* __share_group_state's snapshot record as Kafka 4.4's share coordinator
 * writes it (the bytes its own ShareSnapshotKey/Value serialize to). */
static void test_share_snapshot_by_hand(void **state)
{
    (void)state;
    const uint8_t key[] = {
        0, 1, 'g',                                      /* group_id */
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, /* topic_id */
        0, 0, 0, 3,                                     /* partition */
    };
    const uint8_t value[] = {
        0, 0, 0, 2,                   /* snapshot_epoch */
        0, 0, 0, 0,                   /* state_epoch */
        0, 0, 0, 0,                   /* leader_epoch */
        0, 0, 0, 0, 0, 0, 0, 5,       /* start_offset */
        0, 0, 0, 0, 0, 0, 0x03, 0xe8, /* create_timestamp 1000 */
        0, 0, 0, 0, 0, 0, 0x07, 0xd0, /* write_timestamp 2000 */
        2,                            /* state_batches: one (compact length + 1) */
        0, 0, 0, 0, 0, 0, 0, 5,       /*   first_offset */
        0, 0, 0, 0, 0, 0, 0, 9,       /*   last_offset */
        2,                            /*   delivery_state: acknowledged */
        0, 1,                         /*   delivery_count */
        0,                            /*   no tagged fields */
        0,                            /* no tagged fields (delivery_complete_count unset) */
    };
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_share_snapshot_key_t k;
    kiq_rd_t r;
    kiq_rd_init(&r, key, sizeof key);
    assert_int_equal(kiq_share_snapshot_key_decode(&r, 0, &a, &k), 0);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_true(kiq_str_eq(k.group_id, "g"));
    assert_int_equal(k.topic_id.b[15], 16);
    assert_int_equal(k.partition, 3);
    check_reencodes(kiq_data_codec("ShareSnapshotKey"), 0, &k, key, sizeof key);
    kiq_share_snapshot_value_t v;
    kiq_rd_init(&r, value, sizeof value);
    assert_int_equal(kiq_share_snapshot_value_decode(&r, 0, &a, &v), 0);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_int_equal(v.snapshot_epoch, 2);
    assert_int_equal(v.start_offset, 5);
    assert_int_equal(v.write_timestamp, 2000);
    assert_int_equal(v.state_batches_n, 1);
    assert_true(v.state_batches[0].first_offset == 5 && v.state_batches[0].last_offset == 9);
    assert_true(v.state_batches[0].delivery_state == 2 && v.state_batches[0].delivery_count == 1);
    check_reencodes(kiq_data_codec("ShareSnapshotValue"), 0, &v, value, sizeof value);
    check_truncations_fail(kiq_data_codec("ShareSnapshotValue"), 0, value, sizeof value);
    kiq_arena_reset(&a);
}

/* A classic member's record in a consumer group as Kafka 4.x writes it: its
 * ClassicMemberMetadata is tagged field 0, a nullable struct (its size one
 * more for the marker, then the marker 1, then the fields); a member of the
 * consumer protocol leaves the tag out. */
static void test_classic_member_metadata_by_hand(void **state)
{
    (void)state;
    const uint8_t buf[] = {
        0,                  /* instance_id: null */
        0,                  /* rack_id: null */
        2, 'c',             /* client_id */
        3, '/', 'h',        /* client_host */
        2, 2, 't',          /* subscribed_topic_names: ["t"] */
        0,                  /* subscribed_topic_regex: null */
        0, 0, 0x75, 0x30,   /* rebalance_timeout_ms 30000 */
        0,                  /* server_assignor: null */
        1,                  /* one tagged field */
        0, 17,              /*   tag 0, 16 bytes and the marker */
        1,                  /*   present */
        0, 0, 0xaf, 0xc8,   /*   session_timeout_ms 45000 */
        2,                  /*   supported_protocols: one */
        6, 'r', 'a', 'n', 'g', 'e', /* name */
        3, 0, 1,            /*     metadata: two bytes */
        0,                  /*     no tagged fields */
        0,                  /*   no tagged fields */
    };
    kiq_arena_t a;
    kiq_arena_init(&a);
    const kiq_data_codec_t *c = kiq_data_codec("ConsumerGroupMemberMetadataValue");
    kiq_consumer_group_member_metadata_value_t m;
    kiq_rd_t r;
    kiq_rd_init(&r, buf, sizeof buf);
    assert_int_equal(kiq_consumer_group_member_metadata_value_decode(&r, 0, &a, &m), 0);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_false(m.classic_member_metadata_null);
    assert_int_equal(m.classic_member_metadata.session_timeout_ms, 45000);
    assert_int_equal(m.classic_member_metadata.supported_protocols_n, 1);
    assert_true(kiq_str_eq(m.classic_member_metadata.supported_protocols[0].name, "range"));
    assert_int_equal(m.classic_member_metadata.supported_protocols[0].metadata.len, 2);
    assert_int_equal(m._tags.count, 0); /* known, not kept as unknown */
    check_reencodes(c, 0, &m, buf, sizeof buf);
    check_truncations_fail(c, 0, buf, sizeof buf);
    /* without it: no tagged field at all */
    const uint8_t none[] = {0, 0, 2, 'c', 3, '/', 'h', 2, 2, 't', 0, 0, 0, 0x75, 0x30, 0, 0};
    m.classic_member_metadata_null = true;
    check_reencodes(c, 0, &m, none, sizeof none);
    kiq_consumer_group_member_metadata_value_t plain;
    kiq_rd_init(&r, none, sizeof none);
    assert_int_equal(kiq_consumer_group_member_metadata_value_decode(&r, 0, &a, &plain), 0);
    assert_true(plain.classic_member_metadata_null);
    kiq_arena_reset(&a);
}

static void test_offset_commit_value_v3_by_hand(void **state)
{
    (void)state;
    const uint8_t buf[] = {
        0, 0, 0, 0, 0, 0, 0, 42,                    /* offset */
        0, 0, 0, 5,                                 /* leader_epoch */
        0, 2, 'm', '1',                             /* metadata */
        0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00,   /* commit_timestamp 1700000000000 */
    };
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_offset_commit_value_t m;
    kiq_rd_t r;
    kiq_rd_init(&r, buf, sizeof buf);
    assert_int_equal(kiq_offset_commit_value_decode(&r, 3, &a, &m), 0);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_int_equal(m.offset, 42);
    assert_int_equal(m.leader_epoch, 5);
    assert_true(kiq_str_eq(m.metadata, "m1"));
    assert_int_equal(m.commit_timestamp, INT64_C(1700000000000));
    assert_int_equal(m.expire_timestamp, -1); /* absent after v1: the default */
    check_reencodes(kiq_data_codec("OffsetCommitValue"), 3, &m, buf, sizeof buf);
    check_truncations_fail(kiq_data_codec("OffsetCommitValue"), 3, buf, sizeof buf);
    /* Read as v0 the same bytes do not line up (v0 has no leader_epoch):
     * bytes are left over and the epoch keeps its default. */
    kiq_rd_init(&r, buf, sizeof buf);
    assert_int_equal(kiq_offset_commit_value_decode(&r, 0, &a, &m), 0);
    assert_int_not_equal(kiq_rd_left(&r), 0);
    assert_int_equal(m.leader_epoch, -1);
    kiq_arena_reset(&a);
}

/* An ongoing transaction as Kafka 4 writes it in __transaction_state:
 * value version 1, flexible, the previous producer id and the client's
 * transaction version tagged (tags 0 and 2; defaults left out). */
static void test_transaction_log_value_v1_by_hand(void **state)
{
    (void)state;
    const uint8_t buf[] = {
        0, 0, 0, 0, 0, 0, 0x03, 0xe8,               /* producer_id 1000 */
        0, 2,                                       /* producer_epoch */
        0, 0, 0xea, 0x60,                           /* transaction_timeout_ms 60000 */
        1,                                          /* transaction_status: Ongoing */
        2,                                          /* transaction_partitions: 1 */
        2, 't',                                     /*   topic */
        3, 0, 0, 0, 0, 0, 0, 0, 3,                  /*   partition_ids [0, 3] */
        0,                                          /*   (no tags) */
        0, 0, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00,   /* last update 1700000000000 */
        0, 0, 0x01, 0x8b, 0xcf, 0xe4, 0xcb, 0xc0,   /* start 1699999960000 */
        2,                                          /* tags: 2 */
        0, 8, 0, 0, 0, 0, 0, 0, 0x03, 0xe7,         /*   0: previous_producer_id 999 */
        2, 2, 0, 2,                                 /*   2: client_transaction_version 2 */
    };
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_transaction_log_value_t m;
    kiq_rd_t r;
    kiq_rd_init(&r, buf, sizeof buf);
    assert_int_equal(kiq_transaction_log_value_decode(&r, 1, &a, &m), 0);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_int_equal(m.producer_id, 1000);
    assert_int_equal(m.previous_producer_id, 999);
    assert_int_equal(m.next_producer_id, -1);
    assert_int_equal(m.next_producer_epoch, -1);
    assert_int_equal(m.producer_epoch, 2);
    assert_int_equal(m.transaction_timeout_ms, 60000);
    assert_int_equal(m.transaction_status, 1);
    assert_int_equal(m.transaction_partitions_n, 1);
    assert_true(kiq_str_eq(m.transaction_partitions[0].topic, "t"));
    assert_int_equal(m.transaction_partitions[0].partition_ids_n, 2);
    assert_int_equal(m.transaction_partitions[0].partition_ids[1], 3);
    assert_int_equal(m.transaction_start_timestamp_ms, INT64_C(1699999960000));
    assert_int_equal(m.client_transaction_version, 2);
    check_reencodes(kiq_data_codec("TransactionLogValue"), 1, &m, buf, sizeof buf);
    check_truncations_fail(kiq_data_codec("TransactionLogValue"), 1, buf, sizeof buf);
    kiq_arena_reset(&a);
}

/* A commit marker's key and value (after their int16 versions) and a
 * .txnindex entry, byte for byte. */
static void test_markers_and_txn_index_by_hand(void **state)
{
    (void)state;
    kiq_arena_t a;
    kiq_arena_init(&a);
    const uint8_t key[] = {0, 1};             /* type: COMMIT */
    const uint8_t value[] = {0, 0, 0, 7};     /* coordinator_epoch 7 */
    const uint8_t entry[] = {
        0, 0, 0, 0, 0, 0, 0, 9,               /* producer_id */
        0, 0, 0, 0, 0, 0, 0, 100,             /* first_offset */
        0, 0, 0, 0, 0, 0, 0, 110,             /* last_offset: the abort marker */
        0, 0, 0, 0, 0, 0, 0, 111,             /* last_stable_offset */
    };
    kiq_control_record_key_t k;
    kiq_end_txn_marker_t v;
    kiq_aborted_txn_t e;
    kiq_rd_t r;
    kiq_rd_init(&r, key, sizeof key);
    assert_int_equal(kiq_control_record_key_decode(&r, 0, &a, &k), 0);
    assert_int_equal(k.type, 1);
    kiq_rd_init(&r, value, sizeof value);
    assert_int_equal(kiq_end_txn_marker_decode(&r, 0, &a, &v), 0);
    assert_int_equal(v.coordinator_epoch, 7);
    kiq_rd_init(&r, entry, sizeof entry);
    assert_int_equal(kiq_aborted_txn_decode(&r, 0, &a, &e), 0);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_int_equal(e.producer_id, 9);
    assert_int_equal(e.first_offset, 100);
    assert_int_equal(e.last_offset, 110);
    assert_int_equal(e.last_stable_offset, 111);
    check_reencodes(kiq_data_codec("AbortedTxn"), 0, &e, entry, sizeof entry);
    check_truncations_fail(kiq_data_codec("AbortedTxn"), 0, entry, sizeof entry);
    check_truncations_fail(kiq_data_codec("EndTxnMarker"), 0, value, sizeof value);
    kiq_arena_reset(&a);
}

static void test_group_metadata_value_v3_by_hand(void **state)
{
    (void)state;
    const uint8_t buf[] = {
        0, 8, 'c', 'o', 'n', 's', 'u', 'm', 'e', 'r', /* protocol_type */
        0, 0, 0, 3,                                   /* generation */
        0, 5, 'r', 'a', 'n', 'g', 'e',                /* protocol */
        0, 3, 'm', '-', '1',                          /* leader */
        0, 0, 0, 0, 0, 0, 0x03, 0xe8,                 /* current_state_timestamp 1000 */
        0, 0, 0, 1,                                   /* members: 1 */
        0, 3, 'm', '-', '1',                          /*   member_id */
        0xff, 0xff,                                   /*   group_instance_id: null */
        0, 1, 'c',                                    /*   client_id */
        0, 1, 'h',                                    /*   client_host */
        0, 0x04, 0x93, 0xe0,                          /*   rebalance_timeout 300000 */
        0, 0, 0x27, 0x10,                             /*   session_timeout 10000 */
        0, 0, 0, 2, 0xab, 0xcd,                       /*   subscription */
        0, 0, 0, 0,                                   /*   assignment: empty */
    };
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_group_metadata_value_t m;
    kiq_rd_t r;
    kiq_rd_init(&r, buf, sizeof buf);
    assert_int_equal(kiq_group_metadata_value_decode(&r, 3, &a, &m), 0);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_true(kiq_str_eq(m.protocol_type, "consumer"));
    assert_int_equal(m.generation, 3);
    assert_true(kiq_str_eq(m.protocol, "range"));
    assert_true(kiq_str_eq(m.leader, "m-1"));
    assert_int_equal(m.current_state_timestamp, 1000);
    assert_int_equal(m.members_n, 1);
    const kiq_group_metadata_value_members_t *mb = &m.members[0];
    assert_true(kiq_str_eq(mb->member_id, "m-1"));
    assert_null(mb->group_instance_id.p);
    assert_true(kiq_str_eq(mb->client_id, "c"));
    assert_true(kiq_str_eq(mb->client_host, "h"));
    assert_int_equal(mb->rebalance_timeout, 300000);
    assert_int_equal(mb->session_timeout, 10000);
    assert_int_equal(mb->subscription.len, 2);
    assert_int_equal(mb->subscription.p[0], 0xab);
    assert_int_equal(mb->subscription.p[1], 0xcd);
    assert_int_equal(mb->assignment.len, 0);
    check_reencodes(kiq_data_codec("GroupMetadataValue"), 3, &m, buf, sizeof buf);
    check_truncations_fail(kiq_data_codec("GroupMetadataValue"), 3, buf, sizeof buf);
    kiq_arena_reset(&a);
}

static void test_consumer_protocol_assignment_v0_by_hand(void **state)
{
    (void)state;
    const uint8_t buf[] = {
        0, 0, 0, 1,                 /* assigned_partitions: 1 */
        0, 1, 't',                  /*   topic */
        0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, /* partitions [0, 3] */
        0xff, 0xff, 0xff, 0xff,     /* user_data: null */
    };
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_consumer_protocol_assignment_t m;
    kiq_rd_t r;
    kiq_rd_init(&r, buf, sizeof buf);
    assert_int_equal(kiq_consumer_protocol_assignment_decode(&r, 0, &a, &m), 0);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_int_equal(m.assigned_partitions_n, 1);
    assert_true(kiq_str_eq(m.assigned_partitions[0].topic, "t"));
    assert_int_equal(m.assigned_partitions[0].partitions_n, 2);
    assert_int_equal(m.assigned_partitions[0].partitions[0], 0);
    assert_int_equal(m.assigned_partitions[0].partitions[1], 3);
    assert_null(m.user_data.p);
    check_reencodes(kiq_data_codec("ConsumerProtocolAssignment"), 0, &m, buf, sizeof buf);
    check_truncations_fail(kiq_data_codec("ConsumerProtocolAssignment"), 0, buf, sizeof buf);
    /* A fresh message's user_data is null too, as Kafka's default says. */
    kiq_consumer_protocol_assignment_init(&m);
    assert_null(m.user_data.p);
    kiq_arena_reset(&a);
}

/* KRaft control record values carry their version as their first field;
 * VotersRecord nests an endpoint array and a struct in each voter. */
static void test_voters_record_by_hand(void **state)
{
    (void)state;
    const uint8_t buf[] = {
        0, 0,                       /* version */
        0x02,                       /* voters: 1 */
        0, 0, 0, 1,                 /*   voter_id */
        0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44,
        0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, /* voter_directory_id */
        0x02,                       /*   endpoints: 1 */
        0x02, 'C',                  /*     name */
        0x02, 'h',                  /*     host */
        0x23, 0x85,                 /*     port 9093 (uint16) */
        0x00,                       /*     endpoint tags */
        0, 0, 0, 1,                 /*   kraft_version_feature 0-1 */
        0x00,                       /*   its tags */
        0x00,                       /*   voter tags */
        0x00,                       /* record tags */
    };
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_voters_record_t m;
    kiq_rd_t r;
    kiq_rd_init(&r, buf, sizeof buf);
    assert_int_equal(kiq_voters_record_decode(&r, 0, &a, &m), 0);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_int_equal(m.voters_n, 1);
    assert_int_equal(m.voters[0].voter_id, 1);
    assert_int_equal(m.voters[0].voter_directory_id.b[0], 0x44);
    assert_int_equal(m.voters[0].endpoints_n, 1);
    assert_true(kiq_str_eq(m.voters[0].endpoints[0].name, "C"));
    assert_int_equal(m.voters[0].endpoints[0].port, 9093);
    assert_int_equal(m.voters[0].kraft_version_feature.min_supported_version, 0);
    assert_int_equal(m.voters[0].kraft_version_feature.max_supported_version, 1);
    check_reencodes(kiq_data_codec("VotersRecord"), 0, &m, buf, sizeof buf);
    check_truncations_fail(kiq_data_codec("VotersRecord"), 0, buf, sizeof buf);
    kiq_arena_reset(&a);
}

/* LeaderChangeMessage v1 adds each voter's directory id. */
static void test_leader_change_message_by_hand(void **state)
{
    (void)state;
    const uint8_t v0[] = {
        0, 0,                       /* version */
        0, 0, 0, 2,                 /* leader_id */
        0x03, 0, 0, 0, 1, 0x00, 0, 0, 0, 2, 0x00, /* voters [1, 2], each with its tags */
        0x02, 0, 0, 0, 2, 0x00,     /* granting_voters [2] */
        0x00,                       /* tags */
    };
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_leader_change_message_t m;
    kiq_rd_t r;
    kiq_rd_init(&r, v0, sizeof v0);
    assert_int_equal(kiq_leader_change_message_decode(&r, 0, &a, &m), 0);
    assert_int_equal(kiq_rd_left(&r), 0);
    assert_int_equal(m.leader_id, 2);
    assert_int_equal(m.voters_n, 2);
    assert_int_equal(m.voters[1].voter_id, 2);
    assert_int_equal(m.granting_voters_n, 1);
    assert_int_equal(m.granting_voters[0].voter_id, 2);
    check_reencodes(kiq_data_codec("LeaderChangeMessage"), 0, &m, v0, sizeof v0);
    check_truncations_fail(kiq_data_codec("LeaderChangeMessage"), 0, v0, sizeof v0);
    /* at v1, 16 more bytes per voter: the sample has two of each kind */
    assert_int_equal(encoded_len(kiq_data_codec("LeaderChangeMessage"), 1),
                     encoded_len(kiq_data_codec("LeaderChangeMessage"), 0) + 2 * 2 * 16);
    kiq_arena_reset(&a);
}

/* A member count that cannot fit in what is left fails before allocating. */
static void test_hostile_counts(void **state)
{
    (void)state;
    const uint8_t buf[] = {
        0, 0, 0, 0, 0, 0,             /* protocol_type "", generation 0 */
        0xff, 0xff, 0xff, 0xff,       /* protocol, leader: null */
        0x7f, 0xff, 0xff, 0xff,       /* members: 2^31-1 */
    };
    kiq_arena_t a;
    kiq_arena_init(&a);
    kiq_group_metadata_value_t m;
    kiq_rd_t r;
    kiq_rd_init(&r, buf, sizeof buf);
    assert_int_equal(kiq_group_metadata_value_decode(&r, 0, &a, &m), -1);
    assert_true(a.total < 4096);
    kiq_arena_reset(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_message_every_version),
        cmocka_unit_test(test_versions_change_layout),
        cmocka_unit_test(test_offset_commit_value_v3_by_hand),
        cmocka_unit_test(test_share_snapshot_by_hand),
        cmocka_unit_test(test_classic_member_metadata_by_hand),
        cmocka_unit_test(test_group_metadata_value_v3_by_hand),
        cmocka_unit_test(test_transaction_log_value_v1_by_hand),
        cmocka_unit_test(test_markers_and_txn_index_by_hand),
        cmocka_unit_test(test_consumer_protocol_assignment_v0_by_hand),
        cmocka_unit_test(test_voters_record_by_hand),
        cmocka_unit_test(test_leader_change_message_by_hand),
        cmocka_unit_test(test_hostile_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
