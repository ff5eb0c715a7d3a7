// The private contract between lib/ and the native addon
// (build/<flavour>/kern_sandbox.node). Not part of the public API.

/** What one box did, as the engine saw it. */
/** Its fields are those of csrc/napi/raw-result.h (RAW_RESULT_FIELDS; test/16 checks them). */
export interface RawRunResult {
  /** kern's exit code, or null if it died of a signal or the status was lost. */
  exitCode: number | null;
  /** The signal that killed kern, or null. */
  signal: number | null;
  /** False when a foreign waitpid(-1) in the host took kern's status. */
  statusKnown: boolean;
  /** Our own deadline fired and the engine killed kern and its group. */
  timedOut: boolean;
  /** The box's session was closed (cancelGroup) and the engine killed it. */
  cancelled: boolean;
  /** The first bytes (at most 4) kern wrote on KERN_STARTED_FD, the first in the low byte
   * (lib/faults.js, startedByte). */
  startedWord: number;
  /** How many bytes kern wrote there in all. */
  startedCount: number;
  /** Captured output decoded as UTF-8 (ASCII output is an external string over the capture). */
  stdout: string;
  stderr: string;
  /** Bytes read past maxOutputBytes and dropped. */
  stdoutDiscarded: number;
  stderrDiscarded: number;
  /** onStdout/onStderr chunks, and their bytes, not delivered (the output above has them). */
  stdoutMissedChunks: number;
  stderrMissedChunks: number;
  stdoutMissedBytes: number;
  stderrMissedBytes: number;
  /** Spawn to kern's exit, in milliseconds. */
  durationMs: number;
  /** kern's rusage from waitid: kern and the box processes it reaped. */
  userCpuMs: number;
  systemCpuMs: number;
  /** ru_maxrss in KiB (never below this process's peak RSS at the spawn: a vfork-style clone). */
  maxRssKb: number;
  /** Files created/modified (lib/changes.js unpacks them), 0 if none, or null if the workspace could not be scanned. */
  files: PackedChanges | 0 | null;
  /** The in-box init's report (csrc/init/protocol.h): 1 exited / 2 signaled; null without one. */
  reportEnd: number | null;
  /** Settled at the init's report; kern's teardown went on off the call's path. */
  settledEarly: boolean;
  /** Ran in a box started ahead (a claim that found it). */
  prewarmed: boolean;
  /** A prewarmed box that a call took over: nothing else in this result. */
  claimed: boolean;
  /** A claimed box's init or interpreter took the call (TAKEN): without it the call never ran there. */
  taken: boolean;
  /** The init said STARTED: the workload's exec succeeded (an --exec or --wait init only). */
  started: boolean;
  /** A caller's kill reached the call while it ran (signalCall, a process's kill()): not a fault. */
  killedByCaller: boolean;
  /** A claim that brought no box of its own (ClaimOptions.claimOnly) found no
   * parked box to take over: nothing ran in this box; the parked box's own
   * result (its taken) says whether the call ran there. */
  missed: boolean;
  /** A Python call's rich results (interpreter protocol RESULT bodies): JSON texts. */
  results: string[];
  /** A result did not fit maxOutputBytes and was dropped whole. */
  resultsDropped: boolean;
}

/** The in-box init's terms (BoxOptions.init). */
export interface InitTerms {
  /** >= 0: settle at the init's report with this as kern's cap byte; -1: wait for kern's exit. */
  earlyCap: number;
  /** Bytes of rich results kept. */
  resultMax: number;
  /** The RUN of an --interp box once it is taken: the code, whether to collect rich results. */
  run?: { code: Buffer; results: boolean } | null;
}

/** What every box entry point takes (csrc/napi/request.c): one object,
 * each field required unless marked optional (undefined and null are
 * absent); a missing or wrong one is a TypeError naming the entry point and
 * the field, a number out of range a RangeError. */
