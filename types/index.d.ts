// TypeScript declarations for kern-sandbox.
//
// kern-sandbox drives the `kern` binary to execute untrusted or semi-trusted code (typically
// code written by an LLM or an agent) inside a short-lived, locally created kernel sandbox.
// There is no daemon and no cloud service: each call starts a new box on this machine.
//
// Two kinds of failure are kept apart throughout this API:
//   * mistakes by the caller (bad arguments, unsafe mounts, `kern` missing, a session that was
//     never opened) are THROWN as `SandboxError` (or its subclass `MountRefused`);
//   * things the sandbox did to the workload (deadline hit, seccomp block, OOM kill, box failed
//     to start) are RETURNED as data in `ExecutionResult.fault` and never thrown.
// Host filesystem failures in the workspace helpers are thrown as `SandboxError`, as 0.1.1 threw
// them, carrying Node's system-error fields `code`, `errno`, `syscall` and `path` (e.g.
// `code === "ENOENT"`), so they can be told apart as an fs error would be.

import type { EventEmitter } from "events";
import type { Readable, Writable } from "stream";

/**
 * The category of a sandbox-level event recorded in {@link ExecutionResult.fault}.
 *
 * - `"timeout"`: the call ran past `timeoutS` and the binding tore the box down (or kern's own
 *   backstop deadline, a few seconds later, reaped it with SIGTERM).
 * - `"escape_blocked"`: the seccomp filter rejected a system call and the workload died of
 *   SIGSYS (exit status 159).
 * - `"killed"`: the box received SIGKILL (exit status 137); in practice this is nearly always the
 *   cgroup out-of-memory killer enforcing `memoryMb`.
 * - `"startup_failed"`: kern itself could not bring the box up (unknown image, pull failure,
 *   namespace/cgroup setup error, ...); detected from kern's own diagnostics, not the workload's.
 *
 * These are reported, never thrown.
 */
export type SandboxFaultType = "timeout" | "escape_blocked" | "killed" | "startup_failed";

/**
 * A sandbox-level event attached to a result. Present only when the sandbox intervened; a
 * workload that simply exits non-zero produces no fault.
 */
export interface SandboxFault {
  /** Which kind of intervention happened; see {@link SandboxFaultType} for when each is used. */
  type: SandboxFaultType;
  /** Human-readable explanation; for `"startup_failed"`, an excerpt of kern's diagnostics. */
  message: string;
}

/**
 * Addition to 0.1.1: the run-time shape of a `"killed"` fault. The fault type union stays the
 * 0.1.1 one (no `"oom"` type, so exhaustive switches over {@link SandboxFaultType} keep
 * compiling); a `"killed"` fault says in `oom` whether the memory cap explains it. Narrow with
 * {@link isKilledFault}.
 */
export interface KilledFault extends SandboxFault {
  type: "killed";
  /**
   * `true` when kern reported the memory cap as enforced (its started-fd cap byte is 1) and the
   * workload died of SIGKILL outside this package's own deadline: the out-of-memory killer.
   * `false` otherwise (no cap set, a cap this host does not enforce, or the box killed because
   * its session closed). kern's exit status cannot tell a workload's own `exit(137)` from a
   * SIGKILL, so with an enforced cap such an exit also reads as `true`.
   */
  oom: boolean;
}

/** Addition to 0.1.1: whether `fault` is a `"killed"` fault, typed with its `oom` flag. */
export function isKilledFault(fault: SandboxFault | null | undefined): fault is KilledFault;

/**
 * Addition to 0.1.1: what one call's processes used, from the `waitid` rusage of kern: kern
 * itself plus every box process it waited for (the workload and whatever it forked that was
 * reaped inside the box).
 */
export interface ResourceUsage {
  /** CPU time in user mode, in milliseconds (kern's own share included, about 1-10 ms). */
  cpuUserMs: number;
  /** CPU time in the kernel, in milliseconds (kern's box set-up included). */
  cpuSystemMs: number;
  /**
   * Peak resident set size in KiB of the largest of those processes. kern starts as a
   * vfork-style clone of this Node process, and Linux carries a process's peak RSS across exec,
   * so this is never below the Node process's own peak at the time the box started: a value at
   * that floor means only that the box stayed below it.
   */
  maxRssKb: number;
}

/** Describes one regular file inside the workspace. */
export interface FileInfo {
  /** Location of the file relative to the workspace root, using `/` as separator. */
  path: string;
  /** File size in bytes at the time it was observed. */
  size: number;
  /**
   * `"created"` when the file did not exist before the call, `"modified"` when its size or
   * modification time changed during the call. `listFiles()` reports every file as `"created"`.
   */
  change: "created" | "modified";
}

/**
 * What one `runCode()` / `run()` call produced.
 *
 * Read `fault` to learn whether the sandbox stepped in; read `exitCode`, `stdout` and `stderr` to
 * learn what the workload itself did. `success` combines the two.
 */
