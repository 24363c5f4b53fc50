import type { KafkaIQInfo, StartOptions } from './index.js';

/** A vitest globalSetup function; it provides 'kafkaiq' (KafkaIQInfo) and returns the teardown. */
export type KafkaIQGlobalSetup = (project?: {
  provide?: (key: 'kafkaiq', value: KafkaIQInfo) => void;
}) => Promise<() => Promise<void>>;

/** A setup with fixed options instead of $KAFKAIQ_BROKERS / $KAFKAIQ_OVERRIDES. */
export function kafkaiqGlobalSetup(options?: StartOptions): KafkaIQGlobalSetup;

declare const setup: KafkaIQGlobalSetup;
export default setup;