export interface BoxOptions {
  /** kern's path (for errors, and exec'd when no kernHandle is given). */
  kern: string;
  /** The session's kern, held open (kernOpen) and executed through its descriptor. */
  kernHandle?: KernHandle | null;
  /** kern's argv ([] for a claim that brings no box of its own). */
  argv: string[];
  /** kern's own environment. */
  env: string[];
  /** The workload's env file (kern --env-file), or none. */
  envData?: Buffer | null;
  /** Where an env file may go if memfd is missing. */
  tmpdir: string;
  /** `kern stop NAME`, run after a timeout, or none. */
  stopArgv?: string[] | null;
  timeoutMs: number;
  maxOutputBytes: number;
  onStdout?: ((chunk: Buffer) => void) | null;
  onStderr?: ((chunk: Buffer) => void) | null;
  /** The session's change tracking (wsWatch), or none. */
  watch?: WsWatch | null;
  /** The session's group (cancelGroup kills every box of it); 0 or absent: none. */
  group?: number;
  /** cancelGroup(cancelKey) kills this box alone (a call's AbortSignal); 0 or absent for none.
   * Keys and groups share one number space (lib/session.js). */
  cancelKey?: number;
  /** The in-box init's terms; absent (startBox only): the workload is the box's command. */
  init?: InitTerms | null;
  /** startBox and claimBox: the call's stdin feed (stdinOpen), or none (stdin at EOF). With it a
   * cold box's argv runs `ks-init --stdin` (or the workload itself, whose stdin it then is). */
  stdin?: StdinHandle | null;
  /** Required with stdin: the feed's slot is free for the next chunk (gone: the workload's stdin
   * is closed, every byte from now on is dropped). Called before the call settles. */
  onStdin?: ((gone: boolean) => void) | null;
  /** startBox and claimBox: a process's call. Its init says when the workload's exec succeeded
   * (its cold argv runs `ks-init --exec --started`, a claim's spec is specFrame(argv, true)), and
   * this is called then, once, before the call settles; signalCall reaches its workload. With
   * handStdout its argument is the stdout pipe's read end, the caller's once it returns true (else
   * the addon closes it; null when the pipe was closed already). */
  onStarted?: ((stdoutFd: number | null) => boolean | void) | null;
  /** startBox and claimBox: a process's output (with onStdout/onStderr): while the box runs its
   * pipes are read no faster than this thread takes the chunks (a bounded window, as a pipe to
   * a child process is), instead of chunks being dropped past the streaming budget. */
  flow?: boolean;
  /** startBox and claimBox, with onStarted: at STARTED the engine stops reading the box's stdout
   * and hands the pipe's read end to onStarted: the caller reads it from then on (what the engine
   * read before came through onStdout first) and reads what is left once the call settled. */
  handStdout?: boolean;
  /** startBox and claimBox, without stdin: a process's stdin, the read end of pipePair(), which
   * the engine owns from the call on (it closes it whatever happens); the workload gets it on
   * fd 0 as it would a feed's pipe (a cold argv runs `ks-init --stdin`). */
  stdinFd?: number;
  /** startBox only, with stdinFd: a process's terminal. stdinFd is the slave of ptyPair() and
   * this its master, both the engine's from the call on: the workload gets the slave as its
   * controlling terminal on fds 0-2 (a cold argv runs `ks-init --stdin --tty`), the box's
   * stdout is what the master reads, and the stdin feed (if any) writes the master. */
  ttyFd?: number;
}

/** parkBox's options. */
export interface ParkOptions extends BoxOptions {
  init: InitTerms;
  /** The key the box is parked under (nonzero; a cancel key's number space). */
  parkKey: number;
  /** The box's channel is made here and a copy of the host's end stays in
   * the parked handle: claimSend() writes a claim's argv there and closes
   * it; wsClose(parked) closes it unused. */
  shareChannel?: boolean;
}

/** claimBox's options. */
export interface ClaimOptions extends BoxOptions {
  init: InitTerms;
  /** What of the SPEC frame the caller could not send (claimSend), or all of it; none for a
   * Python claim (its init.run goes out when the box is taken over). */
  spec?: Buffer | null;
  /** A claim that brings no box of its own: its whole spec went through
   * claimSend() already, or it claims a Python box, whose RUN goes out when
   * the box is taken over. With no parked box to take over, it settles
   * `missed` and starts nothing (its argv, env and stopArgv may then be
   * empty: they are never used). */
  claimOnly?: boolean;
  /** The call's change tracking, begun by the caller (watchBegin) before it
   * sent the claim's argv itself: of opts.watch; the box takes it over. */
  begun?: BegunWatchCall | null;
}

/** startKernel's options. */
export interface KernelOptions extends BoxOptions {
  init: InitTerms;
  /** The kernel's key, by which kernelCell() names it (nonzero). */
  kernelKey: number;
  /** A parked Python box to take over if it is still there, else the box starts cold. */
  claim?: ParkedBox | null;
}

