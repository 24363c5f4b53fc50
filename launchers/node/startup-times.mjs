// Start-to-first-ack through this launcher: `kafkaiq serve` spawned, its
// ready file read, a new topic's first record acknowledged (acks=all,
// auto-created) by kafkajs; one broker and three, N runs each (default 5),
// medians printed. Needs the devDependencies (npm ci).
//
//   KAFKAIQ_BIN=build/kafkaiq node launchers/node/startup-times.mjs [N]
import kafkajs from 'kafkajs';
import { startKafkaIQ } from '@kafkaiq/launcher';

const { Kafka, logLevel } = kafkajs;

async function once(brokers) {
  const t0 = performance.now();
  const k = await startKafkaIQ({ brokers });
  try {
    const ready = performance.now() - t0;
    const kafka = new Kafka({ clientId: 'startup-times', brokers: k.bootstrapServers, logLevel: logLevel.NOTHING });
    const producer = kafka.producer({ allowAutoTopicCreation: true });
    await producer.connect();
    try {
      const [ack] = await producer.send({ topic: `first-${brokers}`, acks: -1, messages: [{ value: 'v' }] });
      if (ack.errorCode !== 0) throw new Error(`first produce refused: ${JSON.stringify(ack)}`);
    } finally {
      await producer.disconnect();
    }
    return { ready, acked: performance.now() - t0 };
  } finally {
    await k.stop();
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const n = Number(process.argv[2] || 5);
console.log('brokers  ready_ms(median)  first_ack_ms(median)  first_ack_ms(all)');
for (const brokers of [1, 3]) {
  const runs = [];
  for (let i = 0; i < n; i++) runs.push(await once(brokers));
  console.log(
    `${String(brokers).padStart(7)}  ${median(runs.map((r) => r.ready)).toFixed(1).padStart(16)}  ` +
      `${median(runs.map((r) => r.acked)).toFixed(1).padStart(20)}  ${runs.map((r) => r.acked.toFixed(0)).join(' ')}`,
  );
}
