/* Authorized operations with no authorizer (every operation allowed), as
 * Kafka's bitfields count them (a bit per AclOperation code): for topics,
 * the cluster and groups. Metadata, DescribeCluster, DescribeGroups and
 * DescribeTopicPartitions answer them when asked. */
#ifndef KIQ_PROTO_ACL_OPERATIONS_H
#define KIQ_PROTO_ACL_OPERATIONS_H

#define KIQ_ACL_TOPIC_OPERATIONS 3576
#define KIQ_ACL_CLUSTER_OPERATIONS 8096
#define KIQ_ACL_GROUP_OPERATIONS 328

#endif
