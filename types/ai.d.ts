// kern-sandbox/ai: the AI SDK 7 adapter (README, "AI SDK"). The types are
// structural copies of the AI SDK's own (`Experimental_SandboxSession` of
// @ai-sdk/provider-utils, `HarnessV1SandboxProvider` of @ai-sdk/harness), so
// this file needs neither package; test/types-adapters checks, with tsc
// --strict, that they are assignable to the packages' declarations.
import type { Sandbox, SandboxOptions, Language } from "./index";

/** Options of `run` and `spawn`: a shell command line, run as `sh -c` in a fresh box. */
export interface KernSandboxProcessOptions {
  command: string;
  /** Relative: against /workspace; /workspace/...: in it; any other absolute path: the box's own. */
  workingDirectory?: string;
  env?: Record<string, string>;
  abortSignal?: AbortSignal;
}

/** A path: relative to /workspace, or under /workspace/. Anything else is refused (ERR_SANDBOX_INVALID_PATH). */
export interface KernSandboxPathOptions {
  path: string;
  abortSignal?: AbortSignal;
}

export interface KernSandboxWriteOptions<CONTENT> extends KernSandboxPathOptions {
  content: CONTENT;
}

export interface KernSandboxRunResult {
  exitCode: number;
  stdout: string;
  /** A fault (timeout, killed, ...) is appended as a `[kern-sandbox: TYPE: message]` line. */
  stderr: string;
  stdoutLength?: number;
  stderrLength?: number;
}

export interface KernSandboxProcess {
  readonly pid?: number;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  wait(): PromiseLike<{ exitCode: number }>;
  kill(): PromiseLike<void>;
}

export interface KernWritableSandboxProcess extends KernSandboxProcess {
  readonly stdin: WritableStream<Uint8Array>;
}

export interface KernSandboxFileStat {
  type: "file" | "directory" | "other";
  size: number;
}

export interface KernSandboxDirectoryEntry {
  name: string;
  type: "file" | "directory" | "symlink" | "other";
}

/** An `Experimental_SandboxSession` of the AI SDK 7 (every member of provider-utils 5.0.86). */
export interface KernSandboxSession {
  readonly description: string;
  readonly readFile: (options: KernSandboxPathOptions) => PromiseLike<ReadableStream<Uint8Array> | null>;
  readonly readBinaryFile: (options: KernSandboxPathOptions) => PromiseLike<Uint8Array | null>;
  readonly readTextFile: (options: KernSandboxPathOptions & {
    encoding?: string;
    startLine?: number;
    endLine?: number;
  }) => PromiseLike<string | null>;
  readonly writeFile: (options: KernSandboxWriteOptions<ReadableStream<Uint8Array>>) => PromiseLike<void>;
  readonly writeBinaryFile: (options: KernSandboxWriteOptions<Uint8Array>) => PromiseLike<void>;
  readonly writeTextFile: (options: KernSandboxWriteOptions<string> & { encoding?: string }) => PromiseLike<void>;
  readonly stat: (options: KernSandboxPathOptions) => PromiseLike<KernSandboxFileStat | null>;
  readonly listDirectory: (options: KernSandboxPathOptions) => PromiseLike<KernSandboxDirectoryEntry[] | null>;
  readonly deleteFile: (options: KernSandboxPathOptions) => PromiseLike<boolean>;
  readonly spawn: {
    (options: KernSandboxProcessOptions & { stdin: true }): PromiseLike<KernWritableSandboxProcess>;
    (options: KernSandboxProcessOptions & { stdin?: false }): PromiseLike<KernSandboxProcess>;
    (options: KernSandboxProcessOptions & { stdin?: boolean }): PromiseLike<KernSandboxProcess | KernWritableSandboxProcess>;
  };
  readonly run: (options: KernSandboxProcessOptions & { maxOutputLength?: number }) => PromiseLike<KernSandboxRunResult>;
}