export class ExecutionResult {
  /** Captured standard output, decoded as UTF-8, holding at most `maxOutputBytes` bytes. */
  stdout: string;
  /** Captured standard error, decoded as UTF-8, holding at most `maxOutputBytes` bytes. */
  stderr: string;
  /**
   * Exit status of the process in the box. A death by signal is reported shell-style as
   * 128 + signal number (e.g. 137 for SIGKILL, 159 for SIGSYS); -1 if it could not be determined.
   */
  exitCode: number;
  /** Wall-clock time the box took, in milliseconds, from launch until it exited. */
  durationMs: number;
  /**
   * `null` when the sandbox did not intervene; then a non-zero `exitCode` is the workload's own
   * doing. Otherwise `{ type, message }` where `type` is one of `"timeout"`, `"escape_blocked"`,
   * `"killed"` or `"startup_failed"` (see {@link SandboxFaultType}).
   */
  fault: SandboxFault | null;
  /** Workspace files this call created or changed (the `.deps` directory is not included). */
  files: FileInfo[];
  /**
   * `true` if stdout or stderr produced more than `maxOutputBytes` bytes; the excess was read
   * and thrown away so the box never stalls on a full pipe.
   */
  truncated: boolean;
  /** `true` only when `exitCode` is 0 and `fault` is `null`. */
  readonly success: boolean;
  /**
   * Addition to 0.1.1: the CPU time and peak memory of the call's processes (see
   * {@link ResourceUsage} for exactly what is counted). `null` only when no exit status could be
   * taken: another part of this process reaped kern first, or kern could not be reaped within
   * 3 s of being killed.
   */
  usage: ResourceUsage | null;
  /**
   * Addition to 0.1.1: which caps kern reported in force for this box (from its started-fd cap
   * byte), so that kern's notices about them never need to reach `stderr`. `null` when kern
   * failed before the box existed and reported nothing.
   */
  limits: ResourceLimits | null;
  /**
   * Addition to 0.1.1: the rich results of a Python call, in the order they were made: each
   * `display(obj)` call (a builtin in the box), the value of a trailing expression (never
   * `None`), and each matplotlib figure still open at the end (as PNG; closed afterwards). `[]`
   * for other languages, with `results: false`, and when nothing was displayed. Together they
   * hold at most `maxOutputBytes` bytes; a result that does not fit is dropped whole and
   * `truncated` is `true`.
   */
  results: Result[];
  /**
   * Addition to 0.1.1: what the `onStdout`/`onStderr` callbacks did not get, per stream: the
   * chunks (and their bytes) dropped because the callback fell more than 8 MiB behind. `stdout`
   * and `stderr` still hold that output. Zeros when nothing was missed or nothing streamed.
   */
  missedOutput: { stdout: MissedOutput; stderr: MissedOutput };
}

/** Addition to 0.1.1: output a streaming callback did not get ({@link ExecutionResult.missedOutput}). */
export interface MissedOutput {
  chunks: number;
  bytes: number;
}

/**
 * Addition to 0.1.1: one rich result of a Python call, as Jupyter's display data. `data` maps
 * each MIME type to a string (binary formats such as `image/png` base64-encoded); the getters
 * read it. `text` (`text/plain`, the object's `repr()`) is always there.
 */
export class Result {
  /** MIME type -> content: text as it is, binary formats base64-encoded. */
  data: Record<string, string>;
  /** `text/plain`: the object's `repr()`. */
  readonly text: string | null;
  /** `text/html` (from `_repr_html_`). */
  readonly html: string | null;
  /** `text/markdown` (from `_repr_markdown_`). */
  readonly markdown: string | null;
  /** `image/svg+xml` (from `_repr_svg_`). */
  readonly svg: string | null;
  /** `text/latex` (from `_repr_latex_`). */
  readonly latex: string | null;
  /** `application/json` as JSON text (from `_repr_json_`); `JSON.parse` it for the value. */
  readonly json: string | null;
  /** `image/png`, decoded (from `_repr_png_`, or a matplotlib figure). */
  readonly png: Buffer | null;
  /** `image/jpeg`, decoded (from `_repr_jpeg_`). */
  readonly jpeg: Buffer | null;
  /**
   * The MIME types present, as in 0.1.23: `"text/plain"`, `"text/html"`, `"text/markdown"`,
   * `"image/svg+xml"`, `"image/png"`, `"image/jpeg"`, `"text/latex"`, `"application/json"` in
   * that order, then any other MIME type.
   */
  formats(): string[];
  /**
   * {@link formats} by short name (`"text"`, `"html"`, `"markdown"`, `"svg"`, `"png"`, `"jpeg"`,
   * `"latex"`, `"json"`); a MIME type without one as it is.
   */
  formatNames(): string[];
}

/**
 * Addition to 0.1.1: the caps of one box as kern reported them.
 */
export interface ResourceLimits {
  /**
   * `"enforced"`: the memory cap binds (a SIGKILL is then the OOM killer's, see
   * {@link KilledFault}); `"not_enforced"`: a cap was asked for (`memoryMb`, 512 by default) but
   * this host does not enforce it, the box's memory is unbounded (the first such box of a process
   * also emits one `KernSandboxWarning`, code `KERN_SANDBOX_MEMORY_NOT_ENFORCED`); `"none"`: no
   * cap was asked for (`memoryMb: null`).
   */
  memory: "enforced" | "not_enforced" | "none";
}

/**
 * Addition to 0.1.1: the rejection of a call, `open()` or one-shot {@link runCode} whose
 * `signal` was aborted, shaped as Node's own APIs shape theirs. The box was killed through the
 * same path as a timeout, and nothing of it outlives the rejection.
 */
export class AbortError extends Error {
  /** Always `"AbortError"`. */
  name: "AbortError";
  /** Always `"ABORT_ERR"`. */
  code: "ABORT_ERR";
  /** The signal's `reason`. */
  cause: unknown;
  /** What the box had written to stdout before it was killed (within `maxOutputBytes`); `""` if none ran. */
  stdout: string;
  /** What the box had written to stderr before it was killed (within `maxOutputBytes`); `""` if none ran. */
  stderr: string;
}

/**
 * Thrown for caller and configuration mistakes: an invalid option or argument, a session used
 * before `open()`, a workspace path that leaves the workspace, snapshot/restore used without
 * opting in, a failing `setup` command, or the `kern` binary not being found (looked up via
 * `$KERN_BIN`, then `PATH`). `name` is `"SandboxError"`.
 */
export class SandboxError extends Error {
  /**
   * Addition to 0.1.1: what went wrong, stable across releases: one of {@link SandboxErrorCode},
   * or, when a host system call failed (workspace I/O, snapshot, restore, opening `kern` or the
   * workspace), that system error's code (`"ENOENT"`, `"EACCES"`, `"ELOOP"`, `"EFBIG"`, ...),
   * with its `errno`, `syscall` and `path` beside it. Set on every error the package throws.
   */
  code?: SandboxErrorCode | (string & {});
  /** Addition to 0.1.1: with a system error's `code`, its number (negative, as Node's). */
  errno?: number;
  /** Addition to 0.1.1: with a system error's `code`, the call that failed. */
  syscall?: string;
  /** Addition to 0.1.1: with a system error's `code`, the path it concerned, if any. */
  path?: string;
}

