// kern-sandbox/cluster (README, "Many machines"): kern-sandbox workers on
// BullMQ and Redis, and a client with the local API's shape. bullmq is an
// optional peer dependency (`npm install bullmq@^5`).
import type {
  SandboxOptions,
  RunCodeOptions,
  CallOptions,
  ExecutionResult,
  ReadFileOptions,
  FileInfo,
} from "./index";

/**
 * What BullMQ takes as a connection: ioredis options (`{ path }`, `{ host, port, password,
 * username, tls, db }`) or an ioredis client (duplicated for the cluster's own connections).
 */
export type RedisConnection = Record<string, unknown> | { duplicate(opts?: object): unknown };

/** A worker's policy: a job asking for more is refused (ERR_SANDBOX_POLICY_REFUSED), never clamped. */
export interface WorkerPolicy {
  /** Allowed images; `null`: any image kern has. Default `["python:3.12-slim"]`. */
  images?: string[] | null;
  /** Default 2048; `null`: no cap asked (then `memoryMb: null` is allowed). */
  maxMemoryMb?: number | null;
  /** Default `null`: no cap asked of a job. */
  maxCpus?: number | null;
  /** Default 300 (session and call deadlines). */
  maxTimeoutS?: number | null;
  /** Default 64 MiB. */
  maxOutputBytes?: number | null;
  /** Jobs may carry `env` (its values then sit in Redis). Default false. */
  env?: boolean;
  /** Jobs may ask for `network`, `egressAllow` and `setup`. Default false. */
  network?: boolean;
  /** Jobs may ask for host `mounts`. Default false. */
  mounts?: boolean;
}

/** Test and tuning knobs of a worker's timers (milliseconds). */
export interface WorkerTiming {
  /** Heartbeat period; a worker is dead 3 periods after its last. Default 2000. */
  heartbeatMs?: number;
  /** BullMQ's lockDuration: a dead worker's job is seen stalled after it. Default 10000. */
  lockDurationMs?: number;
  /** BullMQ's stalledInterval. Default 5000. */
  stalledIntervalMs?: number;
  /** A session idle this long is closed. Default 3600. */
  sessionIdleS?: number;
}

export interface WorkerOptions {
  connection: RedisConnection;
  /** Calls at once; default from the cores and memory. */
  capacity?: number;
  /** Sessions opened ahead for one-shot calls (each used once); default capacity / 2, at least 1. */
  warm?: number;
  policy?: WorkerPolicy;
  /** Key prefix of the cluster (default "kern-sandbox"). */
  prefix?: string;
  /** Where run directories live (default `$TMPDIR/kern-sandbox-worker-UID`). */
  stateDir?: string;
  id?: string;
  timing?: WorkerTiming;
}

export interface ClusterWorker {
  readonly id: string;
  readonly capacity: number;
  readonly policy: Required<WorkerPolicy>;
  readonly runDir: string;
  /** Run directories of dead workers this start removed. */
  readonly removedRunDirs: string[];
  readonly running: number;
  readonly sessions: number;
  /** Stops taking jobs, lets running ones finish up to graceS (default 30), leaves nothing. */
  close(opts?: { graceS?: number }): Promise<void>;
}

/** Starts a worker in this process (it points the process's TMPDIR at its run directory). */
export function startWorker(opts: WorkerOptions): Promise<ClusterWorker>;

export interface ConnectOptions {
  connection: RedisConnection;
  /** Calls waiting in the shared queue past which a call rejects ERR_SANDBOX_QUEUE_FULL. Default 1000. */
  maxQueued?: number;
  /** Default time a call may wait in the queue (ERR_SANDBOX_QUEUE_TIMEOUT); `null`: no limit. */
  queueTimeoutS?: number | null;
  prefix?: string;
  timing?: { pollMs?: number; viewMs?: number; redisLostS?: number };
}

/** Options a cluster call adds to the local ones. */
export interface QueueOptions {
  /** This call's own limit on waiting in the queue; wins over connect()'s. */
  queueTimeoutS?: number | null;
}

export interface WorkerInfo {
  id: string;
  pid: number;
  host: string;
  capacity: number;
  running: number;
  sessions: number;
  policy: Required<WorkerPolicy>;
  ts: number;
}

/** A session on one worker of the cluster (the one that opened it). */
export interface ClusterSandbox extends AsyncDisposable {
  /** The worker this session is pinned to (null before open()). */
  readonly workerId: string | null;
  readonly sessionId: string | null;
  open(opts?: { signal?: AbortSignal }): Promise<this>;
  close(): Promise<void>;
  runCode(code: string, opts?: RunCodeOptions & QueueOptions): Promise<ExecutionResult>;
  run(argv: string[], opts?: CallOptions & QueueOptions): Promise<ExecutionResult>;
  writeFile(path: string, data: string | Buffer | Uint8Array): Promise<void>;
  readFile(path: string, opts?: ReadFileOptions): Promise<Buffer>;
  listFiles(subdir?: string): Promise<FileInfo[]>;
}

export interface Cluster {
  runCode(code: string, opts?: SandboxOptions & RunCodeOptions & QueueOptions): Promise<ExecutionResult>;
  run(argv: string[], opts?: SandboxOptions & CallOptions & QueueOptions): Promise<ExecutionResult>;
  withSandbox<T>(fn: (sbx: ClusterSandbox) => Promise<T>): Promise<T>;
  withSandbox<T>(opts: SandboxOptions, fn: (sbx: ClusterSandbox) => Promise<T>): Promise<T>;
  readonly Sandbox: new (opts?: SandboxOptions) => ClusterSandbox;
  workers(): WorkerInfo[];
  close(): Promise<void>;
}

export function connect(opts: ConnectOptions): Promise<Cluster>;

export const DEFAULT_POLICY: Readonly<Required<WorkerPolicy>>;
export function normalizePolicy(policy?: WorkerPolicy): Required<WorkerPolicy>;
export function defaultCapacity(): number;
