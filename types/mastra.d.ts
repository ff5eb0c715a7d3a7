// kern-sandbox/mastra: the Mastra adapter (README, "Mastra").
import type { WorkspaceSandbox, SandboxInfo, CommandResult, ExecuteCommandOptions, SandboxFileInput, WriteFilesOptions,
  ProviderStatus, SandboxStartResult } from "@mastra/core/workspace";
import type { Sandbox, SandboxOptions } from "./index";

export interface KernWorkspaceSandboxOptions extends SandboxOptions {
  /** 1-128 of [A-Za-z0-9._-]; default a random one. A checkpoint of this id is restored at start(). */
  id?: string;
  /** Where snapshot() writes `<id>.tar.gz` (default $XDG_STATE_HOME/kern-sandbox/mastra). */
  checkpointDir?: string;
}

/** The WorkspaceSandbox of @mastra/core 1.x on a kern-sandbox Sandbox. */
export declare class KernWorkspaceSandbox implements WorkspaceSandbox {
  readonly id: string;
  readonly name: string;
  readonly provider: string;
  status: ProviderStatus;
  error?: string;
  readonly supportsCheckpoints: boolean;
  /** The Sandbox commands run on. */
  readonly sandbox: Sandbox;
  constructor(options?: KernWorkspaceSandboxOptions | Sandbox);
  start(): Promise<SandboxStartResult>;
  stop(): Promise<void>;
  destroy(): Promise<void>;
  isReady(): boolean;
  getInfo(): SandboxInfo;
  getInstructions(): string;
  /** `command` is a shell line; `args` are appended, each quoted. `timeout` in milliseconds. */
  executeCommand(command: string, args?: string[], options?: ExecuteCommandOptions): Promise<CommandResult>;
  writeFiles(files: SandboxFileInput[], options?: WriteFilesOptions): Promise<void>;
  /** Writes the workspace to `<checkpointDir>/<id>.tar.gz` (needs KERN_SANDBOX_SNAPSHOT=1). */
  snapshot(): Promise<void>;
}
