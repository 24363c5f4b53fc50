/* The consumer group (KIP-848) records of __consumer_offsets, in Kafka's
 * formats (offsets_topic.h): the group epoch (key version 3), each
 * member's subscription (5), the target assignment's epoch (6) and each
 * member's target (7), and each member's current assignment (8). Keys
 * have no flexible versions; values are version 0, flexible. */
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/error.h"
#include "group/offsets_topic.h"

static kiq_str_t str_or_null(const char *s) { return s ? KIQ_STR(s) : KIQ_STR_NULL; }

/* Sets are sorted by topic, so each topic's partitions are consecutive:
 * the number of topics, then the arrays filled in arena. */
static int count_topics(const kiq_cg_set_t *s)
{
    int n = 0;
    for (int i = 0; i < s->n; i++)
        if (i == 0 || memcmp(s->v[i].topic.b, s->v[i - 1].topic.b, sizeof s->v[i].topic.b) != 0) n++;
    return n;
}

#define FILL_TOPIC_PARTITIONS(arena, set, out, out_n, init)                                           \
    do {                                                                                               \
        (out_n) = count_topics(set);                                                                   \
        (out) = kiq_arena_calloc((arena), (size_t)((out_n) ? (out_n) : 1), sizeof *(out));             \
        int t_ = -1;                                                                                   \
        for (int i_ = 0; i_ < (set)->n; i_++) {                                                        \
            if (t_ < 0 || memcmp((out)[t_].topic_id.b, (set)->v[i_].topic.b, 16) != 0) {               \
                init(&(out)[++t_]);                                                                    \
                (out)[t_].topic_id = (set)->v[i_].topic;                                               \
                (out)[t_].partitions = kiq_arena_calloc((arena), (size_t)(set)->n, sizeof(int32_t));   \
            }                                                                                          \
            (out)[t_].partitions[(out)[t_].partitions_n++] = (set)->v[i_].partition;                   \
        }                                                                                              \
    } while (0)

/* The key: its version (the record type), then the group, and the member
 * for the member records. */
static void key(kiq_wr_t *w, int16_t type, const char *group, const char *member)
{
    kiq_wr_init(w);
    kiq_wr_i16(w, type);
    kiq_str_t g = KIQ_STR(group), m = KIQ_STR(member ? member : "");
    switch (type) {
    case KIQ_OFFSETS_KEY_CGROUP: {
        kiq_consumer_group_metadata_key_t k;
        kiq_consumer_group_metadata_key_init(&k);
        k.group_id = g;
        kiq_consumer_group_metadata_key_encode(w, type, &k);
        break;
    }
    case KIQ_OFFSETS_KEY_CMEMBER: {
        kiq_consumer_group_member_metadata_key_t k;
        kiq_consumer_group_member_metadata_key_init(&k);
        k.group_id = g;
        k.member_id = m;
        kiq_consumer_group_member_metadata_key_encode(w, type, &k);
        break;
    }
    case KIQ_OFFSETS_KEY_CTARGET_EPOCH: {
        kiq_consumer_group_target_assignment_metadata_key_t k;
        kiq_consumer_group_target_assignment_metadata_key_init(&k);
        k.group_id = g;
        kiq_consumer_group_target_assignment_metadata_key_encode(w, type, &k);
        break;
    }
    case KIQ_OFFSETS_KEY_CTARGET: {
        kiq_consumer_group_target_assignment_member_key_t k;
        kiq_consumer_group_target_assignment_member_key_init(&k);
        k.group_id = g;
        k.member_id = m;
        kiq_consumer_group_target_assignment_member_key_encode(w, type, &k);
        break;
    }
    default: {
        kiq_consumer_group_current_member_assignment_key_t k;
        kiq_consumer_group_current_member_assignment_key_init(&k);
        k.group_id = g;
        k.member_id = m;
        kiq_consumer_group_current_member_assignment_key_encode(w, type, &k);
        break;
    }
    }
}

static void value_version(kiq_wr_t *w)
{
    kiq_wr_init(w);
    kiq_wr_i16(w, 0);
}

int kiq_offsets_records_add_cgroup(kiq_offsets_records_t *rs, const char *group, const kiq_cgroup_t *cg)
{
    kiq_wr_t k, v;
    key(&k, KIQ_OFFSETS_KEY_CGROUP, group, NULL);
    kiq_consumer_group_metadata_value_t m;
    kiq_consumer_group_metadata_value_init(&m);
    m.epoch = cg->epoch;
    m.metadata_hash = cg->metadata_hash;
    value_version(&v);
    kiq_consumer_group_metadata_value_encode(&v, 0, &m);
    return kiq_keyed_records_add(&rs->k, &k, &v);
}

