"use strict";

// Replies bounded for a model. What a box prints is untrusted and may be
// huge (a 1 GB flood, 10,000 display results, a 50 MB PNG): every reply has
// caps per stream, on its text as a whole, and on its images (how many, how
// many bytes), and every cut says how much it cut (SECURITY-CASES G2).

/** The caps of one reply; createMcpServer({ limits }) overrides any of them. */
const DEFAULT_LIMITS = Object.freeze({
  streamChars: 16000, // of stdout, of stderr, of a process's output, of one file page
  replyChars: 64000, // all the text of one reply
  imagesPerReply: 8,
  imageBytes: 5 * 1024 * 1024, // one image, decoded: larger ones are left out with a note
  replyImageBytes: 8 * 1024 * 1024, // all the images of one reply
  fileBytes: 16 * 1024 * 1024, // read_file reads at most this much of a file
  resourceBytes: 1024 * 1024, // a binary file that is not an image, as a resource
});

function limitsOf(given) {
  const out = { ...DEFAULT_LIMITS };
  for (const [k, v] of Object.entries(given ?? {})) {
    if (!(k in DEFAULT_LIMITS)) throw new TypeError(`createMcpServer: unknown limit ${JSON.stringify(k)}`);
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`createMcpServer: limits.${k} must be a whole number >= 0`);
    out[k] = v;
  }
  return out;
}

// Terminal escapes mean nothing to a model and can hide text from a human
// reading a transcript: CSI and OSC sequences go, other control characters
// but tab, newline and carriage return are shown escaped.
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|\u001b[@-Z\\-_]/g;
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;

function forModel(text) {
  const s = text.replace(ANSI, "").replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
  // A lone surrogate (the box can print anything valid in UTF-16 only
  // through our own cuts) would not survive as UTF-8.
  return typeof s.toWellFormed === "function" ? s.toWellFormed() : s;
}

/** True when index i of s falls between the halves of a surrogate pair. */
function splitsPair(s, i) {
  const c = s.charCodeAt(i - 1);
  return i > 0 && i < s.length && c >= 0xd800 && c <= 0xdbff;
}

/** text within max characters: its head and its tail with the middle cut,
 * and how many characters were cut (0 when it fits). A cut never splits a
 * character: the head ends before a pair, the tail starts after one. */
function cutMiddle(text, max) {
  if (text.length <= max) return { head: text, tail: "", cut: 0 };
  let headLen = Math.floor(max * 0.7);
  if (splitsPair(text, headLen)) headLen--;
  let tailStart = text.length - (max - headLen);
  if (splitsPair(text, tailStart)) tailStart++;
  return { head: text.slice(0, headLen), tail: text.slice(tailStart), cut: tailStart - headLen };
}

const n = (x) => x.toLocaleString("en-US");

/** The content of one tool result, built within the caps. */
class Reply {
  constructor(limits) {
    this.limits = limits;
    this.content = [];
    this.textLeft = limits.replyChars;
    this.imagesLeft = limits.imagesPerReply;
    this.imageBytesLeft = limits.replyImageBytes;
    this.imagesDropped = [];
    this.isError = false;
  }

  /** Room left for text, keeping some for the notes that may follow. */
  room(max = Infinity) {
    return Math.max(0, Math.min(max, this.textLeft - 400));
  }

  /** Adds text as it is, cut at the reply's cap with a marker; text right
   * after text joins it (one item, a newline between), so that 10,000
   * small results are one item, not 10,000. */
  text(s) {
    const last = this.content[this.content.length - 1];
    const joins = last !== undefined && last.type === "text";
    if (joins) this.textLeft -= 1;
    const { head, tail, cut } = cutMiddle(forModel(s), this.room());
    const out = cut === 0 ? head : `${head}\n[... ${n(cut)} characters cut here: the reply's cap is ` +
      `${n(this.limits.replyChars)} ...]\n${tail}`;
    this.textLeft -= out.length;
    if (joins) last.text += `\n${out}`;
    else this.content.push({ type: "text", text: out });
  }

  /** Adds an image, or notes why it was left out. */
  image(buf, mimeType, what) {
    if (buf.length > this.limits.imageBytes)
      this.imagesDropped.push(`${what} (${n(buf.length)} bytes, over the ${n(this.limits.imageBytes)}-byte cap of one image)`);
    else if (this.imagesLeft === 0) this.imagesDropped.push(`${what} (past ${this.limits.imagesPerReply} images in one reply)`);
    else if (buf.length > this.imageBytesLeft)
      this.imagesDropped.push(`${what} (${n(buf.length)} bytes, past the ${n(this.limits.replyImageBytes)} bytes of images in one reply)`);
    else {
      this.imagesLeft--;
      this.imageBytesLeft -= buf.length;
      this.content.push({ type: "image", data: buf.toString("base64"), mimeType });
    }
  }

  /** The tool result. */
  finish() {
    if (this.imagesDropped.length > 0) {
      const shown = this.imagesDropped.slice(0, 3).join("; ");
      const more = this.imagesDropped.length > 3 ? `; and ${n(this.imagesDropped.length - 3)} more` : "";
      // Within the room text() keeps for its notes: three reasons at most, each short.
      this.content.push({ type: "text", text: `[${n(this.imagesDropped.length)} image(s) left out: ${shown}${more}. ` +
        "Save fewer or smaller figures (savefig) and read_file them.]" });
    }
    if (this.content.length === 0) this.content.push({ type: "text", text: "(no output)" });
    return this.isError ? { content: this.content, isError: true } : { content: this.content };
  }
}

module.exports = { DEFAULT_LIMITS, limitsOf, Reply, cutMiddle, forModel, formatCount: n };
