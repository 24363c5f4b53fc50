// One kafkajs consumer-group member, speaking the same JSON-lines protocol as
// tests/interop/group_member.py so the Python tests drive both alike:
//
//   {"ev": "assigned", "parts": [0, 1]}            after every join
//   {"ev": "revoked", "parts": []}                  when kafkajs starts a rebalance
//   {"ev": "rec", "p": 0, "o": 17, "k": "..."}      every record consumed
//   {"ev": "commit", "offsets": {"0": 18}, "err": null}
//   {"ev": "exit"}
//
// It commits after every batch, and leaves the group and exits 0 when stdin
// closes or on SIGTERM. kafkajs logs go to stderr, never to stdout.
//
// usage: node group_consumer.js --bootstrap H:P --group G --topic T
//          [--name N] [--assigner range|roundrobin] [--session-timeout MS]

'use strict'

const { Kafka, logLevel, AssignerProtocol, PartitionAssigners } = require('kafkajs')

const { MemberMetadata, MemberAssignment } = AssignerProtocol

function parseArgs(argv) {
  const args = { name: 'kiq-kafkajs', assigner: 'range', sessionTimeout: 10000 }
  const keys = {
    '--bootstrap': 'bootstrap',
    '--group': 'group',
    '--topic': 'topic',
    '--name': 'name',
    '--assigner': 'assigner',
    '--session-timeout': 'sessionTimeout',
  }
  for (let i = 2; i < argv.length; i += 2) {
    const key = keys[argv[i]]
    if (!key || i + 1 >= argv.length) {
      throw new Error(`bad argument ${argv[i]}`)
    }
    args[key] = key === 'sessionTimeout' ? Number(argv[i + 1]) : argv[i + 1]
  }
  for (const need of ['bootstrap', 'group', 'topic']) {
    if (!args[need]) throw new Error(`--${need} is required`)
  }
  return args
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

// The range assignor under the protocol name librdkafka and the Java client
// use ("range"), so a kafkajs member can share a group with them: per topic,
// members sorted by id take consecutive runs of partitions, the first
// (partitions % members) of them one extra.
const RangeAssigner = ({ cluster }) => ({
  name: 'range',
  version: 0,

  async assign({ members }) {
    const byTopic = {}
    for (const { memberId, memberMetadata } of members) {
      for (const topic of MemberMetadata.decode(memberMetadata).topics) {
        ;(byTopic[topic] = byTopic[topic] || []).push(memberId)
      }
    }
    const plan = {}
    for (const memberId of members.map(m => m.memberId)) plan[memberId] = {}
    for (const [topic, ids] of Object.entries(byTopic)) {
      ids.sort()
      const parts = cluster
        .findTopicPartitionMetadata(topic)
        .map(p => p.partitionId)
        .sort((a, b) => a - b)
      const each = Math.floor(parts.length / ids.length)
      const extra = parts.length % ids.length
      let next = 0
      ids.forEach((id, i) => {
        const n = each + (i < extra ? 1 : 0)
        plan[id][topic] = parts.slice(next, next + n)
        next += n
      })
    }
    return Object.entries(plan).map(([memberId, assignment]) => ({
      memberId,
      memberAssignment: MemberAssignment.encode({ version: this.version, assignment }),
    }))
  },

  protocol({ topics }) {
    return { name: this.name, metadata: MemberMetadata.encode({ version: this.version, topics }) }
  },
})

// kafkajs's default logger writes to stdout; ours keeps stdout for events.
const stderrLog = () => ({ namespace, level, log }) => {
  const { message, ...extra } = log
  process.stderr.write(`${level} [${namespace}] ${message} ${JSON.stringify(extra)}\n`)
}

async function main() {
  const args = parseArgs(process.argv)
  const kafka = new Kafka({
    clientId: args.name,
    brokers: [args.bootstrap],
    logLevel: logLevel.WARN,
    logCreator: stderrLog,
    retry: { retries: 10 },
  })
  const assigners = {
    range: [RangeAssigner],
    roundrobin: [PartitionAssigners.roundRobin],
  }[args.assigner]
  if (!assigners) throw new Error(`unknown assigner ${args.assigner}`)
  const consumer = kafka.consumer({
    groupId: args.group,
    sessionTimeout: args.sessionTimeout,
    heartbeatInterval: Math.max(100, Math.floor(args.sessionTimeout / 6)),
    partitionAssigners: assigners,
    maxWaitTimeInMs: 100,
  })

  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    const parts = (payload.memberAssignment[args.topic] || []).slice()
    emit({ ev: 'assigned', parts: parts.sort((a, b) => a - b) })
  })
  consumer.on(consumer.events.REBALANCING, () => emit({ ev: 'revoked', parts: [] }))

  let stopping = null
  const stop = () => {
    if (!stopping) {
      stopping = consumer
        .disconnect()
        .catch(e => process.stderr.write(`disconnect: ${e}\n`))
        .then(() => {
          emit({ ev: 'exit' })
          process.exit(0)
        })
    }
  }
  process.on('SIGTERM', stop)
  process.stdin.on('end', stop)
  process.stdin.on('error', stop)
  process.stdin.resume()

  await consumer.connect()
  await consumer.subscribe({ topics: [args.topic], fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset }) => {
      if (batch.messages.length === 0) return
      let last = null
      for (const m of batch.messages) {
        const key = m.key === null ? null : m.key.toString()
        emit({ ev: 'rec', p: batch.partition, o: Number(m.offset), k: key })
        resolveOffset(m.offset)
        last = m.offset
      }
      const next = (BigInt(last) + 1n).toString()
      try {
        const { topic, partition } = batch
        await consumer.commitOffsets([{ topic, partition, offset: next }])
        emit({ ev: 'commit', offsets: { [batch.partition]: Number(next) }, err: null })
      } catch (e) {
        emit({ ev: 'commit', offsets: {}, err: String(e) })
      }
    },
  })
}

main().catch(e => {
  process.stderr.write(`group_consumer: ${e.stack || e}\n`)
  process.exit(1)
})
