"use strict";

/** The outcome of one runCode()/run(). */
class ExecutionResult {
  constructor({ stdout, stderr, exitCode, durationMs, fault, files, truncated }) {
    this.stdout = stdout;
    this.stderr = stderr;
    this.exitCode = exitCode;
    this.durationMs = durationMs;
    this.fault = fault || null;
    this.files = files || [];
    this.truncated = !!truncated;
  }

  /** True iff the code exited 0 and the sandbox did not act. */
  get success() {
    return this.exitCode === 0 && this.fault === null;
  }
}

module.exports = { ExecutionResult };
