/* Metadata records and their framing; see metadata_record.h. */
#include "controller/metadata_record.h"

#include "core/error.h"

/* Per type: Kafka's schema name (the codec's name) and the version written.
 * PartitionRecord and PartitionChangeRecord stay at version 0: versions 1
 * and 2 carry log directories and eligible leader replicas, which this
 * controller does not track. */
static const struct record_kind {
    int16_t type;
    const char *name;
    int16_t write_version;
} kinds[] = {
    {KIQ_MR_REGISTER_BROKER, "RegisterBrokerRecord", 3},
    {KIQ_MR_UNREGISTER_BROKER, "UnregisterBrokerRecord", 0},
    {KIQ_MR_TOPIC, "TopicRecord", 0},
    {KIQ_MR_PARTITION, "PartitionRecord", 0},
    {KIQ_MR_CONFIG, "ConfigRecord", 0},
    {KIQ_MR_PARTITION_CHANGE, "PartitionChangeRecord", 0},
    {KIQ_MR_ACCESS_CONTROL_ENTRY, "AccessControlEntryRecord", 0},
    {KIQ_MR_REMOVE_ACCESS_CONTROL_ENTRY, "RemoveAccessControlEntryRecord", 0},
    {KIQ_MR_FENCE_BROKER, "FenceBrokerRecord", 0},
    {KIQ_MR_UNFENCE_BROKER, "UnfenceBrokerRecord", 0},
    {KIQ_MR_REMOVE_TOPIC, "RemoveTopicRecord", 0},
    {KIQ_MR_FEATURE_LEVEL, "FeatureLevelRecord", 0},
    {KIQ_MR_PRODUCER_IDS, "ProducerIdsRecord", 0},
    {KIQ_MR_USER_SCRAM_CREDENTIAL, "UserScramCredentialRecord", 0},
    {KIQ_MR_REMOVE_USER_SCRAM_CREDENTIAL, "RemoveUserScramCredentialRecord", 0},
    {KIQ_MR_CLIENT_QUOTA, "ClientQuotaRecord", 0},
    {KIQ_MR_DELEGATION_TOKEN, "DelegationTokenRecord", 0},
    {KIQ_MR_REMOVE_DELEGATION_TOKEN, "RemoveDelegationTokenRecord", 0},
};

static const struct record_kind *kind_of(int16_t type)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].type == type) return &kinds[i];
    return NULL;
}

const char *kiq_metadata_record_name(int16_t type)
{
    const struct record_kind *k = kind_of(type);
    return k ? k->name : NULL;
}

/* The generated codec of a type; every name in kinds[] is a data message. */
static const kiq_data_codec_t *codec_of(int16_t type)
{
    const struct record_kind *k = kind_of(type);
    return k ? kiq_data_codec(k->name) : NULL;
}

int kiq_metadata_record_init(kiq_metadata_record_t *r, int16_t type)
{
    const struct record_kind *k = kind_of(type);
    const kiq_data_codec_t *c = codec_of(type);
    if (!k || !c) return kiq_error_set("unknown metadata record type %d", type);
    r->type = type;
    r->version = k->write_version;
    c->init(&r->m);
    return 0;
}

int kiq_metadata_record_encode(kiq_wr_t *w, const kiq_metadata_record_t *r)
{
    const kiq_data_codec_t *c = codec_of(r->type);
    if (!c) return kiq_error_set("unknown metadata record type %d", r->type);
    if (r->version < c->min_version || r->version > c->max_version)
        return kiq_error_set("%s has no version %d", c->name, r->version);
    kiq_wr_uvarint(w, KIQ_METADATA_FRAME_VERSION);
    kiq_wr_uvarint(w, (uint32_t)r->type);
    kiq_wr_uvarint(w, (uint32_t)r->version);
    if (c->encode(w, r->version, &r->m) != 0 || w->err) return kiq_error_set("out of memory");
    return 0;
}

int kiq_metadata_record_decode(const uint8_t *p, size_t len, kiq_arena_t *a, kiq_metadata_record_t *r)
{
    kiq_rd_t rd;
    kiq_rd_init(&rd, p, len);
    uint32_t frame = kiq_rd_uvarint(&rd);
    uint32_t type = kiq_rd_uvarint(&rd);
    uint32_t version = kiq_rd_uvarint(&rd);
    if (rd.err) return kiq_error_set("metadata record header: %s", rd.err);
    if (frame != KIQ_METADATA_FRAME_VERSION)
        return kiq_error_set("metadata record frame version %u, expected %d", frame, KIQ_METADATA_FRAME_VERSION);
    const kiq_data_codec_t *c = type <= INT16_MAX ? codec_of((int16_t)type) : NULL;
    if (!c || version < (uint32_t)c->min_version || version > (uint32_t)c->max_version) {
        kiq_error_set("metadata record type %u version %u unknown", type, version);
        return KIQ_METADATA_RECORD_UNKNOWN;
    }
    r->type = (int16_t)type;
    r->version = (int16_t)version;
    if (c->decode(&rd, r->version, a, &r->m) != 0)
        return kiq_error_set("%s v%u malformed at byte %zu: %s", c->name, version, kiq_rd_offset(&rd), rd.err);
    if (kiq_rd_left(&rd) != 0)
        return kiq_error_set("%s v%u: %zu bytes left over", c->name, version, kiq_rd_left(&rd));
    return 0;
}
