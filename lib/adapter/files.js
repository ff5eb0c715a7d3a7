"use strict";

// Host-side reads and writes for the adapters, on sbx.readFile and
// sbx.writeFile (openat2 beneath the workspace, no symlink followed,
// atomic writes that create the parent directories).
const { sandboxError } = require("../errors");
const { boxPath } = require("./paths");

// What a framework's "read a file" may load into memory at once.
const READ_MAX = 256 * 1024 * 1024;

/** The file's bytes, or null when there is no such file (or a component
 * of its path is no directory). */
async function readOrNull(sbx, rel, maxBytes = READ_MAX) {
  try {
    return await sbx.readFile(rel, { maxBytes });
  } catch (e) {
    if (e.code === "ENOENT" || e.code === "ENOTDIR") return null;
    throw e;
  }
}

/** Writes bytes at rel; a directory there is refused with a clear error. */
async function writeBytes(sbx, rel, bytes) {
  try {
    await sbx.writeFile(rel, bytes);
  } catch (e) {
    if (e.code === "EISDIR")
      throw sandboxError("ERR_SANDBOX_INVALID_PATH", `cannot write ${JSON.stringify(boxPath(rel))}: it is a directory`,
        { cause: e });
    throw e;
  }
}

/** Everything a web ReadableStream (or an async iterable) of bytes gives,
 * as one Buffer, refusing more than max bytes. */
async function collect(stream, max = READ_MAX, signal) {
  const parts = [];
  let n = 0;
  const it = typeof stream[Symbol.asyncIterator] === "function" ? stream : stream.values();
  for await (const chunk of it) {
    if (signal) signal.throwIfAborted();
    const b = typeof chunk === "string" ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    n += b.length;
    if (n > max)
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `the stream to write is larger than ${max} bytes`);
    parts.push(Buffer.from(b));
  }
  return Buffer.concat(parts, n);
}

/** A web ReadableStream over bytes, in chunks of 64 KiB. */
function streamOf(bytes) {
  let off = 0;
  return new ReadableStream({
    pull(c) {
      if (off >= bytes.length) {
        c.close();
        return;
      }
      const end = Math.min(bytes.length, off + 65536);
      c.enqueue(new Uint8Array(bytes.buffer, bytes.byteOffset + off, end - off));
      off = end;
    },
  }, { highWaterMark: 0 });
}

module.exports = { READ_MAX, readOrNull, writeBytes, collect, streamOf };