/** The handles the addon gives in the place of descriptor numbers (csrc/napi/handle.h):
 * type-tagged objects that show nothing; a handle of another kind, or anything else, is a
 * TypeError naming the kind expected, and a closed one a SystemError EBADF. */
export interface WorkspaceHandle { readonly __handle: "workspace" }
export interface KernHandle { readonly __handle: "kern" }
/** A parked prewarm box: its park key and, with shareChannel, this thread's copy of its channel. */
export interface ParkedBox { readonly __handle: "parked" }
/** A call's stdin feed (stdinOpen; csrc/core/box/feed.h): no descriptor. */
export interface StdinHandle { readonly __handle: "stdin" }
/** A process's terminal's master, for ttyResize (ptyPair). */
export interface TtyHandle { readonly __handle: "tty" }

/** A new stdin feed for one call (and its cold retry): BoxOptions.stdin. */
export function stdinOpen(): StdinHandle;
/** Puts a copy of buf (1..STDIN_CHUNK_MAX bytes) in the feed's one slot and wakes the engine:
 * true; false, putting nothing, while the slot is full (wait for onStdin) or after stdinEnd. */
export function stdinWrite(handle: StdinHandle, buf: Buffer): boolean;
/** The feed ends after what was put: the workload reads EOF once it has read it all. */
export function stdinEnd(handle: StdinHandle): void;
/** The largest chunk stdinWrite takes. */
export const STDIN_CHUNK_MAX: number;

/** A call's workspace change tracking begun on the calling thread (watchBegin). */
export interface BegunWatchCall {
  readonly __brand: "BegunWatchCall";
}

/** What one kernel message (its start, a cell, a rollback) came to. Its fields are those of
 * csrc/napi/cell-result.h (CELL_RESULT_FIELDS; test/16 checks them). */
export interface RawCellResult {
  /** done: DONE; ended: the cell's process died (fork) or a rollback ended; ready: the kernel
   * started; dead: the kernel is gone (why); none: no such kernel; skipped: aborted before it ran. */
  how: "done" | "ended" | "ready" | "dead" | "none" | "skipped";
  /** DONE: enum ks_ip_end (0 ok, 1 exception, 2 exit, 3 interrupted) and its value. */
  end: number;
  value: number;
  /** Fork mode: checkpoints held after it. */
  depth: number;
  /** ENDED: the process's wait status. */
  waitStatus: number;
  /** READY: the mode and the interpreter's pid in the box. */
  mode: number;
  pid: number;
  timedOut: boolean;
  cancelled: boolean;
  why: string | null;
  stdout: string;
  stderr: string;
  stdoutDiscarded: number;
  stderrDiscarded: number;
  stdoutMissedChunks: number;
  stderrMissedChunks: number;
  stdoutMissedBytes: number;
  stderrMissedBytes: number;
  results: string[];
  resultsDropped: boolean;
  durationMs: number;
  userCpuMs: number;
  systemCpuMs: number;
  maxRssKb: number;
}

/** A Node-shaped system error: code, negative errno, syscall, path. */
export interface SystemError extends Error {
  code: string;
  errno: number;
  syscall: string;
  path?: string;
}

/** kern's started fd and env fd numbers, as kern sees them. */
export const STARTED_FD: 3;
export const ENV_FD: 4;

/**
 * A cold box: spawns kern on the supervisor thread and settles when the box is over.
 * Rejects with a SystemError when kern cannot be started (execve, EMFILE...).
 */
export function startBox(opts: BoxOptions): Promise<RawRunResult>;
/**
 * A prewarm box, started and parked under opts.parkKey until a claim takes it over (done then
 * settles with `claimed`) or it is dropped, killed with its group, or dies. done holds nothing on
 * the event loop. channel: whether parked holds a copy of the box's channel (shareChannel, and
 * one could be made).
 */
export function parkBox(opts: ParkOptions): { parked: ParkedBox; channel: boolean; done: Promise<RawRunResult> };
/** A call in the parked box if it is still there (prewarmed), else cold (or `missed`, with claimOnly). */
export function claimBox(parked: ParkedBox, opts: ClaimOptions): Promise<RawRunResult>;
/** A kernel's box (an --interp box whose cells kernelCell() sends), in opts.claim if it is still parked. */
export function startKernel(opts: KernelOptions): Promise<RawRunResult>;

