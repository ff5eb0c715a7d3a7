// kern-sandbox/mcp: an MCP server whose tools run code in kern boxes.
// Needs @modelcontextprotocol/sdk 1.x (an optional peer dependency): without
// it createMcpServer() throws a SandboxError with code ERR_SANDBOX_MISSING_PEER.
import type { Readable, Writable } from "stream";
import type { Sandbox, SandboxOptions } from "./index";

/** The caps of one tool result (replies bounded for a model); each cut is marked with how much it cut. */
export interface McpReplyLimits {
  /** Characters of stdout, of stderr, of a process's output in one reply (default 16000). */
  streamChars: number;
  /** Characters of text in one reply (default 64000). */
  replyChars: number;
  /** Images in one reply (default 8); the rest are noted. */
  imagesPerReply: number;
  /** Bytes of one image, decoded (default 5 MiB). */
  imageBytes: number;
  /** Bytes of all images in one reply (default 8 MiB). */
  replyImageBytes: number;
  /** read_file reads at most this many bytes of a file (default 16 MiB). */
  fileBytes: number;
  /** A binary file that is not an image comes back as a resource up to this size (default 1 MiB). */
  resourceBytes: number;
}

export interface McpServerOptions extends SandboxOptions {
  /** An open Sandbox to serve (the caller closes it); without it the server makes one from these options and closes it. */
  sandbox?: Sandbox;
  /** Python run_code in one fork-isolated kernel whose state persists across calls (default false). */
  kernel?: boolean;
  /** Overrides of the reply caps. */
  limits?: Partial<McpReplyLimits>;
  /** The server's name in initialize (default "kern-sandbox"). */
  name?: string;
}

/** A minimal view of the SDK's Transport (stdio, Streamable HTTP, in-memory, ...). */
export interface McpTransport {
  start(): Promise<void>;
  send(message: unknown, options?: unknown): Promise<void>;
  close(): Promise<void>;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: any, extra?: any) => void;
}

/** One MCP tool as tools/list gives it. */
export interface McpToolDefinition {
  name: string;
  description: string;
  inputSchema: { type: "object"; properties: Record<string, unknown>; required?: string[]; additionalProperties?: boolean };
}

export declare class KernMcpServer {
  /** The SDK's low-level Server (`@modelcontextprotocol/sdk/server/index.js`), tools registered. */
  readonly server: any;
  readonly limits: McpReplyLimits;
  readonly kernelMode: boolean;
  readonly tools: Map<string, McpToolDefinition>;
  /** The served Sandbox, opened on first use. */
  sandbox(): Promise<Sandbox>;
  /** Connects to a transport of the SDK (or any with its shape). */
  connect(transport: McpTransport): Promise<void>;
  /** Stops every call and process (their boxes are killed), closes the transport and the Sandbox it made. Idempotent. */
  close(): Promise<void>;
}

/** An MCP server with the tools run_code, run_command, write_file, read_file, list_files,
 * start_process, process_output, write_stdin, stop_process, list_processes. */
export declare function createMcpServer(options?: McpServerOptions): KernMcpServer;

/** What `kern-sandbox mcp` runs: a server on stdin/stdout until EOF or SIGTERM/SIGINT. */
export declare function serveStdio(options?: McpServerOptions & { maxLineBytes?: number },
  streams?: { input?: Readable; output?: Writable }): Promise<void>;

/** The newline-delimited JSON-RPC transport serveStdio uses: malformed lines get error replies. */
export declare class LineTransport implements McpTransport {
  constructor(opts?: { input?: Readable; output?: Writable; maxLineBytes?: number });
  start(): Promise<void>;
  send(message: unknown): Promise<void>;
  close(): Promise<void>;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: any, extra?: any) => void;
}

export declare const DEFAULT_LIMITS: Readonly<McpReplyLimits>;
export declare const TOOL_NAMES: readonly ["run_code", "run_command", "write_file", "read_file", "list_files",
  "start_process", "process_output", "write_stdin", "stop_process", "list_processes"];