int kiq_offsets_records_add_cmember(kiq_offsets_records_t *rs, const char *group, const kiq_cg_member_t *mb)
{
    kiq_wr_t k, v;
    key(&k, KIQ_OFFSETS_KEY_CMEMBER, group, mb->id);
    kiq_consumer_group_member_metadata_value_t m;
    kiq_consumer_group_member_metadata_value_init(&m);
    m.instance_id = str_or_null(mb->instance_id);
    m.rack_id = str_or_null(mb->rack_id);
    m.client_id = KIQ_STR(mb->client_id ? mb->client_id : "");
    m.client_host = KIQ_STR(mb->client_host ? mb->client_host : "");
    kiq_str_t *names = calloc((size_t)(mb->ntopics ? mb->ntopics : 1), sizeof *names);
    if (!names) {
        kiq_wr_free(&k);
        return kiq_error_set("out of memory");
    }
    for (int i = 0; i < mb->ntopics; i++) names[i] = KIQ_STR(mb->topics[i]);
    m.subscribed_topic_names_n = mb->ntopics;
    m.subscribed_topic_names = names;
    m.subscribed_topic_regex = str_or_null(mb->regex);
    m.rebalance_timeout_ms = mb->rebalance_timeout_ms;
    m.server_assignor = str_or_null(mb->server_assignor);
    kiq_consumer_group_member_metadata_value_classic_member_metadata_supported_protocols_t *ps = NULL;
    if (mb->classic) {
        const kiq_cg_classic_t *c = mb->classic;
        ps = calloc((size_t)(c->nprotocols ? c->nprotocols : 1), sizeof *ps);
        if (!ps) {
            free(names);
            kiq_wr_free(&k);
            return kiq_error_set("out of memory");
        }
        for (int i = 0; i < c->nprotocols; i++) {
            kiq_consumer_group_member_metadata_value_classic_member_metadata_supported_protocols_init(&ps[i]);
            ps[i].name = KIQ_STR(c->protocols[i].name);
            ps[i].metadata = (kiq_bytes_t){c->protocols[i].metadata, c->protocols[i].metadata_len};
        }
        m.classic_member_metadata_null = false;
        m.classic_member_metadata.session_timeout_ms = c->session_timeout_ms;
        m.classic_member_metadata.supported_protocols = ps;
        m.classic_member_metadata.supported_protocols_n = c->nprotocols;
    }
    value_version(&v);
    kiq_consumer_group_member_metadata_value_encode(&v, 0, &m);
    free(ps);
    free(names);
    return kiq_keyed_records_add(&rs->k, &k, &v);
}

int kiq_offsets_records_add_ctarget_epoch(kiq_offsets_records_t *rs, const char *group, const kiq_cgroup_t *cg)
{
    kiq_wr_t k, v;
    key(&k, KIQ_OFFSETS_KEY_CTARGET_EPOCH, group, NULL);
    kiq_consumer_group_target_assignment_metadata_value_t m;
    kiq_consumer_group_target_assignment_metadata_value_init(&m);
    m.assignment_epoch = cg->assignment_epoch;
    value_version(&v);
    kiq_consumer_group_target_assignment_metadata_value_encode(&v, 0, &m);
    return kiq_keyed_records_add(&rs->k, &k, &v);
}

int kiq_offsets_records_add_ctarget(kiq_offsets_records_t *rs, const char *group, const kiq_cg_member_t *mb)
{
    kiq_wr_t k, v;
    kiq_arena_t a;
    kiq_arena_init(&a);
    key(&k, KIQ_OFFSETS_KEY_CTARGET, group, mb->id);
    kiq_consumer_group_target_assignment_member_value_t m;
    kiq_consumer_group_target_assignment_member_value_init(&m);
    FILL_TOPIC_PARTITIONS(&a, &mb->target, m.topic_partitions, m.topic_partitions_n,
                          kiq_consumer_group_target_assignment_member_value_topic_partitions_init);
    value_version(&v);
    kiq_consumer_group_target_assignment_member_value_encode(&v, 0, &m);
    kiq_arena_reset(&a);
    return kiq_keyed_records_add(&rs->k, &k, &v);
}

int kiq_offsets_records_add_ccurrent(kiq_offsets_records_t *rs, const char *group, const kiq_cg_member_t *mb)
{
    kiq_wr_t k, v;
    kiq_arena_t a;
    kiq_arena_init(&a);
    key(&k, KIQ_OFFSETS_KEY_CCURRENT, group, mb->id);
    kiq_consumer_group_current_member_assignment_value_t m;
    kiq_consumer_group_current_member_assignment_value_init(&m);
    m.member_epoch = mb->epoch;
    m.previous_member_epoch = mb->previous_epoch;
    m.state = (int8_t)mb->state;
    FILL_TOPIC_PARTITIONS(&a, &mb->assigned, m.assigned_partitions, m.assigned_partitions_n,
                          kiq_consumer_group_current_member_assignment_value_assigned_partitions_init);
    FILL_TOPIC_PARTITIONS(&a, &mb->revoking, m.partitions_pending_revocation, m.partitions_pending_revocation_n,
                          kiq_consumer_group_current_member_assignment_value_partitions_pending_revocation_init);
    value_version(&v);
    kiq_consumer_group_current_member_assignment_value_encode(&v, 0, &m);
    kiq_arena_reset(&a);
    return kiq_keyed_records_add(&rs->k, &k, &v);
}

int kiq_offsets_records_add_ctombstone(kiq_offsets_records_t *rs, int16_t type, const char *group, const char *member)
{
    kiq_wr_t k;
    key(&k, type, group, member);
    return kiq_keyed_records_add(&rs->k, &k, NULL);
}
