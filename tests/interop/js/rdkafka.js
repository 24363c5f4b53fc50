// A current librdkafka driven by the interop tests: node-rdkafka 3.6.1
// (bundling librdkafka 2.12.0), or with KIQ_RDKAFKA_MODULE set to
// @confluentinc/kafka-javascript, its fork 1.10.1 (bundling 2.15.1) through
// the same API. One operation per run, its result as JSON lines on
// stdout, librdkafka's own log on stderr. Exits non-zero when the operation
// fails; an admin call that gets a Kafka error prints {"error": code,
// "message": ...} and exits 0, so tests can assert on the code.
//
// usage: node rdkafka.js OP --bootstrap H:P[,H:P] [options]
//   metadata                                   all topics: {"brokers", "topics", "controller"}
//   create-topic --topic T --partitions N [--replication R] [--config k=v]...
//   delete-topic --topic T
//   create-partitions --topic T --total N
//   produce --topic T --input FILE [--codec none|gzip|snappy|lz4|zstd] [--acks N] [--idempotent]
//        FILE: a JSON array of {"k", "v"}; prints {"k", "p", "o"} per record
//   consume-group --group G --topic T --count N
//        subscribes, prints {"k", "p", "o"} per record until N came, commits
//        synchronously, then prints {"committed": {partition: offset}}
//   grow --group G --topic T --from P --to Q
//        a producer and a subscribed consumer of T (P partitions); grows T to Q
//        partitions from this process's admin client and keeps producing keyed
//        records until the producer wrote to and the consumer read from every
//        new partition; prints {"produced": [partitions], "consumed": [...],
//        "assigned": [...]}

'use strict'

const fs = require('fs')
const Kafka = require(process.env.KIQ_RDKAFKA_MODULE || 'node-rdkafka')

const TIMEOUT_MS = 30000

