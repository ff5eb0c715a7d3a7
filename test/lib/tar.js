"use strict";

// Hand-made USTAR archives for restore() tests. Every field can be given as
// raw bytes, so a test can write what no well-behaved tar writer would: a
// name without its NUL, a NUL inside a name, a base-256 or negative size, a
// typeflag nobody supports. The checksum is computed last (the unsigned byte
// sum, as POSIX says) unless the test supplies its own.
const fs = require("fs");
const zlib = require("zlib");

const BLOCK = 512;

// [offset, length] of the header fields a test may set.
const FIELDS = {
  name: [0, 100], mode: [100, 8], uid: [108, 8], gid: [116, 8], size: [124, 12],
  mtime: [136, 12], chksum: [148, 8], typeflag: [156, 1], linkname: [157, 100],
  magic: [257, 8], uname: [265, 32], gname: [297, 32], prefix: [345, 155], pad: [500, 12],
};

const MAGIC = { posix: Buffer.from("ustar\x0000", "latin1"), gnu: Buffer.from("ustar  \x00", "latin1") };

/** len-1 zero-padded octal digits and a NUL: the form tar writers use. */
function octal(n, len) {
  return `${n.toString(8).padStart(len - 1, "0")}\0`;
}

/** The unsigned sum of the block with the checksum field read as spaces. */
function checksumOf(block) {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i];
  return sum;
}

/** One 512-byte header. Fields are strings (latin1, so "\0" and "\xff" are
 * single bytes) or Buffers; a value longer than its field throws, so a test
 * never truncates silently. `data` sets the size field when `size` is not given. */
function header(f) {
  const b = Buffer.alloc(BLOCK);
  const fields = {
    mode: octal(0o644, 8), uid: octal(0, 8), gid: octal(0, 8),
    size: octal(f.data ? Buffer.byteLength(f.data) : 0, 12), mtime: octal(0, 12),
    typeflag: "0", magic: MAGIC.posix, ...f,
  };
  if (fields.magic === "gnu" || fields.magic === "posix") fields.magic = MAGIC[fields.magic];
  delete fields.data;
  for (const [key, value] of Object.entries(fields)) {
    if (!(key in FIELDS)) throw new Error(`unknown header field ${key}`);
    const [off, len] = FIELDS[key];
    const bytes = Buffer.isBuffer(value) ? value : Buffer.from(String(value), "latin1");
    if (bytes.length > len) throw new Error(`${key} is ${bytes.length} bytes, the field ${len}`);
    bytes.copy(b, off);
  }
  if (f.chksum === undefined) b.write(`${checksumOf(b).toString(8).padStart(6, "0")}\0 `, 148, "latin1");
  return b;
}

/** A member: its header, then its data padded to a whole block. */
function member(f) {
  const data = f.data === undefined ? Buffer.alloc(0) : Buffer.from(f.data);
  const pad = Buffer.alloc((BLOCK - (data.length % BLOCK)) % BLOCK);
  return Buffer.concat([header(f), data, pad]);
}

/** Writes members (header specs or raw Buffers) as a .tar.gz at file, with
 * the two zero blocks that end an archive unless end is false. */
function writeTgz(file, members, { end = true } = {}) {
  const parts = members.map((m) => (Buffer.isBuffer(m) ? m : member(m)));
  if (end) parts.push(Buffer.alloc(2 * BLOCK));
  fs.writeFileSync(file, zlib.gzipSync(Buffer.concat(parts)));
  return file;
}

/** Header fields for a path, split into ustar's prefix and name when it is
 * longer than the name field (at the last "/" that makes both fit). */
function nameFields(name) {
  if (Buffer.byteLength(name) <= FIELDS.name[1]) return { name };
  const cut = name.lastIndexOf("/");
  if (cut < 0) throw new Error(`cannot encode ${name} in ustar`);
  return { prefix: name.slice(0, cut), name: name.slice(cut + 1) };
}

/** A valid tar stream (not compressed): members { name, data } (files) or
 * { name, dir: true }, then the end marker. */
function tarOf(members) {
  const parts = members.map((m) => (m.dir
    ? member({ ...nameFields(m.name), typeflag: "5", mode: octal(0o755, 8) })
    : member({ ...nameFields(m.name), data: m.data === undefined ? "" : m.data })));
  parts.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(parts);
}

module.exports = { BLOCK, octal, checksumOf, header, member, writeTgz, tarOf };
