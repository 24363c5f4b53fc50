'use strict';
// One `kafkaiq serve` process on free ports, found through its ready file,
// and its control API over HTTP. Node's standard library only. Written as
// CommonJS so that require() works on every Node >= 18; index.mjs re-exports
// the same objects (one module instance, whichever way it is loaded).
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

/** The broker did not start, or the control API refused a call (the message is the broker's). */
class KafkaIQError extends Error {
  constructor(message, { status, cause } = {}) {
    super(message, cause ? { cause } : undefined);
    this.name = 'KafkaIQError';
    this.status = status;
  }
}

/** $KAFKAIQ_BIN, else `kafkaiq` on PATH. */
function findBinary() {
  if (process.env.KAFKAIQ_BIN) return process.env.KAFKAIQ_BIN;
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const candidate = path.join(dir || '.', 'kafkaiq');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not in this directory
    }
  }
  throw new KafkaIQError('kafkaiq not found: install it (make install, or the Debian package) or set KAFKAIQ_BIN');
}

// Processes started and not yet ended: a runner that exits without stopping
// them (a crash, process.exit in a test) SIGKILLs them on its way out.
const live = new Map();
let exitHandlerInstalled = false;

function killLeftovers() {
  for (const [child, dir] of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function track(child, dir) {
  if (!exitHandlerInstalled) {
    process.on('exit', killLeftovers);
    exitHandlerInstalled = true;
  }
  live.set(child, dir);
}

const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function tail(file, n = 2000) {
  try {
    return fs.readFileSync(file, 'utf8').slice(-n).trim();
  } catch {
    return '';
  }
}

function readReady(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    // serve renames the file into place whole: only "not there yet" is expected
    if (e.code === 'ENOENT') return null;
    throw e;
  }
}

const snake = (key) => key.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());

/**
 * A running `kafkaiq serve` (or, attached, one someone else started):
 * `bootstrap` ("host:port,..."), `bootstrapServers` (the same as an array),
 * `brokers` (each one's id, host, port, control_port, http), `http`
 * (broker 0's control API) and `pid`; the control API as async methods.
 */
class KafkaIQ {
  constructor(info, { child = null, dir = null, logPath = null, readyAfterMs = null } = {}) {
    this.bootstrap = info.bootstrap;
    this.bootstrapServers = info.bootstrap.split(',');
    this.brokers = info.brokers;
    this.http = info.http;
    this.pid = info.pid;
    this.dir = dir;
    this.readyAfterMs = readyAfterMs;
    this.process = child;
    this._logPath = logPath;
    this._stopped = null;
  }

  /** What the ready file said: enough for attachKafkaIQ() elsewhere. */
  info() {
    return { pid: this.pid, bootstrap: this.bootstrap, brokers: this.brokers, http: this.http };
  }

  /** What the brokers logged so far (stderr of the process). */
  log() {
    return this._logPath ? tail(this._logPath, Infinity) : '';
  }

