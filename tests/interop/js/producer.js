// Produces records with kafkajs and prints where each landed.
//
// Reads a JSON array of {"k", "v", "h": [[name, value], ...], "p"} from the
// file given by --input, sends them per partition in order (so a batch's base
// offset tells every record's offset), and prints one JSON line per record:
// {"k": key, "p": partition, "o": offset}. Exits non-zero on any error.
//
// usage: node producer.js --bootstrap H:P --topic T --input FILE
//          [--codec none|gzip] [--idempotent]

'use strict'

const fs = require('fs')
const { Kafka, logLevel, CompressionTypes } = require('kafkajs')

const CHUNK = 500

function parseArgs(argv) {
  const args = { codec: 'none', idempotent: false }
  for (let i = 2; i < argv.length; i++) {
    switch (argv[i]) {
      case '--bootstrap': args.bootstrap = argv[++i]; break
      case '--topic': args.topic = argv[++i]; break
      case '--input': args.input = argv[++i]; break
      case '--codec': args.codec = argv[++i]; break
      case '--idempotent': args.idempotent = true; break
      default: throw new Error(`bad argument ${argv[i]}`)
    }
  }
  for (const need of ['bootstrap', 'topic', 'input']) {
    if (!args[need]) throw new Error(`--${need} is required`)
  }
  return args
}

const stderrLog = () => ({ namespace, level, log }) => {
  const { message, ...extra } = log
  process.stderr.write(`${level} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
}

async function main() {
  const args = parseArgs(process.argv)
  const compression = { none: CompressionTypes.None, gzip: CompressionTypes.GZIP }[args.codec]
  if (compression === undefined) throw new Error(`unsupported codec ${args.codec}`)
  const records = JSON.parse(fs.readFileSync(args.input, 'utf8'))
  const kafka = new Kafka({
    clientId: 'kiq-kafkajs-producer',
    brokers: [args.bootstrap],
    logLevel: logLevel.WARN,
    logCreator: stderrLog,
  })
  const producer = kafka.producer({
    idempotent: args.idempotent,
    maxInFlightRequests: args.idempotent ? 1 : undefined,
    allowAutoTopicCreation: false,
  })
  await producer.connect()
  const byPartition = new Map()
  for (const r of records) {
    if (!byPartition.has(r.p)) byPartition.set(r.p, [])
    byPartition.get(r.p).push(r)
  }
  const out = []
  for (const [partition, recs] of byPartition) {
    for (let i = 0; i < recs.length; i += CHUNK) {
      const chunk = recs.slice(i, i + CHUNK)
      const res = await producer.send({
        topic: args.topic,
        acks: -1,
        compression,
        messages: chunk.map(r => ({
          key: r.k,
          value: r.v,
          partition,
          headers: Object.fromEntries(r.h),
        })),
      })
      const meta = res.find(m => m.partition === partition)
      if (!meta || meta.errorCode !== 0) throw new Error(`send failed: ${JSON.stringify(res)}`)
      const base = BigInt(meta.baseOffset)
      chunk.forEach((r, j) => out.push({ k: r.k, p: partition, o: Number(base + BigInt(j)) }))
    }
  }
  await producer.disconnect()
  process.stdout.write(out.map(o => JSON.stringify(o)).join('\n') + '\n')
}

main().catch(e => {
  process.stderr.write(`producer: ${e.stack || e}\n`)
  process.exit(1)
})
