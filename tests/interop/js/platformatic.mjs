// @platformatic/kafka 1.35 (a pure-JavaScript client that asks for the
// newest versions it implements: Metadata 12, Produce 11, Fetch 17, ...)
// driven by the interop tests. One operation per run, results as JSON lines
// on stdout; exits non-zero on any failure.
//
// usage: node platformatic.mjs OP --bootstrap H:P[,H:P] [options]
//   create-topic --topic T --partitions N [--replication R]
//   produce --topic T --count N [--compression none|gzip|snappy|lz4|zstd]
//        keyed records k<i> -> v<i>; prints {"k", "p", "o"} per record
//   consume --topic T --group G --count N
//        a group member from the earliest offsets: prints {"k", "v", "p", "o"}
//        per record until N came, commits them, then {"committed": {p: offset}}

import { Admin, Consumer, MessagesStreamModes, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka'

const TIMEOUT_MS = 60000

function parseArgs (argv) {
  const args = { op: argv[2], compression: 'none', replication: 1 }
  const keys = {
    '--bootstrap': 'bootstrap', '--topic': 'topic', '--partitions': 'partitions', '--replication': 'replication',
    '--count': 'count', '--compression': 'compression', '--group': 'group'
  }
  const numbers = new Set(['partitions', 'replication', 'count'])
  for (let i = 3; i < argv.length; i += 2) {
    const key = keys[argv[i]]
    if (!key || i + 1 >= argv.length) throw new Error(`bad argument ${argv[i]}`)
    args[key] = numbers.has(key) ? Number(argv[i + 1]) : argv[i + 1]
  }
  if (!args.bootstrap) throw new Error('--bootstrap is required')
  args.brokers = args.bootstrap.split(',')
  return args
}

const emit = obj => process.stdout.write(JSON.stringify(obj, (k, v) => (typeof v === 'bigint' ? Number(v) : v)) + '\n')

async function createTopic (args) {
  const admin = new Admin({ clientId: 'kiq-platformatic-admin', bootstrapBrokers: args.brokers })
  try {
    await admin.createTopics({ topics: [args.topic], partitions: args.partitions, replicas: args.replication })
    emit({ ok: true })
  } finally {
    await admin.close()
  }
}

async function produce (args) {
  const producer = new Producer({
    clientId: 'kiq-platformatic-producer', bootstrapBrokers: args.brokers, serializers: stringSerializers,
    compression: args.compression, autocreateTopics: false
  })
  try {
    // one record per send, so each result's offset is that record's
    for (let i = 0; i < args.count; i++) {
      const res = await producer.send({ messages: [{ topic: args.topic, key: `k${i}`, value: `v${i}` }] })
      const o = res.offsets[0]
      emit({ k: `k${i}`, p: o.partition, o: o.offset })
    }
  } finally {
    await producer.close()
  }
}

async function consume (args) {
  const consumer = new Consumer({
    clientId: 'kiq-platformatic-consumer', groupId: args.group, bootstrapBrokers: args.brokers,
    deserializers: stringDeserializers, sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTime: 200
  })
  const committed = {}
  try {
    const stream = await consumer.consume({ topics: [args.topic], mode: MessagesStreamModes.EARLIEST, autocommit: false })
    const timer = setTimeout(() => stream.destroy(new Error(`fewer than ${args.count} records in ${TIMEOUT_MS} ms`)),
      TIMEOUT_MS)
    let got = 0
    for await (const m of stream) {
      emit({ k: m.key, v: m.value, p: m.partition, o: m.offset })
      await m.commit()
      committed[m.partition] = Number(m.offset) + 1
      if (++got >= args.count) break
    }
    clearTimeout(timer)
    await stream.close()
  } finally {
    await consumer.close(true)
  }
  emit({ committed })
}

const ops = { 'create-topic': createTopic, produce, consume }
const args = parseArgs(process.argv)
if (!ops[args.op]) throw new Error(`unknown operation ${args.op}`)
ops[args.op](args).then(() => process.exit(0), e => {
  process.stderr.write(`platformatic.mjs: ${e.stack || e}\n`)
  if (e.errors) process.stderr.write(`caused by: ${JSON.stringify(e.errors, null, 1).slice(0, 4000)}\n`)
  process.exit(1)
})