/**
 * Addition to 0.1.1: the package's own {@link SandboxError} codes (README, "Errors").
 * - `ERR_SANDBOX_INVALID_OPTION`: an option (of a Sandbox, a call, a kernel, readFile) has a bad type or value
 * - `ERR_SANDBOX_INVALID_ARG`: an argument is not what the method takes (code not a string, an argv that is no array of strings, a NUL byte, a bad count)
 * - `ERR_SANDBOX_INVALID_PATH`: a workspace path is refused: absolute, leaving the workspace, too long, a directory
 * - `ERR_SANDBOX_INVALID_WORKSPACE`: the workspace directory cannot be used as one
 * - `ERR_SANDBOX_MOUNT_REFUSED`: a mount (or a workspace) was judged unsafe (MountRefused)
 * - `ERR_SANDBOX_KERN_NOT_FOUND`: no usable kern binary: not on PATH, or KERN_BIN is not an executable file
 * - `ERR_SANDBOX_NOT_OPEN`: the Sandbox was never opened
 * - `ERR_SANDBOX_CLOSED`: the Sandbox is closed (or was closed while the call waited)
 * - `ERR_SANDBOX_SETUP_FAILED`: the Sandbox's setup command failed
 * - `ERR_SANDBOX_KERNEL_CLOSED`: the kernel is closed
 * - `ERR_SANDBOX_KERNEL_DEAD`: the kernel could not start, or died (restart() gives a fresh one)
 * - `ERR_SANDBOX_NO_CHECKPOINT`: rollback(n) asks for more states than the kernel holds
 * - `ERR_SANDBOX_NOT_SUPPORTED`: not available here: snapshot without its opt-in, rollback on a shared kernel, kernel() without the in-box init
 * - `ERR_SANDBOX_SNAPSHOT_REFUSED`: a snapshot or an archive to restore was refused (when no system code says why)
 * - `ERR_SANDBOX_PORT_UNAVAILABLE`: a published port could not be had: its host port was taken three times over (spawn with ports)
 * - `ERR_SANDBOX_PORT_NOT_READY`: no listener answered through a published port in time, or the process exited first (waitForPort)
 * - `ERR_SANDBOX_MISSING_PEER`: an integration's framework (an optional peer dependency) is not installed: the message names the npm install command
 * - `ERR_SANDBOX_POLICY_REFUSED`: a cluster call asks for what the workers' policy forbids (refused, never clamped)
 * - `ERR_SANDBOX_HOST_LOST`: the cluster worker running the call (or the session's worker) died or shut down, or Redis stayed unreachable
 * - `ERR_SANDBOX_JOB_LOST`: the call's job vanished from Redis (a restart without persistence)
 * - `ERR_SANDBOX_QUEUE_FULL`: the cluster's queue already holds maxQueued calls
 * - `ERR_SANDBOX_QUEUE_TIMEOUT`: the call waited in the cluster's queue longer than its queueTimeoutS
 */
export type SandboxErrorCode =
  | "ERR_SANDBOX_INVALID_OPTION"
  | "ERR_SANDBOX_INVALID_ARG"
  | "ERR_SANDBOX_INVALID_PATH"
  | "ERR_SANDBOX_INVALID_WORKSPACE"
  | "ERR_SANDBOX_MOUNT_REFUSED"
  | "ERR_SANDBOX_KERN_NOT_FOUND"
  | "ERR_SANDBOX_NOT_OPEN"
  | "ERR_SANDBOX_CLOSED"
  | "ERR_SANDBOX_SETUP_FAILED"
  | "ERR_SANDBOX_KERNEL_CLOSED"
  | "ERR_SANDBOX_KERNEL_DEAD"
  | "ERR_SANDBOX_NO_CHECKPOINT"
  | "ERR_SANDBOX_NOT_SUPPORTED"
  | "ERR_SANDBOX_SNAPSHOT_REFUSED"
  | "ERR_SANDBOX_PORT_UNAVAILABLE"
  | "ERR_SANDBOX_PORT_NOT_READY"
  | "ERR_SANDBOX_MISSING_PEER"
  | "ERR_SANDBOX_POLICY_REFUSED"
  | "ERR_SANDBOX_HOST_LOST"
  | "ERR_SANDBOX_JOB_LOST"
  | "ERR_SANDBOX_QUEUE_FULL"
  | "ERR_SANDBOX_QUEUE_TIMEOUT";

/**
 * Thrown (a {@link SandboxError} subclass) when a requested bind mount or workspace is judged
 * unsafe: a sensitive host source such as `/`, `/etc`, `/root`, `/proc`, `/sys`, `/dev`, the
 * Docker socket or your home directory; a relative or non-existent source; a target that is not
 * absolute, contains `..`, or would cover an essential box path; or a mode other than
 * `"ro"`/`"rw"`. `name` is `"MountRefused"`.
 */
export class MountRefused extends SandboxError {}

/**
 * Where and how a host path appears inside the box: either just the absolute target path
 * (mounted read-write), or a `[target, mode]` pair where mode `"ro"` makes it read-only.
 */
export type MountSpec = string | [target: string, mode: "ro" | "rw"];

/**
 * Configuration for a {@link Sandbox}, {@link withSandbox} or the one-shot {@link runCode}.
 * Every field is optional and the defaults are the strict ones; any option that loosens
 * isolation says so explicitly below.
 */
