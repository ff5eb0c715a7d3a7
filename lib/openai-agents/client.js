"use strict";

// KernSandboxClient: a `SandboxClient` of @openai/agents-core/sandbox whose
// sessions are kern-sandbox Sandboxes. new KernSandboxClient() uses the
// session defaults; new KernSandboxClient(options) makes each session's
// Sandbox from them (`exposedPorts`: box ports every exec'd process
// publishes); new KernSandboxClient(sandbox) serves every session from the
// caller's open Sandbox (shared; never closed here).
const fs = require("fs");
const { Sandbox } = require("../sandbox");
const { sandboxError } = require("../errors");
const { describe } = require("../options");
const { requirePeer } = require("../peer");
const { SandboxRef } = require("../adapter/sandbox-ref");
const { KernAgentsSession } = require("./session");

const WHAT = "kern-sandbox/openai-agents";

/** The parts of @openai/agents-core the adapter uses. */
function sdk() {
  const opts = { install: "@openai/agents-core", what: WHAT };
  return {
    core: requirePeer("@openai/agents-core", opts),
    sandbox: requirePeer("@openai/agents-core/sandbox", opts),
    internal: requirePeer("@openai/agents-core/sandbox/internal", opts),
  };
}

class KernSandboxClient {
  backendId = "kern-sandbox";
  supportsDefaultOptions = true;
  #sdk;
  #options;
  #shared;

  constructor(options) {
    this.#sdk = sdk();
    if (options instanceof Sandbox) {
      this.#shared = options;
      this.#options = {};
    } else if (options === undefined || options === null || (typeof options === "object" && !Array.isArray(options))) {
      this.#shared = null;
      this.#options = { ...(options ?? {}) };
    } else {
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `new KernSandboxClient() takes Sandbox options or a Sandbox, got ${describe(options)}`);
    }
    const ports = this.#options.exposedPorts ?? [];
    if (!Array.isArray(ports) || !ports.every((p) => Number.isInteger(p) && p > 0 && p < 65536))
      throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `options.exposedPorts must be an array of TCP ports, got ${describe(ports)}`);
  }

  #ref(workspacePath, clientOptions) {
    if (this.#shared) return new SandboxRef(this.#shared);
    const o = { ...this.#options, ...(clientOptions || {}) };
    if (workspacePath) o.workspace = workspacePath;
    return new SandboxRef(o, { extraKeys: ["exposedPorts"], what: "KernSandboxClient" });
  }

  async create(args, manifestOptions) {
    const n = this.#sdk.sandbox.normalizeSandboxClientCreateArgs(args, manifestOptions);
    const environment = await n.manifest.resolveEnvironment();
    const ref = this.#ref(null, n.options);
    const state = {
      manifest: n.manifest,
      environment,
      workspaceReady: false,
      // A workspace the caller named survives the session, so resume() can reattach to it.
      workspacePath: this.#shared ? null : (ref.sandbox.workspace || null),
      configuredExposedPorts: [...(this.#options.exposedPorts ?? [])],
      snapshot: null,
    };
    return started(new KernAgentsSession({ state, ref, sdk: this.#sdk, archiveLimits: n.archiveLimits }));
  }

  /** Reattaches to a session's workspace when it still exists (a `workspace`
   * the caller gave); else a fresh workspace with the manifest applied again. */
  async resume(state, options = {}) {
    const dir = typeof state.workspacePath === "string" && fs.existsSync(state.workspacePath) ? state.workspacePath : null;
    const ref = this.#ref(dir, options.clientOptions);
    return started(new KernAgentsSession({ state: { ...state, workspaceReady: dir !== null && state.workspaceReady === true },
      ref, sdk: this.#sdk, archiveLimits: options.archiveLimits }));
  }

  async delete(state) {
    void state; // a session's resources go with its own delete(); nothing else is kept
  }

  async serializeSessionState(state) {
    return {
      manifest: this.#sdk.internal.serializeManifest(state.manifest),
      environment: this.#sdk.internal.sanitizeEnvironmentForPersistence(state),
      workspaceReady: state.workspaceReady === true,
      workspacePath: state.workspacePath ?? null,
      configuredExposedPorts: state.configuredExposedPorts ?? [],
      exposedPorts: state.exposedPorts ?? null,
    };
  }

  async deserializeSessionState(raw) {
    return {
      manifest: this.#sdk.internal.deserializeManifest(raw.manifest),
      environment: raw.environment && typeof raw.environment === "object" ? { ...raw.environment } : {},
      workspaceReady: raw.workspaceReady === true,
      workspacePath: typeof raw.workspacePath === "string" ? raw.workspacePath : null,
      configuredExposedPorts: Array.isArray(raw.configuredExposedPorts) ? raw.configuredExposedPorts : [],
      exposedPorts: raw.exposedPorts && typeof raw.exposedPorts === "object" ? raw.exposedPorts : undefined,
    };
  }
}

/** The session, started (its manifest applied); one that fails to start
 * is deleted, so nothing of it stays open. */
async function started(s) {
  try {
    await s.start();
  } catch (e) {
    await s.delete().catch(() => {});
    throw e;
  }
  return s;
}

module.exports = { KernSandboxClient, sdk };
