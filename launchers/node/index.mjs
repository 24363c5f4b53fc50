// The ESM face of index.cjs: the same objects, so a process started through
// either is one registry and one exit handler.
import launcher from './index.cjs';

export const {
  KafkaIQ,
  KafkaIQError,
  attachKafkaIQ,
  findBinary,
  startKafkaIQ,
  useKafkaIQ,
  useKafkaIQFactory,
} = launcher;