export interface SandboxOptions {
  /** Container image (OCI reference) the box is started from. Defaults to `"python:3.12-slim"`. */
  image?: string;
  /**
   * A shell command executed a single time during `open()`, inside a separate short-lived box
   * that DOES have network access (relaxes isolation for that one box only). Meant for
   * installing dependencies, e.g. `"pip install pandas"`; a leading `pip install` is redirected
   * into `<workspace>/.deps`, which later Python runs find on `PYTHONPATH`. No default (no setup
   * step). A non-zero exit makes `open()` throw {@link SandboxError}.
   */
  setup?: string;
  /**
   * An absolute host directory used as the persistent workspace (mounted at `/workspace`), which
   * is left in place by `close()`. When omitted (the default), a private temporary directory is
   * created by `open()` and removed by `close()`. Sensitive locations are refused with
   * {@link MountRefused}.
   */
  workspace?: string;
  /**
   * Memory limit for each box, in mebibytes, enforced by cgroup v2. Defaults to 512. Passing
   * `null` lifts the binding's limit (kern's own default applies), which relaxes the cap.
   */
  memoryMb?: number | null;
  /**
   * CPU limit for each box, in cores (fractions allowed, e.g. 0.5). Defaults to `null`, meaning
   * no CPU limit is applied.
   */
  cpus?: number | null;
  /**
   * Maximum number of tasks (processes plus threads) a box may hold, which defuses fork bombs.
   * Defaults to 256. `null` removes the binding's limit (relaxes the cap).
   */
  pids?: number | null;
  /**
   * Deadline for every `runCode()`/`run()` call, in seconds; must be greater than 0 or the
   * constructor throws {@link SandboxError}. Defaults to 30. The binding itself kills the box and
   * its process group when the deadline passes and reports a `"timeout"` fault. The `setup` box
   * gets at least 120 seconds.
   */
  timeoutS?: number;
  /**
   * RELAXES ISOLATION: when `true`, every box shares the host's network. Defaults to `false`
   * (no network at all, except for the `setup` box). Cannot be combined with `egressAllow`.
   */
  network?: boolean;
  /**
   * RELAXES ISOLATION (partially): lets `runCode()`/`run()` reach only the listed bare hostnames,
   * e.g. `["pypi.org", "files.pythonhosted.org"]`, through kern's filtering proxy from an isolated
   * network namespace. Defaults to none (no network). Each entry must be a plain domain name (no
   * scheme, port, path, wildcard or whitespace), else {@link SandboxError}; combining it with
   * `network: true` also throws. The `setup` box is unaffected and keeps full network access.
   */
  egressAllow?: string[];
  /**
   * RELAXES ISOLATION: additional host directories/files bound into every box, keyed by absolute
   * host source path, e.g. `{ "/data/in": "/in" }` or `{ "/data/in": ["/in", "ro"] }` (see
   * {@link MountSpec}). Defaults to no extra mounts. Unsafe sources or targets are rejected
   * with {@link MountRefused} by the constructor.
   */
  mounts?: Record<string, MountSpec>;
  /**
   * Named kern resource profiles to attach, e.g. `["vcpu:heavy", "vgpio:leds", "vdisk:scratch"]`.
   * Each token selects a `[[vcpu]]`, `[[vgpio]]` or `[[vdisk]]` entry from
   * `~/.config/kern/kern.toml` (a CPU/memory slice, a set of hardware devices, or a size-limited
   * scratch disk); attaching a `vgpio:` profile grants the box that hardware. Defaults to none.
   * A token that is not exactly `vcpu:|vgpio:|vdisk:` plus an alphanumeric name throws
   * {@link SandboxError}, so it cannot be used to inject extra kern flags.
   */
  profiles?: string[];
  /**
   * Additional environment variables for the workload. Defaults to none (only `PYTHONPATH`
   * pointing at `/workspace/.deps` is set). The variables are handed to kern through an
   * inherited file descriptor, never on the command line (where `ps` could show them) and never
   * as a file in the workspace. Names or values containing a newline or NUL byte throw
   * {@link SandboxError}.
   */
  env?: Record<string, string>;
  /**
   * Limit on how much of stdout and of stderr (each counted separately) is kept, in bytes.
   * Defaults to 64 MiB (67108864). Output beyond it is drained and discarded, setting
   * `truncated`. Must be greater than 0.
   */
  maxOutputBytes?: number;
  /**
   * When `true` (the default) resource caps are strictly enforced by placing the box in its own
   * systemd scope (around 6 ms of extra start-up). `false` relaxes this to best-effort
   * enforcement for a faster start (around 3 ms).
   */
  enforceLimits?: boolean;
  /**
   * When `true`, the `.deps` directory installed by `setup` is mounted read-only in the boxes
   * that run your code, so one run cannot tamper with packages a later run imports. Defaults to
   * `false` (dependencies stay writable).
   */
  depsReadonly?: boolean;
  /**
   * Optional live view of stdout: invoked with each `Buffer` chunk as it is read. Best-effort:
   * the box is never slowed down for the callback, so a slow callback can miss chunks, but
   * `result.stdout` still contains everything up to `maxOutputBytes`. Exceptions thrown by the
   * callback are ignored. Defaults to none.
   */
  onStdout?: (chunk: Buffer) => void;
  /**
   * Optional live view of stderr, with the same best-effort behaviour as `onStdout`:
   * chunks may be missed by a slow callback, `result.stderr` stays complete up to the cap, and a
   * throwing callback is ignored. Defaults to none.
   */
  onStderr?: (chunk: Buffer) => void;
  /**
   * Addition to 0.1.1: capabilities dropped in every box, the `setup` box included (kern's
   * `--cap-drop`). Names as in `"NET_RAW"` or `"CAP_NET_RAW"` (any case), or `"ALL"`. Defaults
   * to `["ALL"]`: every box runs with no capabilities. `[]` keeps kern's own default set (0.1.1's
   * behaviour). A string instead of an array, or an unknown name, throws {@link SandboxError}.
   */
  capDrop?: string[];
  /**
   * Addition to 0.1.1: kern's `--security-profile`; `"untrusted"` (the only one kern has) adds
   * its seccomp allowlist, drops every capability and mounts the root read-only. Defaults to
   * `null` (none); anything else throws {@link SandboxError}.
   */
  securityProfile?: "untrusted" | null;
  /**
   * Addition to 0.1.1: an AppArmor profile name for every box (kern's `--apparmor`): 1-128 of
   * letters, digits, `_`, `.`, `-`, not starting with `-`. Defaults to `null` (none).
   */
  apparmor?: string | null;
  /**
   * Addition to 0.1.1: when `true`, kern refuses to start a box whose memory and pids caps
   * would not be enforced on this host; the call then returns a `"startup_failed"` fault whose
   * message is kern's reason (and `open()` with `setup` throws). Defaults to `false`.
   */
  requireLimits?: boolean;
  /**
   * Addition to 0.1.1: when `false`, the workspace is not watched or scanned for changes, and
   * every result's `files` is `[]` (saves the scan on big workspaces). Read by `open()`.
   * Defaults to `true`.
   */
  trackFiles?: boolean;
  /**
   * Addition to 0.1.1: how many boxes to keep started ahead of the calls, 0-16 (an integer).
   * Each serves one call with the session's options as they were when it started (a call
   * with other options starts its own box); the pool refills after each call with the kind
   * of box used last (Python before any call) and empties after 2 minutes without a call.
   * Read at each call. Defaults to `1` (the one-shot {@link runCode}: `0`).
   */
  prewarm?: number;
  /**
   * Addition to 0.1.1: whether Python calls collect rich results ({@link ExecutionResult.results}).
   * `false` runs the code as exactly `python3 -c CODE`, as 0.1.1 did, with `results: []`. Read at
   * each call; a call's own `results` option wins. Defaults to `true`.
   */
  results?: boolean;
}