  /**
   * One control API call to one broker's listener; resolves with the JSON
   * answer, rejects with KafkaIQError "METHOD PATH: STATUS message".
   * timeoutMs bounds the whole exchange (default 30 s).
   */
  call(method, apiPath, body, { broker = 0, timeoutMs = 30000 } = {}) {
    const target = this.brokers.find((b) => b.id === broker);
    if (!target) return Promise.reject(new KafkaIQError(`no broker ${broker} in this process`));
    const colon = target.http.lastIndexOf(':');
    const host = target.http.slice(0, colon).replace(/^\[|\]$/g, '');
    const port = Number(target.http.slice(colon + 1));
    const data = body === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(body));
    const what = `${method} ${apiPath}`;
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host,
          port,
          method,
          path: apiPath,
          agent: false,
          headers: { 'Content-Type': 'application/json', 'Content-Length': data.length },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('error', fail);
          res.on('end', () => {
            clearTimeout(timer);
            const text = Buffer.concat(chunks).toString('utf8');
            let json = null;
            try {
              json = text ? JSON.parse(text) : null;
            } catch {
              json = null;
            }
            if (res.statusCode >= 400) {
              const message = (json && json.error) || text.trim();
              reject(new KafkaIQError(`${what}: ${res.statusCode} ${message}`, { status: res.statusCode }));
            } else {
              resolve(json);
            }
          });
        },
      );
      function fail(e) {
        clearTimeout(timer);
        reject(e instanceof KafkaIQError ? e : new KafkaIQError(`${what}: ${e.message}`, { cause: e }));
      }
      const timer = setTimeout(
        () => req.destroy(new KafkaIQError(`${what}: no answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      req.on('error', fail);
      req.end(data);
    });
  }

  /**
   * Adds a fault rule (api, version, min_version, max_version, client_id,
   * topic, partition, error, delay_ms, action, times, after, probability,
   * seed) to one broker; resolves with its id.
   */
  async fault(rule, { broker = 0 } = {}) {
    return (await this.call('POST', '/api/faults', rule, { broker })).id;
  }

  /** One broker's rules, each with its matched and fired counts. */
  async faults({ broker = 0 } = {}) {
    return (await this.call('GET', '/api/faults', undefined, { broker })).faults;
  }

  /** One rule, or every rule of the broker when id is omitted; the ids removed. */
  async removeFault(id, { broker = 0 } = {}) {
    const apiPath = id === undefined || id === null ? '/api/faults' : `/api/faults/${id}`;
    return (await this.call('DELETE', apiPath, undefined, { broker })).removed;
  }

  _broker(id, op, via) {
    return this.call('POST', `/api/brokers/${id}/${op}`, undefined, { broker: via });
  }

  /** Kills a broker (no clean shutdown); resolves at once, wait() for it. */
  kill(id, { via = 0 } = {}) {
    return this._broker(id, 'kill', via);
  }

  /**
   * stop(id, {via}): one broker stops cleanly (serve --brokers N).
   * stop(): the whole process ends (SIGTERM, SIGKILL after 20 s) and its
   * data goes; calling it again resolves with the same promise.
   */
  stop(id, { via = 0 } = {}) {
    if (id !== undefined) return this._broker(id, 'stop', via);
    if (!this._stopped) this._stopped = this._shutdown();
    return this._stopped;
  }

  /** Stops a broker cleanly if it runs, then starts it on the same ports. */
  restart(id, { via = 0 } = {}) {
    return this._broker(id, 'restart', via);
  }

  /** The broker stops heartbeating and replicating, as SIGSTOP looks to the others. */
  pause(id, { via = 0 } = {}) {
    return this._broker(id, 'pause', via);
  }

  resume(id, { via = 0 } = {}) {
    return this._broker(id, 'resume', via);
  }

  /** Replication from leader `from` to follower `to`: "cut", "heal", "slow" (delayMs per fetch) or "drop". */
  link(from, to, action, { delayMs, via = 0 } = {}) {
    const body = { from, to, action };
    if (delayMs !== undefined) body.delay_ms = delayMs;
    return this.call('POST', '/api/links', body, { broker: via });
  }

  /** Replica `to` leads the partition from now on; wait({topic, partition, leader: to}) for the brokers to know it. */
  moveLeader(topic, partition, to, { via = 0 } = {}) {
    return this.call('POST', '/api/leaders', { topic, partition, to }, { broker: via });
  }

  /** Every partition's first replica leads again where it can; resolves with how many moved. */
  async electPreferred({ via = 0 } = {}) {
    return (await this.call('POST', '/api/leaders', { preferred: true }, { broker: via })).moved;
  }

  /**
   * Until a condition holds: {broker, state: "ready"|"running"|"stopped"};
   * {topic, partition} with leader ("any" or an id), isr (exactly),
   * high_watermark or log_start_offset (at least); {group, state: "Stable"}.
   * camelCase keys are accepted. Rejects with KafkaIQError (408) when the
   * bound passes.
   */
  wait(condition, { timeoutMs = 10000, via = 0 } = {}) {
    const query = Object.entries({ ...condition, timeout_ms: timeoutMs })
      .map(([k, v]) => `${encodeURIComponent(snake(k))}=${encodeURIComponent(String(v))}`)
      .join('&');
    // the HTTP bound outlasts the broker's own so its 408 is what arrives
    return this.call('GET', `/api/wait?${query}`, undefined, { broker: via, timeoutMs: timeoutMs + 30000 });
  }

  /**
   * Moves the process's clock ms ahead (started with overrides
   * {"kafkaiq.clock": "manual"}): retention, rolls, session and transaction
   * timeouts and timestamps follow it.
   */
  advanceClock(ms, { via = 0 } = {}) {
    return this.call('POST', '/api/clock', { advance_ms: ms }, { broker: via });
  }

  /** What /api/state shows for one broker. */
  state(broker = 0) {
    return this.call('GET', '/api/state', undefined, { broker });
  }

  async _shutdown() {
    if (this.process) await shutdown(this.process, this.dir);
  }
}

/** SIGTERM (a clean shutdown), SIGKILL after 20 s; then the data goes. */
async function shutdown(child, dir) {
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    const ended = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 20000);
    await ended;
    clearTimeout(timer);
  }
  live.delete(child);
  fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * Starts `kafkaiq serve` on free ports and resolves once every broker
 * serves; rejects with the log's tail when the process exits or
 * startTimeoutMs passes first.
 */
async function startKafkaIQ({ brokers = 1, overrides = {}, binary, startTimeoutMs = 30000 } = {}) {
  const bin = binary || findBinary();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-'));
  const ready = path.join(dir, 'ready.json');
  const logPath = path.join(dir, 'kafkaiq.log');
  const args = ['serve'];
  if (brokers > 1) args.push('--brokers', String(brokers));
  args.push(
    '--ready-file', ready,
    '--override', 'listeners=PLAINTEXT://127.0.0.1:0',
    '--override', 'kafkaiq.http.listener=127.0.0.1:0',
    '--override', `log.dirs=${path.join(dir, 'data')}`,
  );
  for (const [key, value] of Object.entries(overrides)) args.push('--override', `${key}=${value}`);

  const startedAt = performance.now();
  const logFd = fs.openSync(logPath, 'w');
  let child;
  try {
    child = spawn(bin, args, { stdio: ['ignore', 'ignore', logFd] });
  } finally {
    fs.closeSync(logFd);
  }
  let spawnError = null;
  child.on('error', (e) => {
    spawnError = spawnError || e;
  });
  track(child, dir);
  const giveUp = async (why) => {
    await shutdown(child, dir);
    throw new KafkaIQError(`kafkaiq serve did not start: ${why}`);
  };

  const deadline = startedAt + startTimeoutMs;
  for (;;) {
    const info = readReady(ready);
    if (info) return new KafkaIQ(info, { child, dir, logPath, readyAfterMs: performance.now() - startedAt });
    if (spawnError) return giveUp(`cannot run ${bin}: ${spawnError.message}`);
    if (child.exitCode !== null || child.signalCode !== null) {
      return giveUp(`exited (${child.exitCode ?? child.signalCode}): ${tail(logPath)}`);
    }
    if (performance.now() > deadline) return giveUp(`not ready after ${startTimeoutMs} ms: ${tail(logPath)}`);
    await delay(5);
  }
}

/**
 * A handle on a process started elsewhere (a global setup): its control API,
 * without owning it (stop() leaves it running). The info is what
 * KafkaIQ#info() gave, by default $KAFKAIQ_READY.
 */
function attachKafkaIQ(info) {
  if (!info) {
    if (!process.env.KAFKAIQ_READY) {
      throw new KafkaIQError('no KafkaIQ to attach to: $KAFKAIQ_READY is unset (is the global setup configured?)');
    }
    info = JSON.parse(process.env.KAFKAIQ_READY);
  }
  return new KafkaIQ(info);
}

function hooksFrom(options, names) {
  return names.map((name) => {
    const hook = options[name] || globalThis[name];
    if (typeof hook !== 'function') {
      throw new KafkaIQError(`${name} not found: pass it (import { ${name} } from 'vitest') or enable test globals`);
    }
    return hook;
  });
}

/**
 * Starts a KafkaIQ in beforeAll and stops it in afterAll (also when tests
 * fail); returns a function giving the running KafkaIQ. The hooks come from
 * options.beforeAll/afterAll or the globals (jest, vitest with globals).
 */
function useKafkaIQ(options = {}) {
  const { beforeAll: _b, afterAll: _a, ...start } = options;
  const [beforeAll, afterAll] = hooksFrom(options, ['beforeAll', 'afterAll']);
  let kafkaiq = null;
  beforeAll(async () => {
    kafkaiq = await startKafkaIQ(start);
  }, (start.startTimeoutMs ?? 30000) + 5000);
  afterAll(async () => {
    if (kafkaiq) await kafkaiq.stop();
  }, 25000);
  return () => {
    if (!kafkaiq) throw new KafkaIQError('KafkaIQ is not running: it starts in beforeAll, use it inside tests and hooks');
    return kafkaiq;
  };
}

/**
 * A start(options) function whose KafkaIQs are all stopped after each test
 * (also when it fails). The hook comes from options.afterEach or the globals.
 */
function useKafkaIQFactory(options = {}) {
  const [afterEach] = hooksFrom(options, ['afterEach']);
  const started = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((k) => k.stop()));
  }, 25000);
  return async (startOptions) => {
    const k = await startKafkaIQ(startOptions);
    started.push(k);
    return k;
  };
}

module.exports = {
  KafkaIQ,
  KafkaIQError,
  attachKafkaIQ,
  findBinary,
  startKafkaIQ,
  useKafkaIQ,
  useKafkaIQFactory,
};
