"use strict";

// Text encodings and 1-based line ranges for the AI SDK session's
// readTextFile/writeTextFile.
const { sandboxError } = require("../errors");

/** Decodes bytes with a WHATWG encoding label (default utf-8). */
function decode(bytes, encoding = "utf-8") {
  let dec;
  try {
    dec = new TextDecoder(encoding);
  } catch {
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", `unknown text encoding ${JSON.stringify(encoding)}`);
  }
  return dec.decode(bytes);
}

/** Encodes text: utf-8 (the default) and what Buffer knows (latin1,
 * utf16le, ascii, ...); other labels are refused. */
function encode(text, encoding = "utf-8") {
  if (typeof text !== "string")
    throw sandboxError("ERR_SANDBOX_INVALID_ARG", "writeTextFile's content must be a string");
  const label = String(encoding).toLowerCase();
  if (label === "utf-8" || label === "utf8") return Buffer.from(text, "utf8");
  if (Buffer.isEncoding(label) && label !== "base64" && label !== "hex" && label !== "base64url")
    return Buffer.from(text, label);
  throw sandboxError("ERR_SANDBOX_INVALID_ARG", `cannot encode to ${JSON.stringify(encoding)}: ` +
    "use utf-8, utf16le, latin1 or ascii");
}

/** Lines startLine..endLine (1-based, inclusive) of text, split and joined
 * on the file's own line ending (\r\n, \n or \r, found in that order); an
 * endLine past the end reads to the end. No range: the text as it is. */
function lineRange(text, startLine, endLine) {
  if (startLine == null && endLine == null) return text;
  for (const [name, v] of [["startLine", startLine], ["endLine", endLine]]) {
    if (v != null && (!Number.isInteger(v) || v < 1))
      throw sandboxError("ERR_SANDBOX_INVALID_ARG", `${name} must be an integer >= 1, got ${v}`);
  }
  const eol = text.includes("\r\n") ? "\r\n" : text.includes("\n") ? "\n" : text.includes("\r") ? "\r" : "\n";
  const lines = text.split(eol);
  const start = (startLine ?? 1) - 1;
  const end = Math.min(lines.length, endLine ?? lines.length);
  return lines.slice(start, end).join(eol);
}

module.exports = { decode, encode, lineRange };
