"use strict";

// A HarnessV1SandboxProvider (@ai-sdk/harness) on kern-sandbox. The
// provider object is plain and synchronous: nothing is created until
// createSession(). Each session is a Sandbox whose workspace is a directory
// named after the sessionId under the provider's root, so resumeSession()
// (in this process or another) finds the same files again. What kern can
// enforce of a network policy: none, the host's, or a domain allowlist.
const fs = require("fs");
const os = require("os");
const path = require("path");
const crypto = require("crypto");
const { Sandbox } = require("../sandbox");
const { sandboxError } = require("../errors");
const { describe } = require("../options");
const { SandboxRef } = require("../adapter/sandbox-ref");
const { BOX_WORKSPACE } = require("../adapter/paths");
const { features, noPorts } = require("../adapter/shell");
const { sessionMembers, describeSandbox } = require("./session");

/** The default root of session workspaces: $XDG_STATE_HOME/kern-sandbox/sessions
 * (~/.local/state/kern-sandbox/sessions). */
function defaultRoot() {
  const state = process.env.XDG_STATE_HOME && path.isAbsolute(process.env.XDG_STATE_HOME)
    ? process.env.XDG_STATE_HOME : path.join(os.homedir(), ".local", "state");
  return path.join(state, "kern-sandbox", "sessions");
}

/** A sessionId as a directory name: itself when it is a plain name, else
 * "h-" and its SHA-256 (so any string is a valid, stable id). */
function dirName(sessionId) {
  if (typeof sessionId !== "string" || sessionId === "")
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", `sessionId must be a non-empty string, got ${describe(sessionId)}`);
  if (/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/.test(sessionId)) return sessionId;
  return `h-${crypto.createHash("sha256").update(sessionId).digest("hex")}`;
}

/** Sandbox network options for a HarnessV1NetworkPolicy, or a clear refusal. */
function networkOptions(policy) {
  const mode = policy && policy.mode;
  if (mode === "allow-all") return { network: true, egressAllow: undefined };
  if (mode === "deny-all") return { network: false, egressAllow: undefined };
  if (mode === "custom") {
    const cidrs = [...(policy.allowedCIDRs || []), ...(policy.deniedCIDRs || [])];
    if (cidrs.length > 0)
      throw sandboxError("ERR_SANDBOX_NOT_SUPPORTED", `kern cannot enforce CIDR rules (${cidrs.join(", ")}): ` +
        "it enforces no network, the host's network, or a domain allowlist (allowedHosts only)");
    const hosts = [...(policy.allowedHosts || [])];
    if (hosts.length === 0) return { network: false, egressAllow: undefined };
    return { network: false, egressAllow: hosts };
  }
  throw sandboxError("ERR_SANDBOX_INVALID_ARG", `unknown network policy ${describe(policy)}: ` +
    "use { mode: 'allow-all' | 'deny-all' } or { mode: 'custom', allowedHosts }");
}

/** The state kept beside a session's workspace (not inside it, where a box could change it). */
function readMeta(file) {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return {};
  }
}

/**
 * createSandboxProvider({ ports, root, ...sandboxOptions }): a
 * HarnessV1SandboxProvider. `ports`: box ports every spawned process
 * publishes; `root`: where session workspaces live (default
 * $XDG_STATE_HOME/kern-sandbox/sessions).
 */
function createSandboxProvider(options = {}) {
  if (options === null || typeof options !== "object" || Array.isArray(options) || options instanceof Sandbox)
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", "createSandboxProvider() takes Sandbox options " +
      "(a session's workspace is its own, so an open Sandbox cannot be shared)");
  const { ports = [], root = defaultRoot(), ...sandboxOptions } = options;
  if (!Array.isArray(ports) || !ports.every((p) => Number.isInteger(p) && p > 0 && p < 65536))
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `options.ports must be an array of TCP ports, got ${describe(ports)}`);
  if (typeof root !== "string" || !path.isAbsolute(root))
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `options.root must be an absolute path, got ${describe(root)}`);
  const where = (id) => {
    const name = dirName(id);
    return { dir: path.join(root, name), meta: path.join(root, `${name}.json`) };
  };

  const open = async (sessionId, { fresh, abortSignal, onFirstCreate }) => {
    if (abortSignal) abortSignal.throwIfAborted();
    const { dir, meta } = where(sessionId);
    fs.mkdirSync(root, { recursive: true, mode: 0o700 });
    let created = false;
    if (fresh) {
      try {
        fs.mkdirSync(dir, { mode: 0o700 });
        created = true;
      } catch (e) {
        if (e.code !== "EEXIST") throw e;
      }
    } else if (!fs.existsSync(dir)) {
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `no kern-sandbox session ${JSON.stringify(sessionId)} under ` +
        `${root} to resume (createSession({ sessionId }) makes one)`);
    }
    const s = new ProviderSession(sessionId, { dir, meta, ports, sandboxOptions });
    await s.ready(abortSignal);
    if (created && onFirstCreate) await onFirstCreate(s.restricted(), { abortSignal });
    return s.view;
  };

  return {
    specificationVersion: "harness-sandbox-v1",
    providerId: "kern-sandbox",
    root,
    createSession: (o = {}) => open(o.sessionId ?? crypto.randomUUID(),
      { fresh: true, abortSignal: o.abortSignal, onFirstCreate: o.onFirstCreate }),
    resumeSession: (o) => open(o && o.sessionId, { fresh: false, abortSignal: o && o.abortSignal }),
  };
}