/**
 * Addition to 0.1.1: per-call options of `runCode()` and `run()`. A field left out (or
 * `undefined`/`null`) keeps the session's value, except that `onStdout: null` / `onStderr: null`
 * turn streaming off for this call.
 */
/** Addition to 0.1.1: the options of {@link Sandbox.spawn}. */
export interface SpawnOptions {
  /** `true` (the default): `proc.stdin` is a `Writable` to the workload's stdin; `false`: none,
   * stdin reads EOF at once. */
  stdin?: boolean;
  /** The deadline, seconds (default the session's `timeoutS`): past it the box is killed and the
   * result's fault is `timeout`. `null`: none; the process lives until `kill()`, its `signal`,
   * `close()` or Node's exit. */
  timeoutS?: number | null;
  /** Aborting it kills the box; `wait()` then rejects with an `AbortError`. */
  signal?: AbortSignal;
  /** The working directory, relative to the workspace (default its top). One that leaves the
   * workspace is a `SandboxError` (`ERR_SANDBOX_INVALID_PATH`). */
  cwd?: string;
  /** Variables added to the session's `env` for this process. */
  env?: Record<string, string>;
  /** Bytes of each stream kept that no reader has taken (default 1 MiB): past it the oldest are
   * dropped and counted in `droppedBytes`; the box is never stalled. Also the tail `wait()`
   * shows. */
  keepBytes?: number;
  /** Box TCP ports to publish on the host, each at a free host port the package picks (retried
   * when taken in between): {@link BoxProcess.ports}. The box keeps no network otherwise. Refused
   * with the session's `network: true`. */
  ports?: number[];
  /** The host address the ports are published on: `"127.0.0.1"` (the default). `"0.0.0.0"`
   * publishes them on every interface, reachable from the network: it relaxes isolation. */
  publishHost?: string;
  /** A terminal: `true` (80 x 24) or its size. stdin and stdout go through a terminal in the box
   * (stderr joins stdout, as in a real terminal; `proc.stderr` then carries only kern's own
   * lines): `isatty` is true inside, `TERM` defaults to `xterm-256color` (an `env.TERM` wins),
   * `\x03` interrupts the foreground process group, job control works in a shell, and
   * {@link BoxProcess.resize} sends SIGWINCH. A terminal's box starts cold (no prewarmed box). */
  pty?: boolean | PtySize;
}

/** Addition to 0.1.1: a terminal's size, in characters (each 1-65535; one left out is 80 columns
 * or 24 rows). */
export interface PtySize {
  cols?: number;
  rows?: number;
}

/** Addition to 0.1.1: where a published box port is reached from the host. */
export interface PublishedPort {
  host: string;
  port: number;
  /** `http://host:port`. */
  url: string;
}

/** Addition to 0.1.1: the options of {@link Sandbox.spawnCode}. */
export interface SpawnCodeOptions extends SpawnOptions {
  /** Defaults to `"python"`. */
  language?: Language;
}

/** Addition to 0.1.1: a process in a box of its own ({@link Sandbox.spawn}). Emits `'exit'`
 * exactly once, after `spawn()` resolved: `(result, null)`, or `(null, error)` when it was
 * aborted. */
export class BoxProcess extends EventEmitter {
  private constructor();
  /** A name for the process, unique in this Node process. */
  readonly id: string;
  /** The workload's stdin, or `null` (`stdin: false`). Writes are back-pressured by the box;
   * `end()` gives it EOF (with `pty`, the keys typed: `end()` sends nothing, write `"\x04"` for a
   * shell's end of input). After the exit a write fails with an `EPIPE` error (in its callback
   * and as an `'error'` event), never a crash. */
  readonly stdin: Writable | null;
  /** The workload's stdout, as it is written: a `Readable` of Buffers (async-iterable;
   * `Readable.toWeb` works). Holds at most `keepBytes` that no reader took. */
  readonly stdout: Readable;
  /** The workload's stderr, as `stdout`. */
  readonly stderr: Readable;
  /** Bytes of each stream dropped before a reader took them: bytes read plus bytes dropped equal
   * bytes written, exactly (once the process exited). */
  readonly droppedBytes: { stdout: number; stderr: number };
  /** Whether the process has ended. */
  readonly exited: boolean;
  /** Each published box port (`ports`), by box port. */
  readonly ports: Record<number, PublishedPort>;
  /** Resolves once a listener in the box answers through the published port (kern's forwarder
   * accepts a connection even with none, so a bare connect proves nothing). Rejects with a
   * `SandboxError` (`ERR_SANDBOX_PORT_NOT_READY`) after `timeoutS` (default 30) or when the
   * process exits first. */
  waitForPort(port: number, opts?: { timeoutS?: number }): Promise<void>;
  /** The result once it ends, as `run()` gives one; its `stdout`/`stderr` are the last
   * `keepBytes` of each stream (`truncated` when that is not all). Rejects with an `AbortError`
   * on an abort. */
  wait(): Promise<ExecutionResult>;
  /** Sends `signal` (default `"SIGTERM"`) to the workload's process group, then kills the whole
   * box once `graceS` (default 2) is over unless it ended first. An end caused by `kill()` is not
   * a fault. Does nothing once the process exited. */
  kill(signal?: NodeJS.Signals | number, opts?: { graceS?: number }): void;
  /** A terminal's new size (`pty`): its foreground process group gets SIGWINCH. A process without
   * a terminal throws a `SandboxError` (`ERR_SANDBOX_INVALID_ARG`); once it exited this does
   * nothing. */
  resize(cols: number, rows: number): void;
  on(event: "exit", listener: (result: ExecutionResult | null, error: Error | null) => void): this;
  once(event: "exit", listener: (result: ExecutionResult | null, error: Error | null) => void): this;
}

