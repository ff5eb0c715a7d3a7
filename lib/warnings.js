"use strict";

// Process warnings (process.emitWarning) for host facts a caller should know
// once, not read on every result: kern's own notices are turned off
// (KERN_QUIET, --allow-uncapped), and what they said is data on the result.
const TYPE = "KernSandboxWarning";
const warned = new Set();

const CAPS = {
  memory: {
    code: "KERN_SANDBOX_MEMORY_NOT_ENFORCED",
    message: (mb) => `the memory cap (memoryMb ${mb}) is not enforced on this host: kern runs ` +
      "boxes without it (result.limits.memory is \"not_enforced\")",
    detail: "This host does not delegate the cgroup v2 memory controller to kern (WSL2's default " +
      "kernel, cgroup v1 hosts, many CI runners). Boxes stay isolated, but their memory is " +
      "unbounded. Pass requireLimits: true to refuse such boxes; `npx kern-sandbox doctor` shows " +
      "the host's state.",
  },
};

/** Warns once per process that a cap the caller asked for is not enforced. */
function warnUnenforced(cap, value) {
  if (warned.has(cap)) return;
  warned.add(cap);
  const w = CAPS[cap];
  process.emitWarning(w.message(value), { type: TYPE, code: w.code, detail: w.detail });
}

// A Sandbox option (a symbol: no caller can spell it by accident) that keeps
// a session's boxes from warning: doctor()'s probe reports the caps itself.
const NO_CAP_WARNING = Symbol("kern-sandbox.noCapWarning");

module.exports = { warnUnenforced, WARNING_TYPE: TYPE, NO_CAP_WARNING };
