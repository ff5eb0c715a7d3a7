"use strict";

// The Sandbox's public fields as a call last saw them (lib/sandbox.js, the
// options cache): a call whose fields are all still what they were reuses
// the options it normalized then.

/** A public field's value as it is now: arrays and plain objects copied
 * (one level: their items are strings, or functions). */
function snapshotOf(v) {
  if (Array.isArray(v)) return [...v];
  if (v !== null && typeof v === "object" && !(v instanceof AbortSignal)) return { ...v };
  return v;
}

/** Whether v still is what snapshotOf(v) once gave. */
function sameAsSnapshot(v, snap) {
  if (Array.isArray(v)) {
    return Array.isArray(snap) && v.length === snap.length && v.every((x, i) => x === snap[i]);
  }
  if (v !== null && typeof v === "object" && !(v instanceof AbortSignal)) {
    if (snap === null || typeof snap !== "object" || Array.isArray(snap)) return false;
    const keys = Object.keys(v);
    return keys.length === Object.keys(snap).length && keys.every((k) => v[k] === snap[k]);
  }
  return v === snap;
}

module.exports = { snapshotOf, sameAsSnapshot };
