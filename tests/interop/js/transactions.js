// kafkajs transactions with its own API: a transactional producer commits
// and aborts in turn, and a consume-transform-produce step commits the
// consumed offsets of a group inside a transaction (sendOffsets).
//
// usage: node transactions.js --bootstrap HOST:PORT --topic T --group G
// prints one JSON line: {"committed": [...], "aborted": [...]}
'use strict';
const { Kafka, logLevel } = require('kafkajs');

function arg(name) {
  const i = process.argv.indexOf('--' + name);
  if (i < 0 || i + 1 >= process.argv.length) throw new Error('missing --' + name);
  return process.argv[i + 1];
}

async function main() {
  const topic = arg('topic');
  const kafka = new Kafka({ clientId: 'kiq-js-txn', brokers: [arg('bootstrap')], logLevel: logLevel.ERROR });
  const producer = kafka.producer({ transactionalId: 'kiq-js-txn', maxInFlightRequests: 1, idempotent: true });
  await producer.connect();
  const committed = [], aborted = [];
  for (let round = 0; round < 4; round++) {
    const values = [0, 1, 2].map((i) => `js-${round}-${i}`);
    const txn = await producer.transaction();
    await txn.send({ topic, messages: values.map((value) => ({ value, partition: 0 })) });
    if (round % 2 === 0) {
      // the offsets of a consumer group go with the records
      await txn.sendOffsets({ consumerGroupId: arg('group'), topics: [{ topic, partitions: [{ partition: 0, offset: String(round + 1) }] }] });
      await txn.commit();
      committed.push(...values);
    } else {
      await txn.abort();
      aborted.push(...values);
    }
  }
  await producer.disconnect();
  process.stdout.write(JSON.stringify({ committed, aborted }) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
