/** One broker of the process, as its ready file tells it. */
export interface KafkaIQBroker {
  id: number;
  host: string;
  port: number;
  control_port: number;
  /** Its control API, "host:port". */
  http: string;
}

/** What `kafkaiq serve` announced: enough for attachKafkaIQ() elsewhere. */
export interface KafkaIQInfo {
  pid: number;
  /** "host:port,host:port,..." */
  bootstrap: string;
  brokers: KafkaIQBroker[];
  /** Broker 0's control API, "host:port". */
  http: string;
}

export interface StartOptions {
  /** How many brokers in the one process (default 1). */
  brokers?: number;
  /** Broker settings, passed as --override key=value. */
  overrides?: Record<string, string | number | boolean>;
  /** The kafkaiq binary (default $KAFKAIQ_BIN, else kafkaiq on PATH). */
  binary?: string;
  /** Default 30000. */
  startTimeoutMs?: number;
}

/** A fault rule for POST /api/faults. */
export interface FaultRule {
  api?: string | number;
  version?: number;
  min_version?: number;
  max_version?: number;
  client_id?: string;
  topic?: string;
  partition?: number;
  /** Kafka's error name (NOT_LEADER_OR_FOLLOWER) or code. */
  error?: string | number;
  delay_ms?: number;
  action?: 'error' | 'delay' | 'disconnect' | 'drop_response';
  times?: number;
  after?: number;
  probability?: number;
  seed?: number;
}

export interface Fault extends FaultRule {
  id: number;
  matched: number;
  fired: number;
}

/** Conditions for GET /api/wait; camelCase keys are accepted too. */
export type WaitCondition =
  | { broker: number; state: 'ready' | 'running' | 'stopped' }
  | {
      topic: string;
      partition: number;
      leader?: 'any' | number;
      isr?: number;
      high_watermark?: number;
      highWatermark?: number;
      log_start_offset?: number;
      logStartOffset?: number;
    }
  | { group: string; state: 'Stable' | string };

export interface WaitResult {
  condition: string;
  met: boolean;
  waited_ms: number;
  value: unknown;
}

export interface BrokerOpResult {
  broker: number;
  op: 'kill' | 'stop' | 'restart' | 'pause' | 'resume';
  queued: boolean;
}

export interface ClockResult {
  clock: 'manual' | 'system';
  ahead_ms: number;
  wall_ms: number;
  mono_ms: number;
}

export interface Via {
  /** Whose control API takes the call (default 0). */
  via?: number;
}

export interface OnBroker {
  /** Which broker's rules (default 0). */
  broker?: number;
}

/** The broker did not start, or the control API refused a call. */
export class KafkaIQError extends Error {
  /** The HTTP status of a refused call. */
  status?: number;
}

export class KafkaIQ {
  readonly bootstrap: string;
  readonly bootstrapServers: string[];
  readonly brokers: KafkaIQBroker[];
  readonly http: string;
  readonly pid: number;
  /** The temporary directory (data and log); null when attached. */
  readonly dir: string | null;
  /** From spawn to the ready file; null when attached. */
  readonly readyAfterMs: number | null;
  info(): KafkaIQInfo;
  /** What the brokers logged so far. */
  log(): string;
  call(
    method: string,
    path: string,
    body?: unknown,
    options?: { broker?: number; timeoutMs?: number },
  ): Promise<any>;
  fault(rule: FaultRule, options?: OnBroker): Promise<number>;
  faults(options?: OnBroker): Promise<Fault[]>;
  removeFault(id?: number | null, options?: OnBroker): Promise<number[]>;
  kill(id: number, options?: Via): Promise<BrokerOpResult>;
  /** With no id: ends the process (idempotent). With an id: stops that broker cleanly. */
  stop(): Promise<void>;
  stop(id: number, options?: Via): Promise<BrokerOpResult>;
  restart(id: number, options?: Via): Promise<BrokerOpResult>;
  pause(id: number, options?: Via): Promise<BrokerOpResult>;
  resume(id: number, options?: Via): Promise<BrokerOpResult>;
  link(
    from: number,
    to: number,
    action: 'cut' | 'heal' | 'slow' | 'drop',
    options?: Via & { delayMs?: number },
  ): Promise<unknown>;
  moveLeader(
    topic: string,
    partition: number,
    to: number,
    options?: Via,
  ): Promise<{ topic: string; partition: number; leader: number }>;
  electPreferred(options?: Via): Promise<number>;
  wait(condition: WaitCondition, options?: Via & { timeoutMs?: number }): Promise<WaitResult>;
  advanceClock(ms: number, options?: Via): Promise<ClockResult>;
  state(broker?: number): Promise<any>;
}

export function startKafkaIQ(options?: StartOptions): Promise<KafkaIQ>;

/** A handle on a process started elsewhere; by default from $KAFKAIQ_READY. */
export function attachKafkaIQ(info?: KafkaIQInfo): KafkaIQ;

/** $KAFKAIQ_BIN, else kafkaiq on PATH; throws KafkaIQError when neither. */
export function findBinary(): string;

type Hook = (fn: () => unknown, timeout?: number) => unknown;

/** Starts in beforeAll, stops in afterAll (hooks passed or global); returns the running KafkaIQ's getter. */
export function useKafkaIQ(options?: StartOptions & { beforeAll?: Hook; afterAll?: Hook }): () => KafkaIQ;

/** A start function whose KafkaIQs are stopped after each test (afterEach passed or global). */
export function useKafkaIQFactory(options?: { afterEach?: Hook }): (options?: StartOptions) => Promise<KafkaIQ>;
