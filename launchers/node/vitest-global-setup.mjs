// vitest globalSetup: one KafkaIQ for the run. In vitest.config:
//   test: { globalSetup: ['@kafkaiq/launcher/vitest-global-setup'] }
// Tests read inject('kafkaiq') or $KAFKAIQ_BOOTSTRAP / $KAFKAIQ_HTTP, and
// attachKafkaIQ() gives the control API. Sized by $KAFKAIQ_BROKERS and
// $KAFKAIQ_OVERRIDES, or write your own setup file:
//   export default kafkaiqGlobalSetup({ brokers: 3 })
import shared from './global.cjs';

export function kafkaiqGlobalSetup(options) {
  return async function setup(project) {
    const kafkaiq = await shared.startGlobal(options);
    // vitest 2 passes a context, vitest 3 the project: both have provide()
    if (project && typeof project.provide === 'function') project.provide('kafkaiq', kafkaiq.info());
    return () => shared.stopGlobal(kafkaiq);
  };
}

export default kafkaiqGlobalSetup();
