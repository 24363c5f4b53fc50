// Three brokers in one process: acks=all replication, a killed broker back
// with its data, leadership moved and given back. One process at a time:
// each describe starts its own in beforeAll and stops it in afterAll.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { useKafkaIQ } from '@kafkaiq/launcher';
import { consume, createTopic, produce, replicas, topicName } from './helpers.mjs';

const quickGroups = { 'group.initial.rebalance.delay.ms': 0 };

describe('a cluster of three', () => {
  const kafkaiq = useKafkaIQ({ beforeAll, afterAll, brokers: 3, overrides: quickGroups });

  test('replicates acks=all and every broker answers', async () => {
    const k = kafkaiq();
    expect(k.brokers.map((b) => b.id)).toEqual([0, 1, 2]);
    expect(new Set(k.brokers.map((b) => b.port)).size).toBe(3);
    expect(k.bootstrapServers).toEqual(k.brokers.map((b) => `${b.host}:${b.port}`));
    const topic = topicName();
    await createTopic(k.bootstrapServers, topic, { partitions: 3, rf: 3 });
    for (const partition of [0, 1, 2]) await k.wait({ topic, partition, isr: 3 });
    const values = Array.from({ length: 30 }, (_, i) => `r${i}`);
    await produce(k.bootstrapServers, topic, values);
    expect((await consume(k.bootstrapServers, topic, 30)).sort()).toEqual([...values].sort());
    const state = await k.state(1);
    expect(Object.keys(state.topics[topic].partitions)).toHaveLength(3);
  });

  test('leadership moves only to a replica', async () => {
    const k = kafkaiq();
    const topic = topicName();
    await createTopic(k.bootstrapServers, topic, { rf: 2 });
    await k.wait({ topic, partition: 0, isr: 2 });
    const [first, second] = await replicas(k.bootstrapServers, topic);
    const outsider = [0, 1, 2].find((id) => id !== first && id !== second);
    await expect(k.moveLeader(topic, 0, outsider)).rejects.toThrow(
      `409 broker ${outsider} holds no replica of ${topic}-0`,
    );
    await expect(k.moveLeader('nothing', 0, 1)).rejects.toThrow('404 no partition nothing-0');
    await expect(k.call('POST', '/api/leaders', { topic })).rejects.toThrow('400 leaders take');
    expect(await k.moveLeader(topic, 0, second, { via: 1 })).toEqual({ topic, partition: 0, leader: second });
    await k.wait({ topic, partition: 0, leader: second });
  });
});

describe('failures', () => {
  const kafkaiq = useKafkaIQ({
    beforeAll,
    afterAll,
    brokers: 3,
    overrides: {
      ...quickGroups,
      'min.insync.replicas': 2,
      // a dead broker and a cut follower noticed in about a second, not nine or thirty
      'broker.heartbeat.interval.ms': 200,
      'broker.session.timeout.ms': 1500,
      'replica.lag.time.max.ms': 1000,
    },
  });

  test('a killed broker comes back, and the data with it', async () => {
    const k = kafkaiq();
    const topic = topicName();
    await createTopic(k.bootstrapServers, topic, { rf: 3 });
    await k.wait({ topic, partition: 0, isr: 3 });
    // broker 0 runs the one controller: the leader killed is another
    expect(await k.moveLeader(topic, 0, 1)).toEqual({ topic, partition: 0, leader: 1 });
    await k.wait({ topic, partition: 0, leader: 1 });
    await produce(k.bootstrapServers, topic, ['before']);
    expect(await k.kill(1)).toEqual({ broker: 1, op: 'kill', queued: true });
    await k.wait({ broker: 1, state: 'stopped' });
    // the controller fences it after the session timeout: then another leads
    await k.wait({ topic, partition: 0, isr: 2 });
    const during = await produce(k.bootstrapServers, topic, ['during']);
    expect(during[0]).toMatchObject({ errorCode: 0, baseOffset: '1' });
    expect(await k.restart(1, { via: 2 })).toMatchObject({ broker: 1, op: 'restart' });
    await k.wait({ broker: 1, state: 'ready' }, { via: 2 });
    await k.wait({ topic, partition: 0, isr: 3 }, { timeoutMs: 30000 });
    await k.wait({ topic, partition: 0, highWatermark: 2 }, { via: 2 });
    expect(await k.electPreferred()).toBe(1);
    await k.wait({ topic, partition: 0, leader: 1 });
    expect((await consume(k.bootstrapServers, topic, 2)).sort()).toEqual(['before', 'during']);
  });

  test('a cut follower leaves the ISR and rejoins when healed', async () => {
    const k = kafkaiq();
    const topic = topicName();
    await createTopic(k.bootstrapServers, topic, { rf: 3 });
    await k.wait({ topic, partition: 0, isr: 3 });
    await k.moveLeader(topic, 0, 1);
    await k.wait({ topic, partition: 0, leader: 1 });
    await k.link(1, 2, 'cut');
    expect((await k.call('GET', '/api/brokers')).links).toContainEqual({ from: 1, to: 2 });
    await produce(k.bootstrapServers, topic, ['a']);
    await k.wait({ topic, partition: 0, isr: 2 }, { timeoutMs: 40000 });
    await k.link(1, 2, 'heal');
    await k.wait({ topic, partition: 0, isr: 3 }, { timeoutMs: 20000 });
  });

  test('stop(id) stops one broker cleanly; pause and resume', async () => {
    const k = kafkaiq();
    expect(await k.stop(2)).toEqual({ broker: 2, op: 'stop', queued: true });
    await k.wait({ broker: 2, state: 'stopped' });
    await k.restart(2);
    await k.wait({ broker: 2, state: 'ready' });
    const paused = async () => (await k.call('GET', '/api/brokers')).brokers.find((b) => b.id === 2).paused;
    expect(await k.pause(2, { via: 1 })).toMatchObject({ broker: 2, op: 'pause' });
    expect(await paused()).toBe(true);
    expect(await k.resume(2, { via: 1 })).toMatchObject({ broker: 2, op: 'resume' });
    expect(await paused()).toBe(false);
    expect(await k.faults({ broker: 2 })).toEqual([]);
  });
});
