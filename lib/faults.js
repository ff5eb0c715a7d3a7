"use strict";

// Decides result.fault from facts the engine reports. The order is part of
// the contract (0.1.1): our own deadline, then what the exit status proves,
// and only then whether kern failed to start the box. Output the workload
// controls never decides a fault while kern's started bytes prove the box ran.
const binding = require("./binding");
const { escapeControl } = require("./errors");

const SIGKILL = 9;
const SIGTERM = 15;
const SIGSYS = 31;
const EXIT_SIGKILL = 128 + SIGKILL;
const EXIT_SIGTERM = 128 + SIGTERM;
const EXIT_SIGSYS = 128 + SIGSYS;
const STARTED_BYTE = 0x01;
const MEMORY_ENFORCED = 1;
const REPORT_EXITED = binding.PROTOCOL.INIT_END.EXITED; // the init's REPORT (protocol.h)

// kern binaries seen writing the started bytes: for those, silence on the
// started fd is itself proof that the box never existed.
const kernSpeaksStartedFd = new Set();

/** Byte i (0-3) of what kern wrote on KERN_STARTED_FD (RawRunResult's
 * startedWord holds the first four, the first in the low byte). */
function startedByte(raw, i) {
  return i < Math.min(raw.startedCount, 4) ? (raw.startedWord >>> (8 * i)) & 0xff : undefined;
}

function fault(type, message) {
  return { type, message };
}

// A `killed` fault says whether the memory cap explains it (an addition to
// 0.1.1, which keeps the fault type "killed" rather than add one).
function killed(oom, message) {
  return { type: "killed", message, oom };
}

// kern's cap byte, as the reason a SIGKILL is not put down to memory.
const CAP_STATES = {
  0: "no memory cap was set",
  2: "the memory cap was not enforced on this host",
};

function isKernNoise(line) {
  return /^kern: (warning|note|heads-up):/.test(line);
}

// kern's own account of why it failed: its `error:` line (and hints), or one
// of its `kern:` lines that is not a warning or a note.
function kernErrorLine(stderr) {
  const lines = stderr.split("\n").map((l) => l.trim()).filter(Boolean);
  const err = lines.find((l) => l.startsWith("error:"));
  if (err) return err;
  return lines.find((l) => l.startsWith("kern:") && !isKernNoise(l)) || null;
}

// The prefixes only kern (and the launcher it runs before the box exists)
// writes when it cannot start a box: 0.1.1's list, plus the pull errors of
// later kerns. With a kern that never wrote the started bytes these are all
// that may call a non-zero exit a startup failure, because the workload's own
// stderr shares the pipe: a program that prints "error: bad input" and exits
// 1 has a normal result.
const KERN_STARTUP_PREFIXES = ["kern:", "error: pull:", "error: sandbox:", "error: box:", "error: oci:",
  "error: image:", "error: curl failed:", "error: registry:", "error: manifest:"];

function kernStartupLine(stderr) {
  const lines = stderr.split("\n").map((l) => l.trim()).filter(Boolean);
  return lines.find((l) => l.includes("sandbox setup failed") ||
    (KERN_STARTUP_PREFIXES.some((p) => l.startsWith(p)) && !isKernNoise(l))) || null;
}

function exitCodeOf(raw) {
  if (typeof raw.exitCode === "number") return raw.exitCode;
  if (typeof raw.signal === "number") return 128 + raw.signal;
  return -1; // the status was taken by a foreign reaper
}

/**
 * raw: the engine's result; ctx: { kern, timeoutS, stderr, exitCode }.
 * Returns a fault object or null.
 */
function classify(raw, ctx) {
  const rc = ctx.exitCode;
  const boxRan = raw.startedCount > 0 && startedByte(raw, 0) === STARTED_BYTE;
  if (boxRan) kernSpeaksStartedFd.add(ctx.kern);

  if (raw.timedOut)
    return fault("timeout", `the call ran past its ${ctx.timeoutS}s limit; the binding killed the box`);
  // A process's kill() (its signal, then the box after the grace): the
  // caller asked for this end, whatever status it left.
  if (raw.killedByCaller) return null;
  if (raw.cancelled) {
    return killed(false,
      "the box was killed because its Sandbox was closed while it ran");
  }
  if (rc === EXIT_SIGSYS || raw.signal === SIGSYS)
    return fault("escape_blocked", "the seccomp filter blocked a system call (SIGSYS)");
  if (rc === EXIT_SIGKILL || raw.signal === SIGKILL) {
    // Outside our own deadline (decided above). kern's exit status cannot
    // tell a workload's own exit(137) from a SIGKILL, but the in-box init's
    // report can: a workload that chose 137 was not killed by anything.
    if (raw.reportEnd === REPORT_EXITED) {
      return killed(false, "the workload exited with status 137 itself (no SIGKILL); " +
        "not attributed to memory");
    }
    // Without it, with the cap enforced, a SIGKILL is taken to be the OOM killer's.
    const cap = boxRan && raw.startedCount >= 2 ? startedByte(raw, 1) : null;
    if (cap === MEMORY_ENFORCED) {
      return killed(true, "the box was killed (SIGKILL) with its memory cap enforced: out of " +
        "memory (raise memoryMb, or use less)");
    }
    return killed(false, `the box was killed (SIGKILL); not attributed to memory: ${CAP_STATES[cap] ??
      "kern did not say whether a memory cap was in force"}`);
  }
  if (rc === EXIT_SIGTERM || raw.signal === SIGTERM)
    return fault("timeout", "the box ran past kern's own time limit and was terminated (SIGTERM)");
  if (rc === 0 || boxRan) return null;

  // A kern seen writing the started bytes proves by its silence that no box
  // ran, so all of stderr is its own; otherwise only its marked lines count.
  const proven = kernSpeaksStartedFd.has(ctx.kern);
  const line = proven ? kernErrorLine(ctx.stderr) : kernStartupLine(ctx.stderr);
  if (line === null && !proven) return null;
  const why = line !== null ? line : `kern exited with status ${rc} before the box started`;
  return fault("startup_failed", escapeControl(why).slice(0, 500));
}

const LIMIT_STATES = { 0: "none", 1: "enforced", 2: "not_enforced" };

/** result.limits from kern's cap byte, or null when kern did not send it
 * (it failed before the box existed). */
function limitsOf(raw) {
  const boxRan = raw.startedCount >= 2 && startedByte(raw, 0) === STARTED_BYTE;
  const memory = boxRan ? LIMIT_STATES[startedByte(raw, 1)] : undefined;
  return memory === undefined ? null : { memory };
}

/** Whether fault is a `killed` fault, whose `oom` says if memory explains it. */
function isKilledFault(f) {
  return f !== null && typeof f === "object" && f.type === "killed" && typeof f.oom === "boolean";
}

module.exports = { startedByte, classify, exitCodeOf, kernErrorLine, isKilledFault, limitsOf };
