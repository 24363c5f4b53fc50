'use strict';
// jest globalTeardown: stops what jest-global-setup started.
const { stopGlobal } = require('./global.cjs');

module.exports = async function kafkaiqGlobalTeardown() {
  const key = Symbol.for('@kafkaiq/launcher/jest');
  const kafkaiq = globalThis[key];
  delete globalThis[key];
  await stopGlobal(kafkaiq);
};
