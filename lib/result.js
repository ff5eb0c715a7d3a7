"use strict";

const NOTHING_MISSED = Object.freeze({ stdout: Object.freeze({ chunks: 0, bytes: 0 }),
  stderr: Object.freeze({ chunks: 0, bytes: 0 }) });

/** ExecutionResult.missedOutput from a raw run or cell result. */
function missedOutputOf(raw) {
  if (raw.stdoutMissedChunks === 0 && raw.stderrMissedChunks === 0) return NOTHING_MISSED;
  return { stdout: { chunks: raw.stdoutMissedChunks, bytes: raw.stdoutMissedBytes },
    stderr: { chunks: raw.stderrMissedChunks, bytes: raw.stderrMissedBytes } };
}

/** The outcome of one runCode()/run(). */
class ExecutionResult {
  constructor({ stdout, stderr, exitCode, durationMs, fault, files, truncated, usage, limits,
    results, missedOutput }) {
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
    // An addition to 0.1.1: the rich results of a Python call (Result).
    this.results = results || [];
    // An addition to 0.1.1: what onStdout/onStderr did not get, per stream.
    this.missedOutput = missedOutput || NOTHING_MISSED;
  }

  /** True iff the code exited 0 and the sandbox did not act. */
  get success() {
    return this.exitCode === 0 && this.fault === null;
  }
}

// The formats a Result names, by MIME type, in the order formats() lists them.
const FORMATS = [
  ["text", "text/plain"],
  ["html", "text/html"],
  ["markdown", "text/markdown"],
  ["svg", "image/svg+xml"],
  ["png", "image/png"],
  ["jpeg", "image/jpeg"],
  ["latex", "text/latex"],
  ["json", "application/json"],
];

/**
 * One rich result of a Python call, as Jupyter's display data: what
 * `display(obj)` showed, the value of a trailing expression, or an open
 * matplotlib figure. `data` maps each MIME type to a string (binary
 * formats base64-encoded); the getters read it.
 */
class Result {
  constructor(data) {
    this.data = data;
  }

  #text(mime) {
    const v = this.data[mime];
    return typeof v === "string" ? v : null;
  }

  #binary(mime) {
    const v = this.data[mime];
    return typeof v === "string" ? Buffer.from(v, "base64") : null;
  }

  /** text/plain: the object's repr(). */
  get text() { return this.#text("text/plain"); }
  get html() { return this.#text("text/html"); }
  get markdown() { return this.#text("text/markdown"); }
  get svg() { return this.#text("image/svg+xml"); }
  get latex() { return this.#text("text/latex"); }
  /** application/json, as JSON text (JSON.parse it for the value). */
  get json() { return this.#text("application/json"); }
  /** image/png, decoded. */
  get png() { return this.#binary("image/png"); }
  /** image/jpeg, decoded. */
  get jpeg() { return this.#binary("image/jpeg"); }

  /** The MIME types present ("text/plain", "text/html", ...), as 0.1.23's
   * formats(): the known ones in FORMATS' order, then any other. */
  formats() {
    const known = new Set(FORMATS.map(([, mime]) => mime));
    return [...FORMATS.filter(([, mime]) => mime in this.data).map(([, mime]) => mime),
      ...Object.keys(this.data).filter((mime) => !known.has(mime))];
  }

  /** formats() by short name ("text", "html", "png", ...), a MIME type
   * without one as it is. */
  formatNames() {
    const names = new Map(FORMATS.map(([name, mime]) => [mime, name]));
    return this.formats().map((mime) => names.get(mime) ?? mime);
  }
}

/** Result objects from the engine's JSON texts; one that is not an object of
 * strings (the box can send anything) is left out. */
function resultsOf(texts) {
  const out = [];
  for (const text of texts) {
    let data;
    try {
      data = JSON.parse(text);
    } catch {
      continue;
    }
    if (data === null || typeof data !== "object" || Array.isArray(data)) continue;
    // fromEntries defines properties: a "__proto__" key stays a key.
    out.push(new Result(Object.fromEntries(Object.entries(data).filter(([, v]) => typeof v === "string"))));
  }
  return out;
}

/** What the call's processes used, from kern's rusage (kern and the box
 * processes it reaped); null when no status was taken (a foreign reaper took
 * it, or kern could not be reaped in time). */
function usageOf(raw) {
  if (!raw.statusKnown) return null;
  const ms = (v) => Math.round(v * 1000) / 1000;
  return { cpuUserMs: ms(raw.userCpuMs), cpuSystemMs: ms(raw.systemCpuMs), maxRssKb: raw.maxRssKb };
}

module.exports = { usageOf, ExecutionResult, Result, resultsOf, missedOutputOf };