/**
 * One message to a kernel box's interpreter (csrc/napi/cell.c): its start ("kernel": a = mode,
 * b = checkpoints), a cell ("cell": a = resultMax, b = 1 for rich results, body = the code) or a
 * rollback ("rollback": a = n), sent by the engine's thread; with direct (the caller has no
 * other message of this kernel under way), by the calling thread when the kernel is ready and
 * the message is one record, sparing the engine thread's wakeup. Options as BoxOptions: a
 * wrong field is a TypeError.
 */
export function kernelCell(opts: {
  kernelKey: number; id: number; type: "kernel" | "cell" | "rollback"; a: number; b: number;
  body?: Buffer | null; timeoutMs: number; maxOutputBytes: number;
  onStdout?: ((chunk: Buffer) => void) | null; onStderr?: ((chunk: Buffer) => void) | null;
  cancelKey?: number; direct?: boolean;
}): Promise<RawCellResult>;

/** What the environment's teardown does, now (process.exit, an uncaught exception): kills and
 * reaps every box, removes the workspaces sessions created, closes every handle. */
export function shutdown(): void;
/** The host's kernel features the engine probed (doctor). */
export function hostFeatures(): Record<string, unknown>;

/** Recycles a parked prewarm box (if it is still parked). */
export function dropParked(parked: ParkedBox): void;
/** Holds / releases the event loop while JS waits for the end of a box whose
 * run holds nothing (a parked or kernel box it killed): lib/hold.js. */
export function holdLoop(): void;
export function releaseLoop(): void;
/** Writes the SPEC frame of a claim's argv to a parked box's channel (the
 * copy parked holds) without blocking, then closes that copy: the bytes of
 * the frame left unsent (0: all went; all of it when parked holds no copy
 * any more, the box is gone, or the frame is over 64 KiB). */
export function claimSend(parked: ParkedBox, argv: string[]): number;
/** The SPEC frame of argv, as claimSend() writes it (for ClaimOptions.spec). */
export function specFrame(argv: string[], process?: boolean): Buffer;
/** A pipe for a process's stdin: [readFd, writeFd], both close-on-exec. */
export function pipePair(): [number, number];
/** A pty for a process's terminal, of size cols x rows: [slaveFd, masterFd, control], the
 * descriptors close-on-exec, the master nonblocking. slaveFd and masterFd go to its box
 * (BoxOptions.stdinFd and ttyFd); control (a handle on the master again) stays with the caller
 * for ttyResize() and is closed with wsClose() (or by the environment's teardown). */
export function ptyPair(cols: number, rows: number): [number, number, TtyHandle];
/** Sets the size of control's terminal (its foreground group gets SIGWINCH). */
export function ttyResize(control: TtyHandle, cols: number, rows: number): void;
/** Begins a call's change tracking on this thread, for a claim whose argv
 * the caller sends itself: null when the tracker has events still to read
 * (the engine then begins it, and sends the argv after). claimBox() takes
 * it over through ClaimOptions.begun; one never taken is abandoned when collected. */
export function watchBegin(watch: WsWatch): BegunWatchCall | null;

/** Test switches from process.env (KERN_SANDBOX_FORCE_FALLBACK, KERN_SANDBOX_TRACKER), read
 * by lib/binding.js: the addon itself never calls getenv(). benchOff: the engine's bench
 * switches that are off (lib/benchoff.js engineOff(), a comma list such as "inline-ends"). */
export function configure(forceFallback: string, tracker: string,
  makeRawResult: (...fields: unknown[]) => RawRunResult, benchOff: string,
  makeCellResult: (...fields: unknown[]) => RawCellResult): void;
/** The names of RawRunResult's fields, in the order makeRawResult takes them. */
export const RAW_RESULT_FIELDS: readonly (keyof RawRunResult)[];
/** The names of RawCellResult's fields, in the order makeCellResult takes them. */
export const CELL_RESULT_FIELDS: readonly (keyof RawCellResult)[];
/** The constants lib/ shares with the engine, the init and the interpreter, from their one
 * definition (csrc/init/protocol.h, csrc/core/box/interp.h; csrc/napi/protocol.c). */
