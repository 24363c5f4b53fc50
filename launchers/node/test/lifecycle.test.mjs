// Starting and stopping: a bad start says why, stop() is idempotent and
// leaves nothing behind, a failed test or a crashed runner leaves no broker,
// the global setups for vitest and jest, and the manual clock.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import {
  KafkaIQError,
  attachKafkaIQ,
  findBinary,
  startKafkaIQ,
  useKafkaIQ,
  useKafkaIQFactory,
} from '@kafkaiq/launcher';
import { alive, createTopic, gone, produce, run, topicName } from './helpers.mjs';

const require = createRequire(import.meta.url);
const here = fileURLToPath(new URL('.', import.meta.url));
const vitest = join(here, '..', 'node_modules', 'vitest', 'vitest.mjs');
const start = useKafkaIQFactory({ afterEach });

function scratch() {
  return mkdtempSync(join(tmpdir(), 'kafkaiq-launcher-test-'));
}

describe('starting', () => {
  test('a bad start says why', async () => {
    const started = start({ overrides: { 'num.partitions': 'many' } });
    await expect(started).rejects.toThrow(KafkaIQError);
    await expect(started).rejects.toThrow(/kafkaiq serve did not start: exited \(1\): .*num\.partitions/);
  });

  test('a binary that cannot run says so', async () => {
    await expect(start({ binary: '/nonexistent/kafkaiq' })).rejects.toThrow(
      'kafkaiq serve did not start: cannot run /nonexistent/kafkaiq: spawn /nonexistent/kafkaiq ENOENT',
    );
  });

  test('the binary is $KAFKAIQ_BIN, else kafkaiq on PATH', () => {
    const saved = { bin: process.env.KAFKAIQ_BIN, path: process.env.PATH };
    try {
      process.env.KAFKAIQ_BIN = '/opt/somewhere/kafkaiq';
      expect(findBinary()).toBe('/opt/somewhere/kafkaiq');
      delete process.env.KAFKAIQ_BIN;
      process.env.PATH = join(saved.bin, '..');
      expect(findBinary()).toBe(join(saved.bin, '..', 'kafkaiq'));
      process.env.PATH = here;
      expect(() => findBinary()).toThrow('kafkaiq not found: install it (make install, or the Debian package) or set KAFKAIQ_BIN');
    } finally {
      process.env.KAFKAIQ_BIN = saved.bin;
      process.env.PATH = saved.path;
    }
  });

  test('the hooks are needed, and the broker only runs once they ran', () => {
    const saved = globalThis.beforeAll;
    delete globalThis.beforeAll;
    try {
      expect(() => useKafkaIQ({ afterAll: () => {} })).toThrow(/beforeAll not found: pass it/);
    } finally {
      if (saved) globalThis.beforeAll = saved;
    }
    const early = useKafkaIQ({ beforeAll: () => {}, afterAll: () => {} });
    expect(() => early()).toThrow('KafkaIQ is not running: it starts in beforeAll');
  });

  test('require() gives the same API as import', () => {
    const cjs = require('@kafkaiq/launcher');
    expect(Object.keys(cjs).sort()).toEqual(
      ['KafkaIQ', 'KafkaIQError', 'attachKafkaIQ', 'findBinary', 'startKafkaIQ', 'useKafkaIQ', 'useKafkaIQFactory'],
    );
    expect(typeof cjs.startKafkaIQ).toBe('function');
  });
});

