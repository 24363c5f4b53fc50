// kafkajs's part of the corpus workload (scripts/capture_corpus.sh): one
// small run of each kind of request it sends, against BOOTSTRAP. kafkajs
// comes from tests/interop/js/node_modules (NODE_PATH).
//
// usage: node scripts/corpus/kafkajs.js admin|produce|consume BOOTSTRAP
//   admin: create, describe, alter, grow and delete topics, list and
//          describe groups, offsets by time
//   produce: plain, gzip, idempotent, and a transaction committed with a
//            group's offsets and one aborted
//   consume: a group member that reads the records, commits and leaves

'use strict'

const { Kafka, logLevel, CompressionTypes, ConfigResourceTypes } = require('kafkajs')

const TOPIC = 'corpus-kafkajs'
const GROUP = 'corpus-kafkajs-group'
const RECORDS = 2

function kafka (bootstrap, clientId) {
  return new Kafka({ clientId, brokers: [bootstrap], logLevel: logLevel.ERROR })
}

const records = tag => Array.from({ length: RECORDS }, (_, i) =>
  ({ key: `k${i}`, value: `${tag}${i}`, headers: { h: `${i}` }, partition: 0 }))

async function admin (bootstrap) {
  const a = kafka(bootstrap, 'corpus-kafkajs-admin').admin()
  await a.connect()
  await a.createTopics({ topics: [{ topic: TOPIC, numPartitions: 2 }, { topic: `${TOPIC}-gone` }], waitForLeaders: true })
  await a.fetchTopicMetadata({ topics: [TOPIC] })
  const resource = { type: ConfigResourceTypes.TOPIC, name: TOPIC }
  await a.describeConfigs({ resources: [resource], includeSynonyms: false })
  await a.alterConfigs({ resources: [{ ...resource, configEntries: [{ name: 'retention.ms', value: '86400000' }] }] })
  await a.createPartitions({ topicPartitions: [{ topic: TOPIC, count: 3 }] })
  await a.deleteTopics({ topics: [`${TOPIC}-gone`] })
  await a.disconnect()
}

async function produce (bootstrap) {
  const k = kafka(bootstrap, 'corpus-kafkajs-producer')
  const plain = k.producer({ allowAutoTopicCreation: false })
  await plain.connect()
  await plain.send({ topic: TOPIC, messages: records('plain') })
  await plain.send({ topic: TOPIC, compression: CompressionTypes.GZIP, messages: records('gzip') })
  await plain.disconnect()
  const idempotent = k.producer({ idempotent: true, maxInFlightRequests: 1 })
  await idempotent.connect()
  await idempotent.send({ topic: TOPIC, messages: records('idem') })
  await idempotent.disconnect()
  const txp = k.producer({ transactionalId: 'corpus-kafkajs-txn', idempotent: true, maxInFlightRequests: 1 })
  await txp.connect()
  for (const commit of [true, false]) {
    const txn = await txp.transaction()
    await txn.send({ topic: TOPIC, messages: records(commit ? 'commit' : 'abort') })
    if (commit) {
      await txn.sendOffsets({ consumerGroupId: `${GROUP}-txn`, topics: [{ topic: TOPIC, partitions: [{ partition: 0, offset: '1' }] }] })
      await txn.commit()
    } else {
      await txn.abort()
    }
  }
  await txp.disconnect()
}

async function consume (bootstrap) {
  const k = kafka(bootstrap, 'corpus-kafkajs-consumer')
  const c = k.consumer({ groupId: GROUP, readUncommitted: false })
  await c.connect()
  await c.subscribe({ topic: TOPIC, fromBeginning: true })
  const want = 4 * RECORDS // the aborted transaction's records are not read
  await new Promise((resolve, reject) => {
    let got = 0
    c.run({
      autoCommit: false,
      eachMessage: async ({ topic, partition, message }) => {
        got++
        await c.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }])
        if (got === want) resolve()
      }
    }).catch(reject)
  })
  await c.disconnect()
  const a = k.admin()
  await a.connect()
  await a.listGroups()
  await a.describeGroups([GROUP])
  await a.fetchOffsets({ groupId: GROUP, topics: [TOPIC] })
  await a.fetchTopicOffsets(TOPIC)
  await a.fetchTopicOffsetsByTimestamp(TOPIC, 0)
  await a.disconnect()
}

const ops = { admin, produce, consume }
const [op, bootstrap] = process.argv.slice(2)
if (!ops[op] || !bootstrap) {
  process.stderr.write('usage: node kafkajs.js admin|produce|consume BOOTSTRAP\n')
  process.exit(2)
}
ops[op](bootstrap).then(() => process.exit(0), err => {
  process.stderr.write(`${err.stack || err}\n`)
  process.exit(1)
})