export const PROTOCOL: Readonly<{
  IP_END: Readonly<{ OK: number; EXCEPTION: number; EXIT: number; INTERRUPTED: number }>;
  IP_MODE: Readonly<{ SHARED: number; FORK: number }>;
  INIT_END: Readonly<{ EXITED: number; SIGNALED: number }>;
  INIT_BOX_DIR: string;
  INIT_BOX_PATH: string;
}>;
/** Kills every box of a session's group or with that cancel key, now and any that would still start. */
export function cancelGroup(group: number): void;
/** Drops a closed session's group once all its calls have settled. */
export function forgetGroup(group: number): void;
/** A process's kill(): the box of cancelKey (a process's, started with onStarted) gets signo
 * through its init, and is killed graceMs later unless it ended first (killedByCaller): 0, or a
 * negative errno (-ESRCH: no engine yet). */
export function signalCall(cancelKey: number, signo: number, graceMs: number): number;

/** The engine's handle on a session's workspace (inotify tracker or full scans). */
export interface WsWatch { readonly __wsWatch: unique symbol }
export function wsWatch(root: WorkspaceHandle): WsWatch;
/** Releases the session's reference (idempotent); runs in flight keep theirs. */
export function wsWatchClose(watch: WsWatch): Promise<void>;

/** The workspace held open (a directory descriptor); with own, the environment's
 * teardown removes the tree if the session never closes. */
export function wsOpen(absPath: string, own: boolean): WorkspaceHandle;
/** The kern binary held open (O_PATH, for BoxOptions.kernHandle), with the opened file's
 * st_mode and st_uid and whether it starts with "#!", for the caller to check the file it got. */
export function kernOpen(absPath: string): { handle: KernHandle; mode: number; uid: number; script: boolean };
/** Closes what a handle holds (a workspace's or kern's descriptor, a parked
 * box's copy of its channel); false, closing nothing, once it is closed
 * (by JS, or by the environment's teardown). */
export function wsClose(handle: WorkspaceHandle | KernHandle | ParkedBox | TtyHandle): boolean;
/** As wsClose, but the close runs on a detached thread of its own (the last
 * descriptor of a removed workspace: freeing its blocks may wait on the disk). */
export function wsCloseLater(root: WorkspaceHandle): boolean;
export function wsWriteFile(root: WorkspaceHandle, rel: string, data: Buffer): Promise<void>;
export function wsReadFile(root: WorkspaceHandle, rel: string, maxBytes: number): Promise<Buffer>;
/** Changed files, packed: one object per file would cost the JS thread N-API calls per file. */
export interface PackedChanges {
  /** Every path that is valid UTF-8, joined by "\0" ("" in the place of the others). */
  paths: string;
  sizes: Float64Array;
  /** 0 created, 1 modified. */
  kinds: Uint8Array;
  /** At index i, path i as bytes when it is not valid UTF-8; null if there is none. */
  raw: Array<Buffer | undefined> | null;
}

export function wsList(root: WorkspaceHandle, subdir: string): Promise<Array<[string | Buffer, number]>>;
export function wsRemoveTree(root: WorkspaceHandle): Promise<void>;

/** Writes destDir/destName atomically. Synchronous. */
export function wsSnapshot(root: WorkspaceHandle, destDir: string, destName: string): void;
/** Throws a SystemError with `reason` (and `member`) when the archive is refused. */
export function wsRestore(root: WorkspaceHandle, srcPath: string): void;

/* The test natives (csrc/napi/testing.c): only in the builds compiled with
 * KS_TEST_NATIVES (Test, what npm test loads; Debug; Tsan), never in the
 * Release build users load (test/16 checks), so undefined there. */
/** Boxes currently supervised in this environment. */
export const liveBoxes: (() => number) | undefined;
/** Kerns still tearing down boxes whose calls settled, and kern stop helpers running. */
export const tailBoxes: (() => number) | undefined;
/** How many cancelled groups the engine still checks. */
export const cancelledGroups: (() => number) | undefined;
/** wsCloseLater closes not yet done, in the whole process. */
export const pendingCloses: (() => number) | undefined;
/** How many times this environment's box submissions woke the engine: the
 * first box of each turn of JS, and each turn's end that owed one (csrc/napi/turn.c). */
export const submitWakes: (() => number) | undefined;
/** How many option names this environment keeps as JS strings (csrc/napi/propkeys.c). */
export const propKeys: (() => number) | undefined;

