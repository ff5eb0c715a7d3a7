"use strict";

/** The outcome of one runCode()/run(). */
class ExecutionResult {
  constructor({ stdout, stderr, exitCode, durationMs, fault, files, truncated, usage, limits }) {
    this.stdout = stdout;
    this.stderr = stderr;
    this.exitCode = exitCode;
    this.durationMs = durationMs;
    this.fault = fault || null;
    this.files = files || [];
    this.truncated = !!truncated;
    // An addition to 0.1.1: { cpuUserMs, cpuSystemMs, maxRssKb } or null.
    this.usage = usage || null;
    // An addition to 0.1.1: { memory: "enforced" | "not_enforced" | "none" } or null.
    this.limits = limits || null;
  }

  /** True iff the code exited 0 and the sandbox did not act. */
  get success() {
    return this.exitCode === 0 && this.fault === null;
  }
}

module.exports = { ExecutionResult };
