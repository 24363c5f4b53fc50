-- kafkaiq.client: a Kafka client written in Lua over the engine's own codec
-- (kafkaiq.core), usable against any Kafka-protocol broker.
--
-- Conventions:
--   * Misuse (wrong argument types, unknown option names) raises error(msg, 2).
--   * Runtime failures (connection refused, broker errors) return nil, err;
--     err names the Kafka error, e.g. "... UNKNOWN_TOPIC_OR_PARTITION (3)".
--   * Calls about several items (create_topics, delete_topics,
--     describe_topics, describe_configs) return a list of per-item results
--     in request order, each with `error` = nil or the Kafka error name;
--     when any item failed: nil, a message naming each failure, and the
--     results as a third value.
--   * User hooks (partitioner aside) that raise are logged through the
--     `log` option (default: stderr) and ignored, as Kafka's clients do.

local M = {}

M.errors = require "kafkaiq.client.errors"

-- client.producer(opts) -> producer: send, poll, flush, buffered, close
-- (kafkaiq/client/producer.lua documents the options).
M.producer = require("kafkaiq.client.producer").new

-- client.consumer(opts) -> consumer: subscribe, unsubscribe, group_metadata
-- (consumer groups, kafkaiq/client/group.lua), assign, assignment, unassign,
-- seek, position, high_watermark, poll, commit, close
-- (kafkaiq/client/consumer.lua).
M.consumer = require("kafkaiq.client.consumer").new

-- client.admin(opts) -> admin: create_topics, delete_topics, describe_topics,
-- describe_configs, alter_client_quotas, describe_client_quotas, close
-- (kafkaiq/client/admin.lua; a.DEFAULT names an entity part's default).
M.admin = require("kafkaiq.client.admin").new

return M
