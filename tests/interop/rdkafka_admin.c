/* librdkafka's admin API, from a current librdkafka (the 2.12 node-rdkafka
 * builds or the 2.15.1 @confluentinc/kafka-javascript does; their Node API
 * exposes little more than topic creation and deletion),
 * for the interop tests. One operation per run; its result is one JSON
 * object on stdout. A Kafka error is a result too ({"error": code,
 * "name": ..., "message": ...}, exit 0); a failure to run is exit 1.
 *
 * usage: rdkafka_admin BOOTSTRAP OP ARGS...
 *   describe-configs topic|broker|broker_logger NAME
 *   alter-configs topic|broker NAME set:KEY=VALUE|delete:KEY ...
 *   describe-cluster
 *   describe-topics TOPIC...
 *   list-groups
 *   describe-groups GROUP...
 *   group-offsets GROUP
 *   elect-leaders preferred|unclean [TOPIC:PARTITION ...]   (none: all)
 *   list-offsets earliest|latest|max-timestamp|TIMESTAMP TOPIC:PARTITION ...
 *
 * KIQ_RDKAFKA_DEBUG=contexts sets librdkafka's debug. Built by
 * tests/interop/test_rdkafka_current.py against that librdkafka. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#define TIMEOUT_MS 30000

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "rdkafka_admin: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(1);
}

/* A JSON string. */
static void js(const char *s)
{
    if (!s) {
        fputs("null", stdout);
        return;
    }
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

static void error_object(rd_kafka_resp_err_t code, const char *message)
{
    printf("{\"error\": %d, \"name\": ", (int)code);
    js(rd_kafka_err2name(code));
    fputs(", \"message\": ", stdout);
    js(message);
    putchar('}');
}

static void node(const rd_kafka_Node_t *n)
{
    if (!n) {
        fputs("null", stdout);
        return;
    }
    printf("{\"id\": %d, \"host\": ", rd_kafka_Node_id(n));
    js(rd_kafka_Node_host(n));
    printf(", \"port\": %u}", (unsigned)rd_kafka_Node_port(n));
}

static void node_ids(const rd_kafka_Node_t **ns, size_t n)
{
    putchar('[');
    for (size_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", rd_kafka_Node_id(ns[i]));
    putchar(']');
}

static void operations(const rd_kafka_AclOperation_t *ops, size_t n)
{
    if (!ops) {
        fputs("null", stdout);
        return;
    }
    putchar('[');
    for (size_t i = 0; i < n; i++) {
        if (i) fputs(", ", stdout);
        js(rd_kafka_AclOperation_name(ops[i]));
    }
    putchar(']');
}

static void partitions(const rd_kafka_topic_partition_list_t *l, bool with_offsets)
{
    putchar('[');
    for (int i = 0; l && i < l->cnt; i++) {
        const rd_kafka_topic_partition_t *p = &l->elems[i];
        fputs(i ? ", {\"topic\": " : "{\"topic\": ", stdout);
        js(p->topic);
        printf(", \"partition\": %" PRId32, p->partition);
        if (with_offsets) {
            printf(", \"offset\": %" PRId64 ", \"error\": %d, \"metadata\": ", p->offset, (int)p->err);
            if (p->metadata) {
                char *m = strndup(p->metadata, p->metadata_size);
                js(m);
                free(m);
            } else {
                fputs("null", stdout);
            }
        }
        putchar('}');
    }
    putchar(']');
}

/* TOPIC:PARTITION arguments. */
static rd_kafka_topic_partition_list_t *parse_partitions(int argc, char **argv)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(argc > 0 ? argc : 1);
    for (int i = 0; i < argc; i++) {
        char *colon = strrchr(argv[i], ':');
        if (!colon) die("TOPIC:PARTITION expected, not %s", argv[i]);
        *colon = '\0';
        rd_kafka_topic_partition_list_add(l, argv[i], atoi(colon + 1));
    }
    return l;
}

static rd_kafka_ResourceType_t resource_type(const char *s)
{
    if (!strcmp(s, "topic")) return RD_KAFKA_RESOURCE_TOPIC;
    if (!strcmp(s, "broker")) return RD_KAFKA_RESOURCE_BROKER;
    if (!strcmp(s, "broker_logger")) return (rd_kafka_ResourceType_t)8; /* Kafka's BROKER_LOGGER */
    die("unknown resource type %s", s);
    return RD_KAFKA_RESOURCE_UNKNOWN;
}

/* librdkafka returns NULL for an empty name, so the cluster-wide broker
 * default ("") cannot be named through it. */
static rd_kafka_ConfigResource_t *config_resource(const char *type, const char *name)
{
    rd_kafka_ConfigResource_t *r = rd_kafka_ConfigResource_new(resource_type(type), name);
    if (!r) die("librdkafka refuses the resource name \"%s\"", name);
    return r;
}

static void print_configs(const rd_kafka_ConfigResource_t **rs, size_t n)
{
    if (n != 1) die("%s", "expected one resource in the result");
    rd_kafka_resp_err_t err = rd_kafka_ConfigResource_error(rs[0]);
    if (err) {
        error_object(err, rd_kafka_ConfigResource_error_string(rs[0]));
        return;
    }
    size_t nc;
    const rd_kafka_ConfigEntry_t **cs = rd_kafka_ConfigResource_configs(rs[0], &nc);
    fputs("{\"configs\": {", stdout);
    for (size_t i = 0; i < nc; i++) {
        if (i) fputs(", ", stdout);
        js(rd_kafka_ConfigEntry_name(cs[i]));
        fputs(": {\"value\": ", stdout);
        js(rd_kafka_ConfigEntry_value(cs[i]));
        fputs(", \"source\": ", stdout);
        js(rd_kafka_ConfigSource_name(rd_kafka_ConfigEntry_source(cs[i])));
        printf(", \"read_only\": %s, \"default\": %s, \"sensitive\": %s, \"synonyms\": [",
               rd_kafka_ConfigEntry_is_read_only(cs[i]) ? "true" : "false",
               rd_kafka_ConfigEntry_is_default(cs[i]) ? "true" : "false",
               rd_kafka_ConfigEntry_is_sensitive(cs[i]) ? "true" : "false");
        size_t ns;
        const rd_kafka_ConfigEntry_t **syn = rd_kafka_ConfigEntry_synonyms(cs[i], &ns);
        for (size_t j = 0; j < ns; j++) {
            fputs(j ? ", {\"name\": " : "{\"name\": ", stdout);
            js(rd_kafka_ConfigEntry_name(syn[j]));
            fputs(", \"value\": ", stdout);
            js(rd_kafka_ConfigEntry_value(syn[j]));
            fputs(", \"source\": ", stdout);
            js(rd_kafka_ConfigSource_name(rd_kafka_ConfigEntry_source(syn[j])));
            putchar('}');
        }
        fputs("]}", stdout);
    }
    fputs("}}", stdout);
}

static void print_topic_partition_results(const rd_kafka_topic_partition_result_t **rs, size_t n)
{
    fputs("{\"partitions\": [", stdout);
    for (size_t i = 0; i < n; i++) {
        const rd_kafka_topic_partition_t *p = rd_kafka_topic_partition_result_partition(rs[i]);
        const rd_kafka_error_t *e = rd_kafka_topic_partition_result_error(rs[i]);
        fputs(i ? ", {\"topic\": " : "{\"topic\": ", stdout);
        js(p->topic);
        printf(", \"partition\": %" PRId32 ", \"error\": %d, \"name\": ", p->partition, e ? (int)rd_kafka_error_code(e) : 0);
        js(e ? rd_kafka_error_name(e) : NULL);
        putchar('}');
    }
    fputs("]}", stdout);
}

static void print_groups(const rd_kafka_ConsumerGroupDescription_t **gs, size_t n)
{
    fputs("{\"groups\": [", stdout);
    for (size_t i = 0; i < n; i++) {
        const rd_kafka_ConsumerGroupDescription_t *g = gs[i];
        const rd_kafka_error_t *e = rd_kafka_ConsumerGroupDescription_error(g);
        fputs(i ? ", {\"id\": " : "{\"id\": ", stdout);
        js(rd_kafka_ConsumerGroupDescription_group_id(g));
        printf(", \"error\": %d, \"state\": ", e ? (int)rd_kafka_error_code(e) : 0);
        js(rd_kafka_consumer_group_state_name(rd_kafka_ConsumerGroupDescription_state(g)));
        fputs(", \"assignor\": ", stdout);
        js(rd_kafka_ConsumerGroupDescription_partition_assignor(g));
        printf(", \"simple\": %s, \"coordinator\": ",
               rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(g) ? "true" : "false");
        node(rd_kafka_ConsumerGroupDescription_coordinator(g));
        fputs(", \"members\": [", stdout);
        size_t nm = rd_kafka_ConsumerGroupDescription_member_count(g);
        for (size_t j = 0; j < nm; j++) {
            const rd_kafka_MemberDescription_t *m = rd_kafka_ConsumerGroupDescription_member(g, j);
            fputs(j ? ", {\"member_id\": " : "{\"member_id\": ", stdout);
            js(rd_kafka_MemberDescription_consumer_id(m));
            fputs(", \"client_id\": ", stdout);
            js(rd_kafka_MemberDescription_client_id(m));
            fputs(", \"host\": ", stdout);
            js(rd_kafka_MemberDescription_host(m));
            fputs(", \"assignment\": ", stdout);
            partitions(rd_kafka_MemberAssignment_partitions(rd_kafka_MemberDescription_assignment(m)), false);
            putchar('}');
        }
        fputs("]}", stdout);
    }
    fputs("]}", stdout);
}

/* Prints what the result event says. */
static void print_result(rd_kafka_event_t *ev)
{
    rd_kafka_resp_err_t err = rd_kafka_event_error(ev);
    if (err) {
        error_object(err, rd_kafka_event_error_string(ev));
        return;
    }
    size_t n;
    switch (rd_kafka_event_type(ev)) {
    case RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT: {
        const rd_kafka_ConfigResource_t **rs =
            rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
        print_configs(rs, n);
        return;
    }
    case RD_KAFKA_EVENT_INCREMENTALALTERCONFIGS_RESULT: {
        const rd_kafka_ConfigResource_t **rs =
            rd_kafka_IncrementalAlterConfigs_result_resources(rd_kafka_event_IncrementalAlterConfigs_result(ev), &n);
        if (n == 1 && rd_kafka_ConfigResource_error(rs[0]))
            error_object(rd_kafka_ConfigResource_error(rs[0]), rd_kafka_ConfigResource_error_string(rs[0]));
        else
            fputs("{\"ok\": true}", stdout);
        return;
    }
    case RD_KAFKA_EVENT_DESCRIBECLUSTER_RESULT: {
        const rd_kafka_DescribeCluster_result_t *r = rd_kafka_event_DescribeCluster_result(ev);
        fputs("{\"cluster_id\": ", stdout);
        js(rd_kafka_DescribeCluster_result_cluster_id(r));
        fputs(", \"controller\": ", stdout);
        node(rd_kafka_DescribeCluster_result_controller(r));
        fputs(", \"nodes\": [", stdout);
        const rd_kafka_Node_t **ns = rd_kafka_DescribeCluster_result_nodes(r, &n);
        for (size_t i = 0; i < n; i++) {
            if (i) fputs(", ", stdout);
            node(ns[i]);
        }
        fputs("], \"authorized_operations\": ", stdout);
        const rd_kafka_AclOperation_t *ops = rd_kafka_DescribeCluster_result_authorized_operations(r, &n);
        operations(ops, n);
        putchar('}');
        return;
    }
    case RD_KAFKA_EVENT_DESCRIBETOPICS_RESULT: {
        const rd_kafka_TopicDescription_t **ts =
            rd_kafka_DescribeTopics_result_topics(rd_kafka_event_DescribeTopics_result(ev), &n);
        fputs("{\"topics\": [", stdout);
        for (size_t i = 0; i < n; i++) {
            const rd_kafka_error_t *e = rd_kafka_TopicDescription_error(ts[i]);
            fputs(i ? ", {\"name\": " : "{\"name\": ", stdout);
            js(rd_kafka_TopicDescription_name(ts[i]));
            const rd_kafka_Uuid_t *id = rd_kafka_TopicDescription_topic_id(ts[i]);
            fputs(", \"id\": ", stdout);
            js(id ? rd_kafka_Uuid_base64str(id) : NULL);
            printf(", \"error\": %d, \"internal\": %s, \"partitions\": [", e ? (int)rd_kafka_error_code(e) : 0,
                   rd_kafka_TopicDescription_is_internal(ts[i]) ? "true" : "false");
            size_t np;
            const rd_kafka_TopicPartitionInfo_t **ps = rd_kafka_TopicDescription_partitions(ts[i], &np);
            for (size_t j = 0; j < np; j++) {
                const rd_kafka_Node_t *leader = rd_kafka_TopicPartitionInfo_leader(ps[j]);
                printf("%s{\"partition\": %d, \"leader\": %d, \"replicas\": ", j ? ", " : "",
                       rd_kafka_TopicPartitionInfo_partition(ps[j]), leader ? rd_kafka_Node_id(leader) : -1);
                size_t nr;
                const rd_kafka_Node_t **rs = rd_kafka_TopicPartitionInfo_replicas(ps[j], &nr);
                node_ids(rs, nr);
                fputs(", \"isr\": ", stdout);
                rs = rd_kafka_TopicPartitionInfo_isr(ps[j], &nr);
                node_ids(rs, nr);
                putchar('}');
            }
            fputs("], \"authorized_operations\": ", stdout);
            size_t no;
            const rd_kafka_AclOperation_t *ops = rd_kafka_TopicDescription_authorized_operations(ts[i], &no);
            operations(ops, no);
            putchar('}');
        }
        fputs("]}", stdout);
        return;
    }
    case RD_KAFKA_EVENT_LISTCONSUMERGROUPS_RESULT: {
        const rd_kafka_ListConsumerGroups_result_t *r = rd_kafka_event_ListConsumerGroups_result(ev);
        const rd_kafka_ConsumerGroupListing_t **gs = rd_kafka_ListConsumerGroups_result_valid(r, &n);
        fputs("{\"groups\": [", stdout);
        for (size_t i = 0; i < n; i++) {
            fputs(i ? ", {\"id\": " : "{\"id\": ", stdout);
            js(rd_kafka_ConsumerGroupListing_group_id(gs[i]));
            fputs(", \"state\": ", stdout);
            js(rd_kafka_consumer_group_state_name(rd_kafka_ConsumerGroupListing_state(gs[i])));
            printf(", \"simple\": %s}", rd_kafka_ConsumerGroupListing_is_simple_consumer_group(gs[i]) ? "true" : "false");
        }
        size_t ne;
        rd_kafka_ListConsumerGroups_result_errors(r, &ne);
        printf("], \"errors\": %zu}", ne);
        return;
    }
    case RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT: {
        const rd_kafka_ConsumerGroupDescription_t **gs =
            rd_kafka_DescribeConsumerGroups_result_groups(rd_kafka_event_DescribeConsumerGroups_result(ev), &n);
        print_groups(gs, n);
        return;
    }
    case RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT: {
        const rd_kafka_group_result_t **gs =
            rd_kafka_ListConsumerGroupOffsets_result_groups(rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
        if (n != 1) die("%s", "expected one group in the result");
        const rd_kafka_error_t *e = rd_kafka_group_result_error(gs[0]);
        if (e) {
            error_object(rd_kafka_error_code(e), rd_kafka_error_string(e));
            return;
        }
        fputs("{\"offsets\": ", stdout);
        partitions(rd_kafka_group_result_partitions(gs[0]), true);
        putchar('}');
        return;
    }
    case RD_KAFKA_EVENT_ELECTLEADERS_RESULT: {
        const rd_kafka_topic_partition_result_t **rs =
            rd_kafka_ElectLeaders_result_partitions(rd_kafka_event_ElectLeaders_result(ev), &n);
        print_topic_partition_results(rs, n);
        return;
    }
    case RD_KAFKA_EVENT_LISTOFFSETS_RESULT: {
        const rd_kafka_ListOffsetsResultInfo_t **rs =
            rd_kafka_ListOffsets_result_infos(rd_kafka_event_ListOffsets_result(ev), &n);
        fputs("{\"partitions\": [", stdout);
        for (size_t i = 0; i < n; i++) {
            const rd_kafka_topic_partition_t *p = rd_kafka_ListOffsetsResultInfo_topic_partition(rs[i]);
            fputs(i ? ", {\"topic\": " : "{\"topic\": ", stdout);
            js(p->topic);
            printf(", \"partition\": %" PRId32 ", \"offset\": %" PRId64 ", \"timestamp\": %" PRId64 ", \"error\": %d}",
                   p->partition, p->offset, rd_kafka_ListOffsetsResultInfo_timestamp(rs[i]), (int)p->err);
        }
        fputs("]}", stdout);
        return;
    }
    default: die("unexpected event %s", rd_kafka_event_name(ev));
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) die("%s", "usage: rdkafka_admin BOOTSTRAP OP ARGS...");
    const char *op = argv[2];
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK ||
        rd_kafka_conf_set(conf, "client.id", "kiq-rdkafka-admin", errstr, sizeof errstr) != RD_KAFKA_CONF_OK ||
        (getenv("KIQ_RDKAFKA_DEBUG") &&
         rd_kafka_conf_set(conf, "debug", getenv("KIQ_RDKAFKA_DEBUG"), errstr, sizeof errstr) != RD_KAFKA_CONF_OK))
        die("%s", errstr);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) die("%s", errstr);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_ANY);
    rd_kafka_AdminOptions_set_request_timeout(opt, TIMEOUT_MS, errstr, sizeof errstr);
    int nargs = argc - 3;
    char **args = argv + 3;

    if (!strcmp(op, "describe-configs") && nargs == 2) {
        rd_kafka_ConfigResource_t *r = config_resource(args[0], args[1]);
        rd_kafka_DescribeConfigs(rk, &r, 1, opt, q);
        rd_kafka_ConfigResource_destroy(r);
    } else if (!strcmp(op, "alter-configs") && nargs >= 2) {
        rd_kafka_ConfigResource_t *r = config_resource(args[0], args[1]);
        for (int i = 2; i < nargs; i++) {
            char *kv = args[i], *eq = strchr(kv, '=');
            rd_kafka_AlterConfigOpType_t t;
            if (!strncmp(kv, "set:", 4)) t = RD_KAFKA_ALTER_CONFIG_OP_TYPE_SET;
            else if (!strncmp(kv, "delete:", 7)) t = RD_KAFKA_ALTER_CONFIG_OP_TYPE_DELETE;
            else die("set:KEY=VALUE or delete:KEY expected, not %s", kv);
            if (eq) *eq = '\0';
            rd_kafka_error_t *e = rd_kafka_ConfigResource_add_incremental_config(r, strchr(kv, ':') + 1, t,
                                                                                 eq ? eq + 1 : NULL);
            if (e) die("%s", rd_kafka_error_string(e));
        }
        rd_kafka_IncrementalAlterConfigs(rk, &r, 1, opt, q);
        rd_kafka_ConfigResource_destroy(r);
    } else if (!strcmp(op, "describe-cluster") && nargs == 0) {
        rd_kafka_AdminOptions_set_include_authorized_operations(opt, 1);
        rd_kafka_DescribeCluster(rk, opt, q);
    } else if (!strcmp(op, "describe-topics") && nargs >= 1) {
        rd_kafka_AdminOptions_set_include_authorized_operations(opt, 1);
        rd_kafka_TopicCollection_t *tc = rd_kafka_TopicCollection_of_topic_names((const char **)args, (size_t)nargs);
        rd_kafka_DescribeTopics(rk, tc, opt, q);
        rd_kafka_TopicCollection_destroy(tc);
    } else if (!strcmp(op, "list-groups") && nargs == 0) {
        rd_kafka_ListConsumerGroups(rk, opt, q);
    } else if (!strcmp(op, "describe-groups") && nargs >= 1) {
        rd_kafka_DescribeConsumerGroups(rk, (const char **)args, (size_t)nargs, opt, q);
    } else if (!strcmp(op, "group-offsets") && nargs == 1) {
        rd_kafka_ListConsumerGroupOffsets_t *g = rd_kafka_ListConsumerGroupOffsets_new(args[0], NULL);
        rd_kafka_ListConsumerGroupOffsets(rk, &g, 1, opt, q);
        rd_kafka_ListConsumerGroupOffsets_destroy(g);
    } else if (!strcmp(op, "elect-leaders") && nargs >= 1) {
        rd_kafka_ElectionType_t t = !strcmp(args[0], "unclean") ? RD_KAFKA_ELECTION_TYPE_UNCLEAN
                                                                : RD_KAFKA_ELECTION_TYPE_PREFERRED;
        rd_kafka_topic_partition_list_t *l = nargs > 1 ? parse_partitions(nargs - 1, args + 1) : NULL;
        rd_kafka_ElectLeaders_t *el = rd_kafka_ElectLeaders_new(t, l);
        rd_kafka_ElectLeaders(rk, el, opt, q);
        rd_kafka_ElectLeaders_destroy(el);
        if (l) rd_kafka_topic_partition_list_destroy(l);
    } else if (!strcmp(op, "list-offsets") && nargs >= 2) {
        int64_t spec = !strcmp(args[0], "earliest")        ? RD_KAFKA_OFFSET_SPEC_EARLIEST
                       : !strcmp(args[0], "latest")        ? RD_KAFKA_OFFSET_SPEC_LATEST
                       : !strcmp(args[0], "max-timestamp") ? RD_KAFKA_OFFSET_SPEC_MAX_TIMESTAMP
                                                           : strtoll(args[0], NULL, 10);
        rd_kafka_topic_partition_list_t *l = parse_partitions(nargs - 1, args + 1);
        for (int i = 0; i < l->cnt; i++) l->elems[i].offset = spec;
        rd_kafka_ListOffsets(rk, l, opt, q);
        rd_kafka_topic_partition_list_destroy(l);
    } else {
        die("unknown operation or wrong arguments: %s", op);
    }
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, TIMEOUT_MS + 5000);
    if (!ev) die("%s", "no result before the timeout");
    print_result(ev);
    putchar('\n');
    rd_kafka_event_destroy(ev);
    rd_kafka_AdminOptions_destroy(opt);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
    return 0;
}
