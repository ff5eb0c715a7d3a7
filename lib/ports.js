"use strict";

// A process's published ports (issue 33 item 4): box TCP ports that kern
// publishes on the host (`-p ip:HOST:BOX`, a forwarder outside the box
// that connects into the box's own network namespace). The box keeps no
// network otherwise. Here: choosing free host ports, taking kern's
// "→ publishing" lines out of the process's stderr, and telling when a
// listener in the box answers through a published port.
const net = require("net");
const { sandboxError } = require("./errors");
const { describe } = require("./options");

const MAX_PORTS = 64;
const PROBE_HOLD_MS = 50;

/** spawn()'s `ports` and `publishHost`: { ports: [P...], host } (host an
 * IPv4 address; kern binds IPv4 only). */
function portsOption(opts, where) {
  const ports = opts.ports ?? [];
  if (!Array.isArray(ports) || ports.length > MAX_PORTS ||
      !ports.every((p) => Number.isInteger(p) && p >= 1 && p <= 65535) || new Set(ports).size !== ports.length)
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} options.ports must be an array of at most ${MAX_PORTS} ` +
      `distinct TCP port numbers (1-65535) in the box, got ${describe(opts.ports)}`);
  const host = opts.publishHost ?? "127.0.0.1";
  if (typeof host !== "string" || !net.isIPv4(host))
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} options.publishHost must be an IPv4 address such as ` +
      `"127.0.0.1" (the default) or "0.0.0.0" (every interface: reachable from the network), got ${describe(host)}`);
  if (opts.publishHost !== undefined && ports.length === 0)
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", `${where} options.publishHost needs options.ports`);
  return { ports, host };
}

/** A free TCP port on host for each box port: [{ ip, host: H, box: P }].
 * Free when chosen; kern binds it itself and fails closed if it was taken
 * in between (the caller retries). */
async function pickPorts(boxPorts, ip) {
  const out = [];
  for (const box of boxPorts) {
    const server = net.createServer();
    await new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen({ port: 0, host: ip, exclusive: true }, resolve);
    });
    const host = server.address().port;
    await new Promise((resolve) => server.close(resolve));
    out.push({ ip, host, box });
  }
  return out;
}

/** kern's argv for the mappings. */
function publishArgs(maps) {
  return maps.flatMap((m) => ["-p", `${m.ip}:${m.host}:${m.box}`]);
}

/** Whether a process's end is kern's refusal of a taken host port. */
function portTaken(result) {
  return result !== null && result.fault?.type === "startup_failed" &&
    /cannot publish host port/.test(result.fault.message);
}

/**
 * The lines kern prints on the workload's stderr for the mappings, before
 * the box exists (so the workload cannot forge them): taken out of the
 * stream exactly, in order. At the first byte that differs what was held
 * goes through and filtering stops.
 */
class PublishFilter {
  #expect;
  #held = [];
  #heldBytes = 0;
  #done;

  constructor(maps) {
    const lines = maps.map((m) => `→ publishing ${m.ip}:${m.host} → box :${m.box}\n` +
      (m.ip === "0.0.0.0" ? `  warning: bound 0.0.0.0 - box port ${m.box} is reachable from the network\n` : ""));
    this.#expect = Buffer.from(lines.join(""), "utf8");
    this.#done = this.#expect.length === 0;
  }

  /** chunk in; what passes out, through emit. */
  push(chunk, emit) {
    if (this.#done) return emit(chunk);
    this.#held.push(chunk);
    this.#heldBytes += chunk.length;
    const held = Buffer.concat(this.#held, this.#heldBytes);
    const n = Math.min(held.length, this.#expect.length);
    if (held.subarray(0, n).equals(this.#expect.subarray(0, n))) {
      if (held.length < this.#expect.length) return undefined; // all of it so far is kern's
      this.#finish();
      if (held.length > this.#expect.length) emit(held.subarray(this.#expect.length));
      return undefined;
    }
    this.#finish();
    return emit(held);
  }

  /** The stream ended: what was held (a part of kern's lines only) goes. */
  end(emit) {
    if (this.#done) return;
    const held = Buffer.concat(this.#held, this.#heldBytes);
    this.#finish();
    if (held.length > 0) emit(held);
  }

  #finish() {
    this.#done = true;
    this.#held = [];
    this.#heldBytes = 0;
  }
}

/**
 * One probe through a published port: a connection that kern's forwarder
 * accepts and keeps open for PROBE_HOLD_MS has reached a listener in the
 * box (with none, the forwarder's own connect into the box fails and it
 * closes the host's connection at once).
 */
function probe(host, port) {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    let settled = false;
    const done = (ok) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(ok);
    };
    let timer = null;
    sock.once("connect", () => {
      timer = setTimeout(() => done(true), PROBE_HOLD_MS);
    });
    sock.once("end", () => done(false));
    sock.once("close", () => done(false));
    sock.once("error", () => done(false));
  });
}

module.exports = { portsOption, pickPorts, publishArgs, portTaken, PublishFilter, probe };
