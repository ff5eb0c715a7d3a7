"use strict";

// Cluster tests: a private redis-server (test/lib/redis.js) and real worker
// processes (`kern-sandbox worker`, with the kern double the run uses), on
// short heartbeats so that a dead worker is seen in about a second.
const fs = require("fs");
const path = require("path");
const { spawn } = require("child_process");
const h = require("./harness");

const BIN = path.join(h.repo, "bin", "kern-sandbox.js");
// Heartbeat 300 ms (dead after 900 ms), locks of 2 s checked every 1 s.
// Workers start with --warm 0 unless a test asks: the census after each
// test counts kern processes, and a warm session holds an idle box.
const FAST = ["--heartbeat-ms", "300", "--lock-ms", "2000", "--stalled-ms", "1000"];
const CLIENT_TIMING = { pollMs: 250, viewMs: 250, redisLostS: 30 };

class WorkerProc {
  constructor(redis, { args = [], stateDir, env = {}, fast = true }) {
    this.fast = fast;
    this.redis = redis;
    this.env = env;
    this.args = args;
    this.stateDir = stateDir;
    this.proc = null;
    this.id = null;
    this.stderr = "";
  }

  async start() {
    const argv = [BIN, "worker", "--redis-socket", this.redis.socket, "--state-dir", this.stateDir,
      ...(this.fast ? FAST : []), ...(this.args.includes("--warm") ? [] : ["--warm", "0"]), ...this.args];
    const p = spawn(process.execPath, argv, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...this.env } });
    this.proc = p;
    this.exit = new Promise((r) => p.once("exit", (code, signal) => r({ code, signal })));
    p.stderr.on("data", (c) => { this.stderr += c; });
    let out = "";
    p.stdout.on("data", (c) => { out += c; });
    const ok = await h.waitFor(() => /ready (\S+)\n/.test(out) || p.exitCode !== null, h.startWait(15000), 20);
    const m = /ready (\S+)\n/.exec(out);
    if (!ok || !m) throw new Error(`the worker did not start: ${this.stderr}`);
    this.id = m[1];
    this.pid = p.pid;
    return this;
  }

  /** SIGKILL, and waits for the process to be gone. */
  async kill() {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill("SIGKILL");
    return this.exit;
  }

  /** SIGTERM (a drain), and its exit. */
  async stop() {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill("SIGTERM");
    return this.exit;
  }
}

/** Live kern processes (of the double, or of kernBin): boxes of every worker on this host. */
function kernProcesses(kernBin = h.fakeKern()) {
  return h.processesUsing(kernBin);
}

/** The census after a test: no kern process and no run directory left. */
async function censusZero(stateDir) {
  const ok = await h.waitFor(() => kernProcesses().length === 0, 5000);
  const runs = fs.existsSync(stateDir) ? fs.readdirSync(stateDir) : [];
  return { kern: ok ? 0 : kernProcesses().length, runDirs: runs };
}

module.exports = { WorkerProc, kernProcesses, censusZero, CLIENT_TIMING, FAST };