function parseArgs(argv) {
  const args = { op: argv[2], config: [], codec: 'none', acks: -1, replication: -1, idempotent: false }
  const keys = {
    '--bootstrap': 'bootstrap', '--topic': 'topic', '--partitions': 'partitions',
    '--replication': 'replication', '--total': 'total', '--input': 'input', '--codec': 'codec',
    '--acks': 'acks', '--group': 'group', '--count': 'count', '--from': 'from', '--to': 'to',
  }
  const numbers = new Set(['partitions', 'replication', 'total', 'acks', 'count', 'from', 'to'])
  for (let i = 3; i < argv.length; i++) {
    if (argv[i] === '--idempotent') {
      args.idempotent = true
    } else if (argv[i] === '--config' && i + 1 < argv.length) {
      args.config.push(argv[++i])
    } else if (keys[argv[i]] && i + 1 < argv.length) {
      const key = keys[argv[i]]
      args[key] = numbers.has(key) ? Number(argv[++i]) : argv[++i]
    } else {
      throw new Error(`bad argument ${argv[i]}`)
    }
  }
  if (!args.bootstrap) throw new Error('--bootstrap is required')
  return args
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

function logTo(client, name) {
  client.on('event.log', l => process.stderr.write(`${name} ${l.severity} ${l.fac}: ${l.message}\n`))
  client.on('event.error', e => process.stderr.write(`${name} error: ${e.message} (${e.code})\n`))
}

function base(args, extra) {
  return Object.assign({ 'bootstrap.servers': args.bootstrap, 'client.id': 'kiq-rdkafka-2.12', 'log_level': 4 }, extra)
}

function connect(client) {
  return new Promise((resolve, reject) => {
    client.connect({ timeout: TIMEOUT_MS }, (err, md) => (err ? reject(err) : resolve(md)))
  })
}

function disconnect(client) {
  return new Promise(resolve => client.disconnect(() => resolve()))
}

// Runs an admin call; a Kafka error becomes {"error", "message"}.
async function admin(args, call) {
  const a = Kafka.AdminClient.create(base(args, {}))
  try {
    await new Promise((resolve, reject) => call(a, err => (err ? reject(err) : resolve())))
    emit({ ok: true })
  } catch (e) {
    if (typeof e.code !== 'number') throw e
    emit({ error: e.code, message: e.message })
  } finally {
    a.disconnect()
  }
}

async function metadata(args) {
  const p = new Kafka.Producer(base(args, {}))
  logTo(p, 'metadata')
  await connect(p)
  const md = await new Promise((resolve, reject) =>
    p.getMetadata({ timeout: TIMEOUT_MS }, (err, m) => (err ? reject(err) : resolve(m))))
  await disconnect(p)
  const topics = {}
  for (const t of md.topics) {
    topics[t.name] = t.partitions.map(x => ({ id: x.id, leader: x.leader, replicas: x.replicas, isrs: x.isrs }))
  }
  emit({ brokers: md.brokers, topics, orig_broker_id: md.orig_broker_id })
}

const CODECS = new Set(['none', 'gzip', 'snappy', 'lz4', 'zstd'])

function producer(args, extra) {
  if (!CODECS.has(args.codec)) throw new Error(`unsupported codec ${args.codec}`)
  return new Kafka.Producer(base(args, Object.assign({
    'dr_cb': true,
    'compression.codec': args.codec,
    'acks': args.acks,
    'enable.idempotence': args.idempotent,
    'linger.ms': 5,
  }, extra)))
}

// Sends records and resolves with their delivery reports, in send order.
function sendAll(p, topic, records) {
  return new Promise((resolve, reject) => {
    const reports = new Array(records.length)
    let left = records.length
    if (left === 0) return resolve(reports)
    const onReport = (err, dr) => {
      if (err) {
        p.removeListener('delivery-report', onReport)
        return reject(new Error(`delivery failed: ${err.message} (${err.code})`))
      }
      reports[dr.opaque] = { k: dr.key.toString(), p: dr.partition, o: dr.offset }
      if (--left === 0) {
        p.removeListener('delivery-report', onReport)
        resolve(reports)
      }
    }
    p.on('delivery-report', onReport)
    records.forEach((r, i) => p.produce(topic, null, Buffer.from(r.v), r.k, Date.now(), i))
  })
}

async function produce(args) {
  const records = JSON.parse(fs.readFileSync(args.input, 'utf8'))
  const p = producer(args, {})
  logTo(p, 'producer')
  await connect(p)
  p.setPollInterval(10)
  const reports = await sendAll(p, args.topic, records)
  await disconnect(p)
  for (const r of reports) emit(r)
}

function consumer(args, onRebalance) {
  return new Kafka.KafkaConsumer(base(args, {
    'group.id': args.group,
    'enable.auto.commit': false,
    'session.timeout.ms': 10000,
    'topic.metadata.refresh.interval.ms': 1000,
    'rebalance_cb': onRebalance,
  }), { 'auto.offset.reset': 'earliest' })
}

function consumeBatch(c, n) {
  return new Promise((resolve, reject) => c.consume(n, (err, msgs) => (err ? reject(err) : resolve(msgs))))
}

async function consumeGroup(args) {
  const c = consumer(args, true)
  logTo(c, 'consumer')
  await connect(c)
  c.subscribe([args.topic])
  const deadline = Date.now() + 60000
  let got = 0
  while (got < args.count) {
    if (Date.now() > deadline) throw new Error(`${got} of ${args.count} records before the deadline`)
    for (const m of await consumeBatch(c, 100)) {
      emit({ k: m.key ? m.key.toString() : null, p: m.partition, o: m.offset })
      got++
    }
  }
  c.commitSync(null)
  const committed = await new Promise((resolve, reject) =>
    c.committed(null, TIMEOUT_MS, (err, tps) => (err ? reject(err) : resolve(tps))))
  const out = {}
  for (const tp of committed) out[tp.partition] = tp.offset
  emit({ committed: out })
  await disconnect(c)
}

async function grow(args) {
  const assigned = new Set()
  const c = consumer(args, function (err, assignment) {
    if (err.code === Kafka.CODES.ERRORS.ERR__ASSIGN_PARTITIONS) {
      for (const tp of assignment) assigned.add(tp.partition)
      this.assign(assignment)
    } else {
      assigned.clear()
      this.unassign()
    }
  })
  logTo(c, 'consumer')
  await connect(c)
  c.subscribe([args.topic])
  const p = producer(args, { 'topic.metadata.refresh.interval.ms': 1000 })
  logTo(p, 'producer')
  await connect(p)
  p.setPollInterval(10)
  const produced = new Set()
  const consumed = new Set()
  const want = []
  for (let i = args.from; i < args.to; i++) want.push(i)
  const all = s => want.every(x => s.has(x))
  const round = async n => {
    const recs = []
    for (let i = 0; i < 50; i++) recs.push({ k: `key-${n}-${i}`, v: `value-${n}-${i}` })
    for (const r of await sendAll(p, args.topic, recs)) produced.add(r.p)
    for (const m of await consumeBatch(c, 500)) consumed.add(m.partition)
  }
  await round(0)
  const a = Kafka.AdminClient.create(base(args, {}))
  await new Promise((resolve, reject) =>
    a.createPartitions(args.topic, args.to, TIMEOUT_MS, err => (err ? reject(err) : resolve())))
  a.disconnect()
  const deadline = Date.now() + 60000
  for (let n = 1; !(all(produced) && all(consumed) && all(assigned)); n++) {
    if (Date.now() > deadline) break
    await round(n)
    await new Promise(resolve => setTimeout(resolve, 200))
  }
  const sorted = s => [...s].sort((x, y) => x - y)
  const result = { produced: sorted(produced), consumed: sorted(consumed), assigned: sorted(assigned) }
  await disconnect(p)
  await disconnect(c)
  emit(result)
}

async function main() {
  const args = parseArgs(process.argv)
  switch (args.op) {
    case 'metadata': return metadata(args)
    case 'create-topic': {
      const config = {}
      for (const kv of args.config) {
        const at = kv.indexOf('=')
        config[kv.slice(0, at)] = kv.slice(at + 1)
      }
      return admin(args, (a, cb) => a.createTopic({
        topic: args.topic, num_partitions: args.partitions, replication_factor: args.replication, config,
      }, TIMEOUT_MS, cb))
    }
    case 'delete-topic': return admin(args, (a, cb) => a.deleteTopic(args.topic, TIMEOUT_MS, cb))
    case 'create-partitions':
      return admin(args, (a, cb) => a.createPartitions(args.topic, args.total, TIMEOUT_MS, cb))
    case 'produce': return produce(args)
    case 'consume-group': return consumeGroup(args)
    case 'grow': return grow(args)
    default: throw new Error(`unknown operation ${args.op}`)
  }
}

main().then(() => process.exit(0), e => {
  process.stderr.write(`rdkafka.js: ${e.stack || e}\n`)
  process.exit(1)
})
