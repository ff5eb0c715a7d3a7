"use strict";

// A private redis-server for a test: on a unix socket in a temp dir of the
// run (no TCP port: --port 0), no persistence unless asked (persist: true
// turns on the append-only file, for the restart test). Debian's
// redis-server, which .ci/run installs; a test without it SKIPs (h.skip:
// refused under KERN_SANDBOX_MUST_WORK=1, where CI has installed it).
const fs = require("fs");
const path = require("path");
const { spawn, execFileSync } = require("child_process");
const h = require("./harness");

function redisServerPath() {
  try {
    return execFileSync("sh", ["-c", "command -v redis-server"], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
}

/** Skips the test (or suite, from before()) when redis-server is absent. */
function requireRedis(ctx) {
  if (redisServerPath() === null) h.skip(ctx, "redis-server is not installed (apt-get install redis-server; .ci/run does)");
}

class RedisServer {
  constructor({ persist = false } = {}) {
    this.dir = h.tmpDir("redis-");
    this.socket = path.join(this.dir, "redis.sock");
    this.persist = persist;
    this.proc = null;
  }

  /** ioredis options for it. */
  get connection() {
    return { path: this.socket };
  }

  async start() {
    const args = ["--port", "0", "--unixsocket", this.socket, "--unixsocketperm", "700", "--dir", this.dir,
      "--save", "", "--appendonly", this.persist ? "yes" : "no", "--appendfsync", "always", "--logfile", "",
      "--daemonize", "no", "--loglevel", "warning"];
    this.proc = spawn(redisServerPath(), args, { cwd: this.dir, stdio: ["ignore", "ignore", "pipe"] });
    this.proc.stderr.resume();
    const exited = new Promise((r) => this.proc.once("exit", r));
    this.exited = exited;
    const ok = await h.waitFor(() => this.ping(), 10000, 20);
    if (!ok) {
      await this.stop();
      throw new Error("redis-server did not come up within 10 s");
    }
    return this;
  }

  /** Whether the server answers PING on its socket (synchronous: redis-cli). */
  ping() {
    try {
      return execFileSync("redis-cli", ["-s", this.socket, "ping"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() === "PONG";
    } catch {
      return false;
    }
  }

  async stop(signal = "SIGTERM") {
    if (this.proc === null) return;
    const p = this.proc;
    this.proc = null;
    if (p.exitCode === null && p.signalCode === null) p.kill(signal);
    await this.exited;
  }

  /** Stops and starts the server again on the same socket (and data, if it persists). */
  async restart({ downMs = 0 } = {}) {
    await this.stop(this.persist ? "SIGTERM" : "SIGKILL");
    if (downMs) await h.sleep(downMs);
    return this.start();
  }

  async dispose() {
    await this.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

module.exports = { RedisServer, requireRedis, redisServerPath };