export interface CallOptions {
  /**
   * This call's deadline in seconds instead of the session's `timeoutS`: a finite number > 0
   * (fractions work); `Infinity`, `NaN` or a string throws {@link SandboxError}. The timeout
   * fault's message names the value that applied.
   */
  timeoutS?: number | null;
  /** Live view of this call's stdout (see `SandboxOptions.onStdout`); `null` turns it off. */
  onStdout?: ((chunk: Buffer) => void) | null;
  /** Live view of this call's stderr (see `SandboxOptions.onStderr`); `null` turns it off. */
  onStderr?: ((chunk: Buffer) => void) | null;
  /**
   * Variables merged over the session's `env` for this call only, with the same rules (never in
   * argv, never on disk).
   */
  env?: Record<string, string> | null;
  /**
   * Aborting kills the box (as a timeout does) and the call rejects with an {@link AbortError}
   * carrying the output so far. A signal already aborted rejects at once and starts no box. The
   * listener is removed when the call settles.
   */
  signal?: AbortSignal | null;
  /**
   * What the workload reads on its stdin, then EOF: a string (UTF-8), a `Buffer`/`Uint8Array`, a
   * Node `Readable` or a web `ReadableStream`. Left out (or `null`), stdin reads EOF at once. A
   * source faster than the box is pulled only as the box reads (host memory stays bounded); a
   * source that errors ends stdin there (EOF); what the workload leaves unread when it exits is
   * dropped. When the call settles a web stream still open is cancelled, a Node `Readable` left
   * paused. Python code still reaches the interpreter by its own path, never through stdin.
   * Anything else throws {@link SandboxError} (`ERR_SANDBOX_INVALID_OPTION`).
   */
  stdin?: string | Uint8Array | NodeJS.ReadableStream | ReadableStream<Uint8Array> | null;
}

/**
 * Addition to 0.1.1: the options of `runCode()`: {@link CallOptions} plus `language`, and
 * `results` (this call's {@link SandboxOptions.results}).
 */
export type RunCodeOptions = CallOptions & { language?: Language; results?: boolean | null };

/** Addition to 0.1.1: the options of `sandbox.kernel()`. */
export interface KernelOptions {
  /**
   * `"shared"` (the default): cells run in one interpreter, as in Jupyter; a cell past its
   * deadline (or aborted) gets a `KeyboardInterrupt`, and the state survives. `"fork"`: each
   * cell runs in a `fork()` of the current state, which is kept as a checkpoint: a cell that
   * times out, is aborted, crashes the interpreter or is OOM-killed loses only itself, and
   * {@link Kernel.rollback} goes back to earlier states.
   */
  isolation?: "shared" | "fork";
  /** Fork mode: how many earlier states to keep, 0-64 (the oldest is dropped). Defaults to 8. */
  checkpoints?: number;
  /** Aborting stops the kernel's start; `kernel()` rejects with an {@link AbortError}. */
  signal?: AbortSignal | null;
  /**
   * Each cell's deadline in seconds, as in 0.1.23 (defaults to the Sandbox's `timeoutS` at each
   * call). A cell's own `timeoutS` ({@link KernelRunOptions}) wins for that cell. Past it a cell
   * gets a `timeout` fault: interrupted (`"shared"`) or killed (`"fork"`), the kernel's state kept.
   */
  timeoutS?: number | null;
}

/**
 * Addition to 0.1.1: the options of `kernel.runCode()`: {@link CallOptions} without `env` (a
 * kernel keeps the environment it started with), plus `results`. `onStdout`/`onStderr` get
 * this cell's output live; `timeoutS` and `signal` interrupt (shared) or kill (fork) this cell
 * only.
 */
export type KernelRunOptions = Omit<CallOptions, "env" | "stdin"> & { results?: boolean | null };

/**
 * Addition to 0.1.1: a Python kernel, from {@link Sandbox.kernel}: one interpreter in one box
 * with the session's options (its `env`, cwd `/workspace`, network, caps and limits), whose state
 * persists across cells. Cells run one at a time, in the order `runCode()` is called. The box
 * dies with `close()`, with its Sandbox, its Worker, `process.exit()` and Node's death.
 */
