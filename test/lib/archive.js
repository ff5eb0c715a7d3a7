"use strict";

// Helpers of the snapshot/restore suites (test/70-73): views of a workspace
// tree, the "refused and left exactly as it was" check, and a byte-exact gzip
// writer (the tar side is ./tar.js), so a test can build any archive, valid
// or hostile, one field at a time, without starting Python.
const assert = require("assert");
const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const zlib = require("zlib");
const { SandboxError } = require("../..");
const { tarOf } = require("./tar");

/** Files under dir as { path: hex content or "-> target" }; with
 * { dirs: true } directories too, as "dir". */
function treeOf(dir, { dirs = false } = {}) {
  const out = {};
  const walk = (d, rel) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (dirs) out[r] = "dir";
        walk(path.join(d, e.name), r);
      } else out[r] = e.isSymbolicLink() ? `-> ${fs.readlinkSync(path.join(d, e.name))}` :
        fs.readFileSync(path.join(d, e.name)).toString("hex");
    }
  };
  walk(dir, "");
  return out;
}

/** Every entry under dir (dotfiles, staging dirs and special files too):
 * type, mode, owner, link count and content, so "exactly as it was" means
 * exactly (a hardlink made to a file shows in its link count). */
function census(dir) {
  const out = {};
  const walk = (d, rel) => {
    for (const name of fs.readdirSync(d).sort()) {
      const p = path.join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = fs.lstatSync(p);
      const kind = st.isDirectory() ? "d" : st.isFile() ? "f" : st.isSymbolicLink() ? "l" : "s";
      out[r] = `${kind} ${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid} ` +
        (st.isFile() ? `${st.nlink} ${crypto.createHash("sha1").update(fs.readFileSync(p)).digest("hex")}` : "");
      if (st.isDirectory()) walk(p, r);
    }
  };
  walk(dir, "");
  return out;
}

/** A restore that must be refused with a SandboxError matching re, the
 * workspace left exactly as it was; returns the error. */
function refusedIntact(sbx, ws, arc, re) {
  const before = census(ws);
  let err = null;
  assert.throws(() => sbx.restore(arc), (e) => {
    err = e;
    assert.ok(e instanceof SandboxError, String(e));
    assert.match(e.message, re);
    return true;
  });
  assert.deepStrictEqual(census(ws), before, "the workspace is exactly as it was");
  return err;
}

// ---- gzip (RFC 1952), field by field -------------------------------------------

let crcTable = null;

/** CRC-32 of buf, continuing from prev (zlib.crc32 where Node has it). */
function crc32(buf, prev = 0) {
  if (typeof zlib.crc32 === "function") return zlib.crc32(buf, prev);
  if (crcTable === null) {
    crcTable = new Int32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c;
    }
  }
  let c = ~prev;
  for (let i = 0; i < buf.length; i++) c = crcTable[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

/**
 * One gzip member of raw, built by hand: flags is the FLG byte; extra is
 * put verbatim after the fixed 10-byte header (FEXTRA/FNAME/FCOMMENT
 * fields); hcrc adds FHCRC's two bytes (true: the right CRC16, a number:
 * that value); crc and isize override the trailer.
 */
function gzMember(raw, { flags = 0, extra = Buffer.alloc(0), hcrc = false, crc, isize } = {}) {
  let head = Buffer.concat([Buffer.from([0x1f, 0x8b, 8, flags, 0, 0, 0, 0, 0, 3]), extra]);
  if (hcrc !== false) {
    const v = hcrc === true ? crc32(head) & 0xffff : hcrc;
    const two = Buffer.alloc(2);
    two.writeUInt16LE(v);
    head = Buffer.concat([head, two]);
  }
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc === undefined ? crc32(raw) : crc >>> 0, 0);
  trailer.writeUInt32LE(isize === undefined ? raw.length % 2 ** 32 : isize >>> 0, 4);
  return Buffer.concat([head, zlib.deflateRawSync(raw, { level: 1 }), trailer]);
}

/**
 * One valid gzip member of head followed by zeros up to total bytes (a
 * multiple of 8 MiB), built without holding total bytes in memory: each
 * 8 MiB piece is deflated once, ending in a full flush (no reference
 * before it), and repeated. isize overrides the trailer's ISIZE.
 */
function gzZeros(head, total, { isize } = {}) {
  const piece = 8 * 2 ** 20;
  assert.ok(total % piece === 0 && total > 0 && head.length <= piece);
  const first = Buffer.alloc(piece);
  head.copy(first);
  const zero = Buffer.alloc(piece);
  const opts = { level: 1, finishFlush: zlib.constants.Z_FULL_FLUSH };
  const dz = zlib.deflateRawSync(zero, opts);
  let crc = crc32(first);
  for (let i = 1; i < total / piece; i++) crc = crc32(zero, crc);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(isize === undefined ? total % 2 ** 32 : isize >>> 0, 4);
  return Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]),
    zlib.deflateRawSync(first, opts), ...Array(total / piece - 1).fill(dz),
    Buffer.from([3, 0]), /* a final, empty fixed-Huffman block */ trailer]);
}

/** The members of an uncompressed ustar stream, in order: { name, type, data }. */
function tarEntries(raw) {
  const out = [];
  for (let off = 0; off + 512 <= raw.length;) {
    const hd = raw.subarray(off, off + 512);
    if (hd.every((x) => x === 0)) break;
    const field = (o, l) => {
      const f = hd.subarray(o, o + l);
      const z = f.indexOf(0);
      return f.subarray(0, z < 0 ? l : z).toString();
    };
    const prefix = field(345, 155);
    const size = parseInt(field(124, 12).trim(), 8);
    out.push({ name: prefix ? `${prefix}/${field(0, 100)}` : field(0, 100),
      type: String.fromCharCode(hd[156]), data: raw.subarray(off + 512, off + 512 + size) });
    off += 512 + Math.ceil(size / 512) * 512;
  }
  return out;
}

module.exports = { treeOf, census, refusedIntact, tarOf, crc32, gzMember, gzZeros, tarEntries };
