// kern-sandbox/openai-agents: the OpenAI Agents JS adapter (README, "OpenAI Agents").
// Requires @openai/agents-core (an optional peer of kern-sandbox).
import type {
  SandboxClient, SandboxClientCreateArgs, SandboxClientResumeOptions, SandboxSession, SandboxSessionState,
  Manifest, ExecCommandArgs, SandboxExecResult, WriteStdinArgs, ReadFileArgs, ListDirectoryArgs,
  SandboxDirectoryEntry, ViewImageArgs, MaterializeEntryArgs, WorkspaceArchiveData, WorkspaceArchiveOptions,
  ExposedPortEndpoint, SandboxArchiveLimits,
} from "@openai/agents-core/sandbox";
import type { Editor, FunctionTool, ToolOutputImage } from "@openai/agents-core";
import type { Sandbox, SandboxOptions } from "./index";

export interface KernSandboxClientOptions extends SandboxOptions {
  /** Box TCP ports every exec'd process publishes on 127.0.0.1 (needs sbx.spawn, issue 33). */
  exposedPorts?: number[];
  [key: string]: unknown;
}

export interface KernAgentsSessionState extends SandboxSessionState {
  /** The host workspace a resume reattaches to (a `workspace` option the caller gave), or null. */
  workspacePath?: string | null;
  configuredExposedPorts?: number[];
}

/**
 * A sandbox session on a kern-sandbox Sandbox. Paths: relative to /workspace or under
 * /workspace/; others are refused (ERR_SANDBOX_INVALID_PATH). Commands run as `sh -c` in a fresh
 * box each; persistWorkspace/hydrateWorkspace need KERN_SANDBOX_SNAPSHOT=1.
 */
export declare class KernAgentsSession implements SandboxSession<KernAgentsSessionState> {
  state: KernAgentsSessionState;
  /** The Sandbox the session runs on. */
  readonly sandbox: Sandbox;
  start(): Promise<void>;
  running(): Promise<boolean>;
  setArchiveLimits(limits?: SandboxArchiveLimits | null): void;
  /** True when this kern-sandbox has sbx.spawn (terminals; issue 33). */
  supportsPty(): boolean;
  exec(args: ExecCommandArgs): Promise<SandboxExecResult>;
  execCommand(args: ExecCommandArgs): Promise<string>;
  writeStdin(args: WriteStdinArgs): Promise<string>;
  readFile(args: ReadFileArgs): Promise<Uint8Array>;
  listDir(args: ListDirectoryArgs): Promise<SandboxDirectoryEntry[]>;
  pathExists(path: string): Promise<boolean>;
  directoryExists(path: string): Promise<boolean>;
  viewImage(args: ViewImageArgs): Promise<ToolOutputImage>;
  createEditor(): Editor;
  materializeEntry(args: MaterializeEntryArgs): Promise<void>;
  applyManifest(manifest: Manifest): Promise<void>;
  persistWorkspace(): Promise<Uint8Array>;
  hydrateWorkspace(data: WorkspaceArchiveData, options?: WorkspaceArchiveOptions): Promise<void>;
  resolveExposedPort(port: number): Promise<ExposedPortEndpoint>;
  stop(): Promise<void>;
  shutdown(): Promise<void>;
  delete(): Promise<void>;
  close(): Promise<void>;
}

/** A SandboxClient whose sessions are kern-sandbox Sandboxes (options), or the caller's Sandbox (shared, never closed). */
export declare class KernSandboxClient implements SandboxClient<KernSandboxClientOptions, KernAgentsSessionState> {
  readonly backendId: string;
  readonly supportsDefaultOptions: boolean;
  constructor(options?: KernSandboxClientOptions | Sandbox);
  create(args?: SandboxClientCreateArgs<KernSandboxClientOptions> | Manifest, manifestOptions?: KernSandboxClientOptions):
    Promise<KernAgentsSession>;
  resume(state: KernAgentsSessionState, options?: SandboxClientResumeOptions<KernSandboxClientOptions>): Promise<KernAgentsSession>;
  delete(state: KernAgentsSessionState): Promise<void>;
  serializeSessionState(state: KernAgentsSessionState): Promise<Record<string, unknown>>;
  deserializeSessionState(state: Record<string, unknown>): Promise<KernAgentsSessionState>;
}

/**
 * A function tool `run_code` ({ code, language: "python" | "bash" | "node" | null }) that runs code in
 * a kern box and returns JSON (stdout, stderr, exitCode, error, files). Not the SDK's own
 * `codeInterpreterTool`, which is OpenAI's hosted interpreter.
 */
export declare function codeInterpreterTool(sandbox?: SandboxOptions | Sandbox): FunctionTool & { close(): Promise<void> };
