// kern-sandbox/langchain: a LangChain.js code-interpreter tool. Needs
// @langchain/core (an optional peer dependency): without it
// codeInterpreterTool() throws a SandboxError with code ERR_SANDBOX_MISSING_PEER.
import type { DynamicStructuredTool } from "@langchain/core/tools";
import type { ExecutionResult, Sandbox, SandboxOptions } from "./index";
import type { McpReplyLimits } from "./mcp";

export interface CodeInterpreterInput {
  code: string;
  language?: "python" | "bash" | "node";
}

/** The tool's artifact: the whole result, and its images (base64). */
export interface CodeInterpreterArtifact {
  result: ExecutionResult;
  images: { mimeType: string; data: string }[];
  isError: boolean;
}

export type KernCodeInterpreterTool = DynamicStructuredTool & {
  /** The Sandbox the tool runs in. */
  readonly sandbox: Sandbox;
  /** Closes the Sandbox the tool made (nothing for one it was given). */
  close(): Promise<void>;
};

/**
 * A tool named "code_interpreter" (responseFormat "content_and_artifact"): its content is the text a
 * model reads, bounded; its artifact a {@link CodeInterpreterArtifact}. sandbox: an open Sandbox, or
 * Sandbox options (or nothing): the tool then makes its own, opened on first use.
 */
export declare function codeInterpreterTool(sandbox?: Sandbox | SandboxOptions,
  opts?: { name?: string; description?: string; limits?: Partial<McpReplyLimits> }): KernCodeInterpreterTool;
