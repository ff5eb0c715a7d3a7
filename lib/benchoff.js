"use strict";

// Bench switches (bench/README.md, "Speed mechanisms, A/B"): the speed
// mechanisms kept private for speed, each of which bench/ab.js turns off in
// one arm of an A/B. KERN_SANDBOX_BENCH_OFF is a comma list of their names,
// read once, here (the addon never calls getenv). Not for users: a run with
// any of them off is slower and otherwise the same. An unknown name throws,
// so that a typo cannot pass for an A/B whose B arm changed nothing.
const MECHANISMS = Object.freeze({
  "inbox-libc": "the init built without glibc (csrc/init/nolibc.c); off: KERN_SANDBOX_BENCH_INIT's binary",
  bootcache: "the Python boot's bytecode (lib/bootcache.js); off: every box compiles its text",
  "direct-cells": "a kernel's cell sent by the submitting thread (ks_sup_send_cell); off: every cell through the engine's thread",
  "claim-send": "a claim's SPEC frame sent by the claiming thread (claimSend) to the parked exec box; off: by the engine's thread at the takeover",
  "hand-stdout": "a process's stdout read by the JS thread itself from its start (BoxOptions.handStdout); off: through the engine's thread",
  "inline-ends": "a box whose end costs next to nothing (little output, no change list but a short one) ends on the supervisor's thread (ks__end_inline); off: every box ends through the scan thread",
  "turn-wakes": "the boxes a turn of JS submits after its first, woken once at the turn's end (csrc/napi/turn.c); off: each box wakes the engine's thread as it is submitted",
  propkeys: "the native entry points' option names kept as JS strings (csrc/napi/propkeys.c); off: each field read by its C string, which V8 looks up in its string table on every read",
  "mcp-early": "a plain run_code/run_command answered by the MCP server itself as its line is read (lib/mcp/server.js #early); off: through the SDK's Protocol",
});

/** The set of names in list (a comma list; blanks ignored); throws on one
 * that names no mechanism, and when inbox-libc is off without an init. */
function parse(list, init) {
  const off = new Set();
  for (const word of (list ?? "").split(",")) {
    const name = word.trim();
    if (name === "") continue;
    if (!Object.hasOwn(MECHANISMS, name))
      throw new Error(`kern-sandbox: KERN_SANDBOX_BENCH_OFF names no mechanism: ${JSON.stringify(name)} ` +
        `(known: ${Object.keys(MECHANISMS).join(", ")})`);
    off.add(name);
  }
  if (off.has("inbox-libc") && !init)
    throw new Error("kern-sandbox: KERN_SANDBOX_BENCH_OFF=inbox-libc needs KERN_SANDBOX_BENCH_INIT, " +
      "the path of an init linked against glibc (bench/ab.js builds one)");
  return off;
}

const OFF = parse(process.env.KERN_SANDBOX_BENCH_OFF, process.env.KERN_SANDBOX_BENCH_INIT);
const INIT = OFF.has("inbox-libc") ? process.env.KERN_SANDBOX_BENCH_INIT : null;

// The switches the engine itself checks (configure()'s benchOff).
const ENGINE_SWITCHES = ["inline-ends", "turn-wakes", "propkeys"];

/** The engine's switches that are off, as configure() takes them. */
function engineOff() {
  return ENGINE_SWITCHES.filter((name) => OFF.has(name)).join(",");
}

/** Whether mechanism name is off in this process. */
function isOff(name) {
  return OFF.has(name);
}

module.exports = { MECHANISMS, parse, isOff, engineOff, INIT };
