/* Authorized operations with no authorizer (every operation allowed), as
 * Kafka's bitfields count them (a bit per AclOperation code): for topics,
 * the cluster and groups. Metadata, DescribeCluster, DescribeGroups,
 * ConsumerGroupDescribe and DescribeTopicPartitions answer them when asked. */
#ifndef KIQ_PROTO_ACL_OPERATIONS_H
#define KIQ_PROTO_ACL_OPERATIONS_H

#define KIQ_ACL_TOPIC_OPERATIONS 3576
#define KIQ_ACL_CLUSTER_OPERATIONS 8096
/* groups: READ, DELETE, DESCRIBE, and Kafka 4's group configs' DESCRIBE_CONFIGS, ALTER_CONFIGS */
#define KIQ_ACL_GROUP_OPERATIONS 3400

#endif
