"use strict";

// Cancellation with an AbortSignal (an addition to 0.1.1). An aborted call
// rejects as Node's own APIs do: an Error named "AbortError", code
// "ABORT_ERR", the signal's reason as its cause; here it also carries what
// the box printed before it was killed.

/** The rejection of an aborted call. */
class AbortError extends Error {
  constructor(message = "The operation was aborted", options) {
    super(message, options);
    this.name = "AbortError";
    this.code = "ABORT_ERR";
    this.stdout = "";
    this.stderr = "";
  }
}

/** The AbortError for signal, with the output captured so far. */
function abortError(signal, { stdout = "", stderr = "" } = {}) {
  const err = new AbortError(undefined, { cause: signal.reason });
  err.stdout = stdout;
  err.stderr = stderr;
  return err;
}

// The calls waiting on each signal. A signal carries one listener of ours
// however many calls share it, so 20 calls on one signal neither trip Node's
// MaxListenersExceededWarning nor cost 20 listeners; the last call to settle
// removes it.
const waiting = new WeakMap(); // AbortSignal -> { calls: Set<fn>, listener }

/**
 * Calls fn once if signal aborts before the returned dispose() runs.
 * dispose() forgets fn, and the signal's listener goes with the last one, so
 * a long-lived signal shared by many calls keeps nothing per finished call.
 * Without a signal it does nothing.
 */
function onAbort(signal, fn) {
  if (signal === null) return () => {};
  let entry = waiting.get(signal);
  if (entry === undefined) {
    const calls = new Set();
    const listener = () => {
      waiting.delete(signal);
      for (const call of calls) call();
    };
    entry = { calls, listener };
    waiting.set(signal, entry);
    signal.addEventListener("abort", listener, { once: true });
  }
  const call = () => fn();
  entry.calls.add(call);
  return () => {
    if (!entry.calls.delete(call) || entry.calls.size > 0 || waiting.get(signal) !== entry) return;
    waiting.delete(signal);
    signal.removeEventListener("abort", entry.listener);
  };
}

/** Rejects with the AbortError as soon as signal aborts; else as promise does. */
async function raceAbort(promise, signal) {
  if (signal === null) return promise;
  if (signal.aborted) throw abortError(signal);
  let dispose = () => {};
  const aborted = new Promise((_, reject) => {
    dispose = onAbort(signal, () => reject(abortError(signal)));
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    dispose();
  }
}

module.exports = { AbortError, abortError, onAbort, raceAbort };
