// One broker for the file: a real client (kafkajs) produces and consumes,
// faults from the control API reach it, refused calls say why.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { KafkaIQError, useKafkaIQ } from '@kafkaiq/launcher';
import { consume, createTopic, produce, topicName } from './helpers.mjs';

// kafkajs joins a group per consume(): no initial rebalance delay to sit out
const kafkaiq = useKafkaIQ({ beforeAll, afterAll, overrides: { 'group.initial.rebalance.delay.ms': 0 } });

describe('one broker', () => {
  test('serves a real client', async () => {
    const k = kafkaiq();
    expect(k.bootstrap).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(k.bootstrapServers).toEqual([k.bootstrap]);
    expect(k.brokers).toHaveLength(1);
    expect(k.http).toBe(k.brokers[0].http);
    const topic = topicName();
    await createTopic(k.bootstrapServers, topic);
    const acked = await produce(k.bootstrapServers, topic, ['a', 'b', 'c']);
    expect(acked[0]).toMatchObject({ topicName: topic, partition: 0, errorCode: 0, baseOffset: '0' });
    expect(await consume(k.bootstrapServers, topic, 3)).toEqual(['a', 'b', 'c']);
  });

  test('a retriable fault is retried and the record lands once', async () => {
    const k = kafkaiq();
    const topic = topicName();
    await createTopic(k.bootstrapServers, topic);
    const id = await k.fault({ api: 'Produce', topic, error: 'NOT_LEADER_OR_FOLLOWER', times: 1 });
    const acked = await produce(k.bootstrapServers, topic, ['x'], { idempotent: true, maxInFlightRequests: 1 });
    expect(acked[0]).toMatchObject({ errorCode: 0, baseOffset: '0' });
    const rule = (await k.faults()).find((f) => f.id === id);
    expect(rule).toMatchObject({ fired: 1, error: 'NOT_LEADER_OR_FOLLOWER' });
    expect(rule.matched).toBeGreaterThanOrEqual(2); // the refused request and the retry
    await k.wait({ topic, partition: 0, highWatermark: 1 });
    await expect(k.wait({ topic, partition: 0, highWatermark: 2 }, { timeoutMs: 100 })).rejects.toThrow(/408/);
    expect(await k.removeFault(id)).toEqual([id]);
  });

  test('a fatal fault reaches the application', async () => {
    const k = kafkaiq();
    const topic = topicName();
    await createTopic(k.bootstrapServers, topic);
    const id = await k.fault({ api: 'Produce', topic, error: 'TOPIC_AUTHORIZATION_FAILED' });
    await expect(produce(k.bootstrapServers, topic, ['y'])).rejects.toMatchObject({
      name: 'KafkaJSProtocolError',
      type: 'TOPIC_AUTHORIZATION_FAILED',
      retriable: false,
    });
    expect(await k.removeFault()).toEqual([id]);
    expect(await k.faults()).toEqual([]);
    expect((await produce(k.bootstrapServers, topic, ['z']))[0].errorCode).toBe(0);
  });

  test('the control API explains a call it refuses', async () => {
    const k = kafkaiq();
    const refused = k.fault({ api: 'Produce', error: 'NOT_AN_ERROR' });
    await expect(refused).rejects.toThrow(KafkaIQError);
    await expect(refused).rejects.toThrow("POST /api/faults: 400 fault rule: unknown error 'NOT_AN_ERROR'");
    await expect(k.removeFault(4242)).rejects.toMatchObject({ status: 404, message: /404 no fault rule 4242/ });
    await expect(k.kill(0)).rejects.toThrow(/409 this broker runs alone/);
    await expect(k.advanceClock(1000)).rejects.toThrow(/409 the clock is the system's/);
    await expect(k.state(7)).rejects.toThrow('no broker 7 in this process');
  });

  test('a wait that cannot be met says what it saw', async () => {
    await expect(
      kafkaiq().wait({ topic: 'nothing', partition: 0, high_watermark: 5 }, { timeoutMs: 100 }),
    ).rejects.toThrow(/408 timed out after .* ms waiting for high watermark 5 of nothing-0/);
  });

  test('state shows the topics', async () => {
    const k = kafkaiq();
    const topic = topicName();
    await createTopic(k.bootstrapServers, topic, { partitions: 2 });
    const state = await k.state();
    expect(Object.keys(state.topics[topic].partitions)).toHaveLength(2);
  });
});