export class Kernel {
  /** `"shared"` or `"fork"`. */
  readonly isolation: "shared" | "fork";
  /** Fork mode: the most earlier states kept (0 in shared mode). */
  readonly checkpoints: number;
  /** Fork mode: how many states `rollback()` can go back now (0 in shared mode). */
  readonly checkpointsHeld: number;
  /**
   * Runs one cell. Resolves to an {@link ExecutionResult}: stdout and stderr (raw fd writes and
   * subprocess output included) are this cell's; `exitCode` is 0, 1 after an uncaught exception
   * (its traceback in `stderr`), the code of a `SystemExit` (the kernel survives it), 130 after a
   * `KeyboardInterrupt`, or 128+N / the code of a fork-mode cell whose process died; `results`
   * its rich results; `files` is `[]` (use `listFiles()`); `fault` is `"timeout"` for a cell past
   * its deadline. Output past `maxOutputBytes` is dropped (`truncated`), and the kernel lives on.
   * Rejects with an {@link AbortError} when `signal` aborts, and with a {@link SandboxError} when
   * the kernel is closed or has died (the message says why; `restart()` gives a fresh one).
   */
  runCode(code: string, opts?: KernelRunOptions): Promise<ExecutionResult>;
  /**
   * Fork mode: back to the state from before the last `n` cells that made a state (default 1; a
   * cell that crashed or timed out made none). Memory only: files the cells wrote and processes
   * they started stay. More than {@link Kernel.checkpointsHeld}: a {@link SandboxError}.
   */
  rollback(n?: number): Promise<void>;
  /** A fresh interpreter with the same options; the old state is gone. */
  restart(): Promise<void>;
  /** Ends the kernel and its box. Safe to call several times. */
  close(): Promise<void>;
  /** Addition to 0.1.1: `close()`, so that `await using kernel = await sbx.kernel()` closes it. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Addition to 0.1.1: the options of `open()`. */
export interface OpenOptions {
  /**
   * Aborting kills the `setup` box and removes what `open()` made; `open()` rejects with an
   * {@link AbortError}. A signal already aborted rejects at once and creates no workspace.
   */
  signal?: AbortSignal | null;
}

/** Addition to 0.1.1: the options of `readFile()`. */
export interface ReadFileOptions {
  /**
   * A file larger than this many bytes is refused with a {@link SandboxError} whose `code` is
   * `"EFBIG"`, before any of it is read into memory. Defaults to 2^31 - 1.
   */
  maxBytes?: number | null;
}

/**
 * Interpreter used by `runCode()`: `"python"` (the default, runs `python3`), `"bash"` (runs `sh`)
 * or `"node"`. Pick an `image` that actually contains that interpreter.
 */
export type Language = "python" | "bash" | "node";

/**
 * A sandbox session built around one workspace directory. Files written to the workspace survive
 * from one call to the next; processes and memory do not, because every `runCode()`/`run()`
 * starts a brand-new box. All options default to their most restrictive value.
 *
 * The constructor validates the options and locates `kern`; it throws {@link SandboxError} for
 * invalid values or a missing binary and {@link MountRefused} for unsafe mounts. Call `open()`
 * (or use {@link withSandbox}) before anything else.
 */
export class Sandbox {
  constructor(opts?: SandboxOptions);
  /**
   * Prepares the session: creates the temporary workspace (or checks and creates the one given),
   * then runs `setup` if configured. Resolves to the sandbox itself; calling it again on an open
   * session does nothing. Rejects with {@link MountRefused} for an unsafe `workspace`, with
   * {@link SandboxError} if `setup` fails, and with a {@link SandboxError} carrying a system error's `code`, `errno`,
   * `syscall` and `path` if the directory cannot be created.
   */
  open(): Promise<this>;
  /** Addition to 0.1.1: `open()` with an abort signal (see {@link OpenOptions}). */
  open(opts: OpenOptions): Promise<this>;
  /**
   * Ends the session, removing the workspace only if `open()` created it (a caller-supplied
   * `workspace` is kept). Safe to call several times; cleanup is best-effort and does not reject.
   */
  close(): Promise<void>;
  /** Addition to 0.1.1: `close()`, so that `await using sbx = await new Sandbox().open()` closes it. */
  [Symbol.asyncDispose](): Promise<void>;
  /**
   * Executes `code` with the chosen interpreter (`language`, default `"python"`) in a fresh box
   * with the session's network setting (off by default). Sandbox interventions are returned in
   * `result.fault`, never thrown. Very large snippets are staged as a file in the workspace (a
   * Python snippet of any size goes to the box's interpreter instead, with no file).
   * Rejects with {@link SandboxError} if the session is not open, the language is unknown, the
   * code contains a NUL byte, or `kern` cannot be executed.
   */
  runCode(code: string, opts?: { language?: Language }): Promise<ExecutionResult>;
  /** Addition to 0.1.1: `runCode()` with per-call options (see {@link RunCodeOptions}). */
  runCode(code: string, opts?: RunCodeOptions): Promise<ExecutionResult>;
  /**
   * Executes `command`, an argument vector such as `["sh", "-c", "ls -la"]`, in a fresh box; it is
   * never interpreted by a host shell. Rejects with {@link SandboxError} if the session is not
   * open, `command` is a string, an empty array, or contains a non-string/NUL-containing element.
   */
  run(command: string[]): Promise<ExecutionResult>;
  /** Addition to 0.1.1: `run()` with per-call options (see {@link CallOptions}). */
  run(command: string[], opts?: CallOptions): Promise<ExecutionResult>;
  /**
   * Addition to 0.1.1: starts `command` (an argv, as `run()` takes) in a fresh box of its own (a
   * prewarmed one when the pool has it) and resolves, once its exec succeeded, to a
   * {@link BoxProcess} to talk to while it runs. A command that cannot be executed resolves too,
   * its `wait()` giving exit code 127 as `run()` would. Rejects with {@link SandboxError} for bad
   * arguments or a closed session, with an `AbortError` when `opts.signal` aborts first.
   */
  spawn(command: string[], opts?: SpawnOptions): Promise<BoxProcess>;
  /**
   * Addition to 0.1.1: `spawn()` of `code` in a language (`python3 -u -c`, `bash -c`, `node -e`):
   * Python's output unbuffered, so that it streams as it is printed.
   */
  spawnCode(code: string, opts?: SpawnCodeOptions): Promise<BoxProcess>;
  /** Addition to 0.1.1: this Sandbox's processes still running. `close()` ends them all. */
  processes(): BoxProcess[];
  /**
   * Stores `data` (a string is written as UTF-8) at `path`, relative to the workspace, creating
   * missing parent directories; an existing file is replaced. The path is resolved strictly
   * beneath the workspace (openat2), and no symbolic link is followed in any component, so a link
   * planted by the box cannot divert the write. Rejects with {@link SandboxError} if the session
   * is not open or the path leaves the workspace, and with a `SandboxError` with a system error's fields (`code`, `errno`,
   * `syscall`, `path`; e.g. `ELOOP` for a symlink, `EISDIR`) when the host operation fails.
   */
  writeFile(path: string, data: Buffer | string): Promise<void>;
  /**
   * Returns the bytes of the workspace file at `path` (relative to the workspace). Resolution is
   * the same as for `writeFile()`: confined to the workspace, with symbolic links refused in
   * every component. Rejects with {@link SandboxError} if the session is not open or the path
   * leaves the workspace, and with a `SandboxError` with a system error's fields (`code`, `errno`, `syscall`, `path`; e.g.
   * `ENOENT` for a missing file, `ELOOP` for a symlink) when the host operation fails.
   */
  readFile(path: string): Promise<Buffer>;
  /** Addition to 0.1.1: `readFile()` with a size limit (see {@link ReadFileOptions}). */
  readFile(path: string, opts?: ReadFileOptions): Promise<Buffer>;
  /**
   * Synchronously writes the entire workspace to the host file `dest` as a gzip-compressed USTAR
   * archive, a filesystem checkpoint only (no process or memory state). Regular files are
   * stored, symbolic links are skipped; member paths may be up to 255 bytes (via the USTAR prefix
   * field). Readable by standard `tar`.
   *
   * Disabled unless the environment variable `KERN_SANDBOX_SNAPSHOT` is `"1"`. Throws
   * {@link SandboxError} when not enabled, when the session is not open, when a path is too
   * long for USTAR, or (`code` `EFBIG`) when the archive would hold more than `restore()` accepts
   * (1 GiB of uncompressed tar, or 200,000 files); throws a `SandboxError` with a system error's fields (`code`, `errno`, `syscall`, `path`) if `dest`
   * cannot be written.
   */
  snapshot(dest: string): void;
  /**
   * Synchronously unpacks an archive produced by `snapshot()` (or a compatible plain-USTAR
   * `.tar.gz`) from the host file `src` into the workspace, overwriting files with the same name.
   * The archive is checked up front: absolute paths, `..` components, and members other than
   * regular files and directories (symlinks, hard links, devices) cause a refusal, as do corrupt
   * headers.
   *
   * Disabled unless the environment variable `KERN_SANDBOX_SNAPSHOT` is `"1"`. Throws
   * {@link SandboxError} when not enabled, when the session is not open, or when the archive is
   * unsafe or malformed; throws a `SandboxError` with a system error's fields (`code`, `errno`, `syscall`, `path`) if `src`
   * cannot be read or the workspace cannot be written.
   */
  restore(src: string): void;
  /**
   * Lists the regular files in the workspace, or only beneath `subdir` (workspace-relative) when
   * given. The `.deps` directory and symbolic links are left out; `change` is always
   * `"created"`. Rejects with {@link SandboxError} if the session is not open or `subdir` leaves
   * the workspace.
   */
  listFiles(subdir?: string): Promise<FileInfo[]>;
  /**
   * Addition to 0.1.1: starts a Python {@link Kernel} with this session's options (taking a
   * prewarmed box when one is ready). Rejects with {@link SandboxError} for bad options, a closed
   * session or a kernel that cannot start, and with {@link AbortError} if `signal` aborts.
   */
  kernel(opts?: KernelOptions): Promise<Kernel>;
}

/**
 * Session helper: constructs a {@link Sandbox} (here with default options), awaits `open()`,
 * calls `fn` with it and always calls `close()` afterwards, even when `fn` rejects. Resolves to
 * whatever `fn` resolves to; errors from the constructor, `open()` or `fn` are propagated.
 */
export function withSandbox<T>(fn: (sandbox: Sandbox) => Promise<T>): Promise<T>;
/**
 * Session helper: constructs a {@link Sandbox} from `opts`, awaits `open()` (which runs `setup`),
 * calls `fn` with it and always calls `close()` afterwards, even when `fn` rejects. Resolves to
 * whatever `fn` resolves to; errors from the constructor, `open()` or `fn` are propagated.
 */
export function withSandbox<T>(opts: SandboxOptions, fn: (sandbox: Sandbox) => Promise<T>): Promise<T>;

/**
 * Convenience for a single execution: opens a temporary session with `opts`, runs `code` with
 * `opts.language` (default `"python"`), then closes the session and deletes its workspace.
 * Sandbox interventions come back in `result.fault`; configuration mistakes reject with
 * {@link SandboxError} / {@link MountRefused}. Use {@link withSandbox} when several steps must
 * share files.
 */
export function runCode(code: string, opts?: SandboxOptions & { language?: Language }): Promise<ExecutionResult>;
/**
 * Addition to 0.1.1: the one-shot call with an abort `signal`, which covers `open()`, the box and
 * `close()`: the call rejects with an {@link AbortError} and leaves no workspace behind.
 */
export function runCode(code: string, opts?: SandboxOptions & RunCodeOptions): Promise<ExecutionResult>;

/** Addition to 0.1.1: one check of {@link doctor}. */
export interface DoctorCheck {
  /**
   * Which check: `"kern"` (found, runs, its version), `"linux"` (5.3 or newer), `"pidfd"`,
   * `"openat2"`, `"userns"` (user namespaces), `"tmpdir"` (a workspace can be made),
   * `"runtime-dir"` (kern's runtime dir, where every box's start and teardown write, is in memory),
   * `"uid-range"`, `"image"` (the image is in kern's cache), `"box"` (a probe box ran),
   * `"cgroup"` (which caps bind, as the probe box saw them).
   */
  id: string;
  /** Whether the check passed. */
  ok: boolean;
  /** `true` when boxes cannot run without it; a failed check that is not required is a warning. */
  required: boolean;
  /** What was found, in a sentence. */
  detail: string;
  /** How to fix a failed check; `null` when it passed. */
  fix: string | null;
}

/** Addition to 0.1.1: what {@link doctor} found. */
export interface DoctorReport {
  /** `true` when every required check passed: boxes can run on this host. */
  ok: boolean;
  /** Every check, in the order they ran. */
  checks: DoctorCheck[];
  /**
   * The caps as a probe box saw them (`memory` from kern's cap byte, `pids` from the box's own
   * `pids.max`, `cpu` whether a `cpu.max` is there); `null` when no probe box ran.
   */
  controllers: {
    memory: "enforced" | "not_enforced" | "none" | "unknown";
    pids: "enforced" | "not_enforced";
    cpu: "available" | "not available";
  } | null;
}

/**
 * Addition to 0.1.1: checks whether this host can run boxes, and which caps will really be
 * enforced, before the first failure: kern found and its version, the Linux version, pidfd and
 * openat2, user namespaces, a writable temp dir, kern's runtime dir in memory, the uid range, the
 * image in kern's cache, a probe box in that image and the cgroup controllers it sees. Never
 * rejects for a host problem (that is a failed check). The same as `npx kern-sandbox doctor`
 * (`--json` for this structure).
 */
export function doctor(opts?: { image?: string }): Promise<DoctorReport>;

/** The version string of this package, e.g. `"0.1.1"`. */
export const version: string;
