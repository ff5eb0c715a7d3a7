"use strict";

// result.files from the engine's packed form (csrc/napi/fs.c,
// ks_napi_changes_value): plain JS builds 10,000 objects in about a
// millisecond, where N-API calls per file blocked the event loop for tens.
const KINDS = ["created", "modified"];

/** [{ path, size, change }] from { paths, sizes, kinds, raw }, or from 0
 * (a run's result when nothing changed). */
function unpackChanges(packed) {
  if (packed === 0) return [];
  const { paths, sizes, kinds, raw } = packed;
  const n = sizes.length;
  const names = n > 0 ? paths.split("\0") : [];
  const files = new Array(n);
  for (let i = 0; i < n; i++) {
    const path = raw !== null && raw[i] !== undefined ? raw[i] : names[i];
    files[i] = { path, size: sizes[i], change: KINDS[kinds[i]] };
  }
  return files;
}

module.exports = { unpackChanges };
