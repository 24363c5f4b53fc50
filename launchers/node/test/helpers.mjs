// kafkajs around the launcher's tests: every await bounded, so a hang fails
// its test with a name instead of stalling the suite.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import kafkajs from 'kafkajs';

const { Kafka, logLevel } = kafkajs;

export function within(ms, promise, what) {
  let timer;
  const bound = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

export const topicName = () => 'launcher-' + randomBytes(4).toString('hex');

export function client(bootstrapServers) {
  return new Kafka({
    clientId: 'kafkaiq-launcher-test',
    brokers: bootstrapServers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: { initialRetryTime: 50, retries: 5 },
  });
}

async function withAdmin(bootstrapServers, use) {
  const admin = client(bootstrapServers).admin();
  await within(10000, admin.connect(), 'admin connect');
  try {
    return await use(admin);
  } finally {
    await within(10000, admin.disconnect(), 'admin disconnect');
  }
}

export function createTopic(bootstrapServers, topic, { partitions = 1, rf = 1 } = {}) {
  return withAdmin(bootstrapServers, async (admin) => {
    const topics = [{ topic, numPartitions: partitions, replicationFactor: rf }];
    const created = await within(20000, admin.createTopics({ topics, waitForLeaders: true }), 'createTopics');
    if (!created) throw new Error(`topic ${topic} already existed`);
  });
}

/** The replica ids of one partition, as Metadata tells them. */
export function replicas(bootstrapServers, topic, partition = 0) {
  return withAdmin(bootstrapServers, async (admin) => {
    const { topics } = await within(10000, admin.fetchTopicMetadata({ topics: [topic] }), 'metadata');
    return topics[0].partitions.find((p) => p.partitionId === partition).replicas;
  });
}

/** Sends the values in one request; resolves with kafkajs's record metadata. */
export async function produce(bootstrapServers, topic, values, { acks = -1, ...config } = {}) {
  const producer = client(bootstrapServers).producer({ allowAutoTopicCreation: true, ...config });
  await within(10000, producer.connect(), 'producer connect');
  try {
    return await within(
      30000,
      producer.send({ topic, acks, messages: values.map((value) => ({ value })) }),
      `produce to ${topic}`,
    );
  } finally {
    await within(10000, producer.disconnect(), 'producer disconnect');
  }
}

/** The first n values of the topic, read through a consumer group of its own. */
export async function consume(bootstrapServers, topic, n) {
  const consumer = client(bootstrapServers).consumer({
    groupId: 'g-' + topic,
    sessionTimeout: 10000,
    heartbeatInterval: 1000,
    maxWaitTimeInMs: 100,
  });
  await within(10000, consumer.connect(), 'consumer connect');
  try {
    await within(10000, consumer.subscribe({ topics: [topic], fromBeginning: true }), 'subscribe');
    const got = [];
    await within(
      30000,
      new Promise((resolve, reject) => {
        consumer
          .run({
            eachMessage: async ({ message }) => {
              got.push(message.value.toString());
              if (got.length === n) resolve();
            },
          })
          .catch(reject);
      }),
      `consume ${n} from ${topic}`,
    );
    return got;
  } finally {
    await within(15000, consumer.disconnect(), 'consumer disconnect');
  }
}

/** Runs a command to its end, without colours; resolves with its exit code and output. */
export function run(command, args, { env, timeoutMs = 60000 } = {}) {
  const { FORCE_COLOR, ...inherited } = process.env;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...inherited, NO_COLOR: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c) => (output += c));
    child.stderr.on('data', (c) => (output += c));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')}: still running after ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** Whether a process still runs (a zombie waiting for its reaper does not count). */
export function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if (e.code === 'ESRCH') return false;
    throw e;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Until pid is gone, at most ms: SIGKILL is delivered asynchronously. */
export async function gone(pid, ms = 5000) {
  const deadline = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}
