'use strict';
// jest globalSetup: one KafkaIQ for the run ($KAFKAIQ_BROKERS,
// $KAFKAIQ_OVERRIDES); tests read $KAFKAIQ_BOOTSTRAP / $KAFKAIQ_HTTP, and
// attachKafkaIQ() gives the control API. Pair it with jest-global-teardown.
const { startGlobal } = require('./global.cjs');

module.exports = async function kafkaiqGlobalSetup() {
  // jest runs setup and teardown in one context: the teardown finds it here
  globalThis[Symbol.for('@kafkaiq/launcher/jest')] = await startGlobal();
};
