'use strict';
// What the vitest and jest global setups share: one KafkaIQ for the whole
// run, configured through the environment, announced through it.
const { KafkaIQError, startKafkaIQ } = require('./index.cjs');

const ANNOUNCED = ['KAFKAIQ_BOOTSTRAP', 'KAFKAIQ_HTTP', 'KAFKAIQ_READY'];

/** $KAFKAIQ_BROKERS (how many, default 1) and $KAFKAIQ_OVERRIDES (a JSON object). */
function optionsFromEnv(env = process.env) {
  const options = {};
  if (env.KAFKAIQ_BROKERS) {
    options.brokers = Number(env.KAFKAIQ_BROKERS);
    if (!Number.isInteger(options.brokers) || options.brokers < 1) {
      throw new KafkaIQError(`KAFKAIQ_BROKERS must be a count of brokers, not ${JSON.stringify(env.KAFKAIQ_BROKERS)}`);
    }
  }
  if (env.KAFKAIQ_OVERRIDES) {
    try {
      options.overrides = JSON.parse(env.KAFKAIQ_OVERRIDES);
    } catch (e) {
      throw new KafkaIQError(`KAFKAIQ_OVERRIDES must be a JSON object: ${e.message}`);
    }
  }
  return options;
}

/** Starts it and sets KAFKAIQ_BOOTSTRAP, KAFKAIQ_HTTP and KAFKAIQ_READY, which the test workers inherit. */
async function startGlobal(options) {
  const kafkaiq = await startKafkaIQ(options || optionsFromEnv());
  process.env.KAFKAIQ_BOOTSTRAP = kafkaiq.bootstrap;
  process.env.KAFKAIQ_HTTP = kafkaiq.http;
  process.env.KAFKAIQ_READY = JSON.stringify(kafkaiq.info());
  return kafkaiq;
}

async function stopGlobal(kafkaiq) {
  for (const name of ANNOUNCED) delete process.env[name];
  if (kafkaiq) await kafkaiq.stop();
}

module.exports = { optionsFromEnv, startGlobal, stopGlobal };