/** One harness session: a Sandbox on its directory, replaced (same
 * workspace) when the network policy changes, since a Sandbox's
 * egressAllow is fixed when it is made. */
class ProviderSession {
  #ref;
  #o;
  #live = new Set();
  #stopped = false;

  constructor(id, o) {
    this.id = id;
    this.#o = o;
    this.#ref = this.#newRef(readMeta(o.meta).network);
    const members = sessionMembers({
      acquire: (signal) => this.#acquire(signal),
      description: () => describeSandbox(this.#ref.sandbox, { ports: o.ports }),
      spawnOptions: () => ({ ports: o.ports }),
      track: (p) => {
        this.#live.add(p);
        p.wait().catch(() => {}).finally(() => this.#live.delete(p));
      },
    });
    this.restricted = () => members;
    this.view = Object.assign({}, bindAll(members), {
      id,
      defaultWorkingDirectory: BOX_WORKSPACE,
      ports: Object.freeze([...o.ports]),
      getPortEndpoint: async ({ port, protocol } = {}) => ({ url: await this.#portUrl(port, protocol) }),
      getPortUrl: async ({ port, protocol } = {}) => this.#portUrl(port, protocol),
      stop: () => this.#stop(),
      destroy: () => this.#destroy(),
      setNetworkPolicy: (policy) => this.#setNetworkPolicy(policy),
      restricted: () => members,
    });
    Object.defineProperty(this.view, "description", { get: () => members.description, enumerable: true });
  }

  #newRef(network) {
    return new SandboxRef({ ...this.#o.sandboxOptions, ...(network || {}), workspace: this.#o.dir });
  }

  async ready(signal) {
    await this.#acquire(signal);
  }

  #acquire(signal) {
    if (this.#stopped) throw sandboxError("ERR_SANDBOX_CLOSED", `the sandbox session ${JSON.stringify(this.id)} was stopped`);
    return this.#ref.open(signal);
  }

  async #portUrl(port, protocol = "http") {
    if (!this.#o.ports.includes(port))
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `port ${port} is not one this provider publishes ` +
        `(createSandboxProvider({ ports: [${this.#o.ports.join(", ")}] }))`);
    if (!(await features(this.#ref.sandbox)).ports) throw noPorts();
    const procs = [...this.#live].reverse();
    const p = procs.find((q) => !q.exited && q.ports && q.ports[port]);
    if (!p)
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `no running process of this session publishes port ${port}: ` +
        "start the server with spawn() first");
    const { host, port: hostPort } = p.ports[port];
    const scheme = protocol === "ws" ? "ws" : protocol === "https" ? "https" : "http";
    return `${scheme}://${host}:${hostPort}`;
  }

  async #stop() {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const p of this.#live) p.kill();
    await this.#ref.close();
  }

  async #destroy() {
    await this.#stop();
    // The workspace goes with the session: rm never follows the symlinks a
    // box may have left in it, and no box runs any more.
    await fs.promises.rm(this.#o.dir, { recursive: true, force: true });
    await fs.promises.rm(this.#o.meta, { force: true });
  }

  async #setNetworkPolicy(policy) {
    const network = networkOptions(policy);
    if (this.#stopped) throw sandboxError("ERR_SANDBOX_CLOSED", `the sandbox session ${JSON.stringify(this.id)} was stopped`);
    const next = this.#newRef(network); // validates the hosts before anything changes
    const old = this.#ref;
    this.#ref = next;
    for (const p of this.#live) p.kill();
    await old.close();
    fs.writeFileSync(this.#o.meta, JSON.stringify({ network }), { mode: 0o600 });
  }
}

/** The members of a session object as own, bound properties (a getter
 * stays a getter). */
function bindAll(members) {
  const out = {};
  for (const [k, d] of Object.entries(Object.getOwnPropertyDescriptors(members))) {
    if (k === "description") continue;
    out[k] = typeof d.value === "function" ? d.value.bind(members) : d.value;
  }
  return out;
}

module.exports = { createSandboxProvider, networkOptions, dirName, defaultRoot };
