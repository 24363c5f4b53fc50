/** jest globalSetup / globalTeardown (configured through $KAFKAIQ_BROKERS and $KAFKAIQ_OVERRIDES). */
declare function kafkaiqGlobal(): Promise<void>;
export = kafkaiqGlobal;