/** What createSandboxSession() returns: the session, its Sandbox, and close(). */
export interface KernSandboxSessionHandle extends KernSandboxSession {
  /** The Sandbox the session runs on. */
  readonly sandbox: Sandbox;
  /** Kills the session's spawned processes and closes a Sandbox made from options (a caller's stays open). */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * An `Experimental_SandboxSession` on a Sandbox made from `options` (opened on first use, closed
 * by `close()`), or on the caller's Sandbox (opened if needed, never closed here).
 */
export function createSandboxSession(options?: SandboxOptions | Sandbox): KernSandboxSessionHandle;

export type KernNetworkPolicy =
  | { mode: "allow-all" }
  | { mode: "deny-all" }
  | { mode: "custom"; allowedHosts: ReadonlyArray<string>; allowedCIDRs?: ReadonlyArray<string>; deniedCIDRs?: ReadonlyArray<string> }
  | { mode: "custom"; allowedHosts?: ReadonlyArray<string>; allowedCIDRs: ReadonlyArray<string>; deniedCIDRs?: ReadonlyArray<string> };

/** A `HarnessV1NetworkSandboxSession` of @ai-sdk/harness. */
export interface KernHarnessSandboxSession extends KernSandboxSession {
  readonly id: string;
  /** Always "/workspace". */
  readonly defaultWorkingDirectory: string;
  readonly ports: ReadonlyArray<number>;
  /** The host URL of a port a running spawned process published (needs sbx.spawn, issue 33). */
  readonly getPortEndpoint: (options: { port: number; protocol?: "http" | "https" | "ws" }) =>
    PromiseLike<{ readonly url: string; readonly headers?: Readonly<Record<string, string>> }>;
  /** @deprecated as in @ai-sdk/harness: use getPortEndpoint. */
  readonly getPortUrl: (options: { port: number; protocol?: "http" | "https" | "ws" }) => PromiseLike<string>;
  /** Kills the session's boxes; the workspace stays for resumeSession(). Idempotent. */
  readonly stop: () => PromiseLike<void>;
  /** stop(), then removes the workspace. */
  readonly destroy: () => PromiseLike<void>;
  /**
   * deny-all, allow-all, or a host allowlist (`custom` with `allowedHosts` only); CIDR rules are
   * refused with ERR_SANDBOX_NOT_SUPPORTED. Running processes of the session are killed.
   */
  readonly setNetworkPolicy: (policy: KernNetworkPolicy) => PromiseLike<void>;
  readonly restricted: () => KernSandboxSession;
}

export interface KernSandboxProviderOptions extends SandboxOptions {
  /** Box TCP ports every spawned process publishes on the host (needs sbx.spawn, issue 33). */
  ports?: number[];
  /** Where session workspaces live, one directory per sessionId (default $XDG_STATE_HOME/kern-sandbox/sessions). */
  root?: string;
}

/** A `HarnessV1SandboxProvider` of @ai-sdk/harness. */
export interface KernSandboxProvider {
  readonly specificationVersion: "harness-sandbox-v1";
  readonly providerId: string;
  /** The directory of session workspaces. */
  readonly root: string;
  readonly createSession: (options?: {
    sessionId?: string;
    abortSignal?: AbortSignal;
    identity?: string;
    onFirstCreate?: (session: KernSandboxSession, opts: { abortSignal?: AbortSignal }) => Promise<void>;
  }) => PromiseLike<KernHarnessSandboxSession>;
  readonly resumeSession: (options: { sessionId: string; abortSignal?: AbortSignal }) => PromiseLike<KernHarnessSandboxSession>;
}

/** A synchronous provider: no I/O until createSession(). */
export function createSandboxProvider(options?: KernSandboxProviderOptions): KernSandboxProvider;

export interface KernCodeInterpreterInput {
  code: string;
  language?: Language;
}

export interface KernCodeInterpreterOutput {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** "TYPE: message" when the sandbox stopped the code. */
  error?: string;
  /** The text of rich results (display(), a last expression) of a Python call. */
  results?: string[];
  /** Files the call created or changed: "path (change, N bytes)". */
  files?: string[];
}

/**
 * An AI SDK `tool()` that runs code in a box (requires the `ai` package). `sandbox`: nothing,
 * Sandbox options, an open Sandbox, or a session from createSandboxSession().
 */
export function codeInterpreterTool(sandbox?: SandboxOptions | Sandbox | KernSandboxSessionHandle):
  import("ai").Tool<KernCodeInterpreterInput, KernCodeInterpreterOutput> & { close(): Promise<void> };