describe('stopping', () => {
  test('stop() ends the process, removes its data, and can be called again', async () => {
    const k = await startKafkaIQ();
    expect(k.readyAfterMs).toBeGreaterThan(0);
    expect(alive(k.pid)).toBe(true);
    expect(existsSync(k.dir)).toBe(true);
    await Promise.all([k.stop(), k.stop()]);
    expect(alive(k.pid)).toBe(false);
    expect(existsSync(k.dir)).toBe(false);
    await k.stop();
    await expect(k.faults()).rejects.toThrow(/GET \/api\/faults: connect ECONNREFUSED/);
  });

  test('a failing test still stops its brokers', async () => {
    const dir = scratch();
    try {
      const { code, output } = await run(
        process.execPath,
        [vitest, 'run', '--config', join(here, 'fixtures', 'vitest.failing.config.mjs')],
        { env: { KAFKAIQ_PIDDIR: dir } },
      );
      expect(code, output).toBe(1);
      expect(output).toMatch(/Tests\s+2 failed/);
      for (const name of ['all', 'each']) {
        const pid = Number(readFileSync(join(dir, name), 'utf8'));
        expect(pid).toBeGreaterThan(0);
        expect(alive(pid), `broker ${pid} (${name})`).toBe(false);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a runner that crashes takes its broker with it', async () => {
    const dir = scratch();
    try {
      const said = join(dir, 'started');
      const { code, output } = await run(process.execPath, [join(here, 'fixtures', 'crash.mjs'), said]);
      expect(code, output).toBe(1);
      expect(output).toContain('the runner crashes');
      const { pid, dir: data } = JSON.parse(readFileSync(said, 'utf8'));
      // SIGKILL was sent on the way out; its delivery is the kernel's
      expect(await gone(pid), `broker ${pid}`).toBe(true);
      expect(existsSync(data)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('global setups', () => {
  test('vitest: provided to the tests, announced in the environment, stopped at the end', async () => {
    const dir = scratch();
    try {
      const pidfile = join(dir, 'pid');
      const { code, output } = await run(
        process.execPath,
        [vitest, 'run', '--config', join(here, 'fixtures', 'vitest.global.config.mjs')],
        { env: { KAFKAIQ_PIDFILE: pidfile, KAFKAIQ_BROKERS: '2' } },
      );
      expect(code, output).toBe(0);
      expect(output).toMatch(/Tests\s+1 passed/);
      const pid = Number(readFileSync(pidfile, 'utf8'));
      expect(alive(pid), `broker ${pid}`).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('jest: setup announces it in the environment, teardown stops it', async () => {
    const setup = require('@kafkaiq/launcher/jest-global-setup');
    const teardown = require('@kafkaiq/launcher/jest-global-teardown');
    process.env.KAFKAIQ_OVERRIDES = JSON.stringify({ 'num.partitions': 3 });
    try {
      await setup();
    } finally {
      delete process.env.KAFKAIQ_OVERRIDES;
    }
    let pid;
    try {
      const k = attachKafkaIQ();
      pid = k.pid;
      expect(process.env.KAFKAIQ_BOOTSTRAP).toBe(k.bootstrap);
      expect(process.env.KAFKAIQ_HTTP).toBe(k.http);
      const topic = topicName();
      await produce(k.bootstrapServers, topic, ['auto-created']);
      expect(Object.keys((await k.state()).topics[topic].partitions)).toHaveLength(3);
    } finally {
      await teardown();
    }
    expect(alive(pid)).toBe(false);
    expect(process.env.KAFKAIQ_READY).toBeUndefined();
    expect(() => attachKafkaIQ()).toThrow('no KafkaIQ to attach to');
  });
});

describe('the manual clock', () => {
  test('a day ahead, retention deletes the segment it kept', async () => {
    const k = await start({ overrides: { 'kafkaiq.clock': 'manual', 'log.retention.hours': 1 } });
    const topic = topicName();
    await createTopic(k.bootstrapServers, topic);
    await produce(k.bootstrapServers, topic, ['old-1', 'old-2']);
    await k.wait({ topic, partition: 0, highWatermark: 2 });
    await expect(k.wait({ topic, partition: 0, logStartOffset: 2 }, { timeoutMs: 300 })).rejects.toThrow(/408/);
    const segments = async () => (await k.state()).topics[topic].partitions[0].segments.map((s) => s.base_offset);
    expect(await segments()).toEqual([0]);
    const clock = await k.advanceClock(24 * 3600 * 1000);
    expect(clock).toMatchObject({ clock: 'manual' });
    expect(clock.ahead_ms).toBeGreaterThanOrEqual(24 * 3600 * 1000);
    await k.wait({ topic, partition: 0, logStartOffset: 2 });
    expect(await segments()).toEqual([2]);
  });
});
