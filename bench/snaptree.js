"use strict";

// The snapshot figure's tree and rounds, shared by bench/run.js (its
// snapshots figure) and bench/trees.js (the same rows, tree against tree).
const crypto = require("crypto");
const fs = require("fs");
const os = require("os");
const path = require("path");
const { execFileSync } = require("child_process");

const MiB = 1024 * 1024;
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

/** Fills dir with 10,000 files, 100 MiB: text that compresses about as
 * well as source code. */
function makeTree(dir) {
  const words = Array.from({ length: 512 }, () => crypto.randomBytes(6).toString("base64url"));
  let seed = 1;
  const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
  const chunk = [];
  let len = 0;
  while (len < 2 * MiB) {
    const w = words[rnd() % words.length];
    chunk.push(w);
    len += w.length + 1;
  }
  const text = Buffer.from(chunk.join(" "));
  for (let i = 0; i < 10000; i++) {
    const d = path.join(dir, `d${i % 100}`);
    if (i < 100) fs.mkdirSync(d, { recursive: true });
    const off = rnd() % (text.length - 10486);
    fs.writeFileSync(path.join(d, `f${i}.txt`), text.subarray(off, off + 10485));
  }
}

/** rounds of: tar -c of src against sbx.snapshot() (sbx's workspace is src),
 * then tar -xzf of that snapshot against restore() into a fresh Sandbox of
 * the package Sandbox is from; each time in ms, into out (a scratch
 * directory). Snapshots must be opted into (KERN_SANDBOX_SNAPSHOT=1). */
async function snapshotRounds(Sandbox, sbx, src, out, rounds) {
  const times = { ours: [], tars: [], oursX: [], tarsX: [] };
  for (let r = 0; r < rounds; r++) {
    const tarFile = path.join(out, "tar.tgz");
    let t0 = process.hrtime.bigint();
    execFileSync("tar", ["-I", "gzip -1", "-C", src, "-cf", tarFile, "."]);
    times.tars.push(ms(t0));
    const snap = path.join(out, "ours.tgz");
    t0 = process.hrtime.bigint();
    sbx.snapshot(snap);
    times.ours.push(ms(t0));

    const dt = fs.mkdtempSync(path.join(os.tmpdir(), "bench-xt-"));
    t0 = process.hrtime.bigint();
    execFileSync("tar", ["-C", dt, "-xzf", snap]);
    times.tarsX.push(ms(t0));
    const dx = fs.mkdtempSync(path.join(os.tmpdir(), "bench-xo-"));
    const s2 = await new Sandbox({ workspace: dx }).open();
    t0 = process.hrtime.bigint();
    s2.restore(snap);
    times.oursX.push(ms(t0));
    await s2.close();
    fs.rmSync(dt, { recursive: true, force: true });
    fs.rmSync(dx, { recursive: true, force: true });
  }
  return times;
}

module.exports = { makeTree, snapshotRounds };
