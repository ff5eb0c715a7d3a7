"use strict";

// write_file, read_file and list_files on the session's workspace. Every
// path goes through the Sandbox's own readFile/writeFile/listFiles, which
// resolve it beneath the workspace's descriptor and never follow a symlink
// a box planted; here a path under /workspace (what the code sees) is
// mapped to the workspace-relative one those take.
const { Reply, forModel, formatCount: n } = require("./bound");
const { errorResult } = require("./render");

/** A tool's path as the Sandbox takes it, or { error }. */
function workspacePath(p, { dir = false } = {}) {
  if (p === "/workspace" || p === "/workspace/" || p === "." || p === "./") {
    return dir ? { rel: "" } : { error: "that is the workspace directory itself, not a file: name a file in it" };
  }
  if (p.startsWith("/workspace/")) return { rel: p.slice("/workspace/".length) };
  if (p.startsWith("/"))
    return { error: `${JSON.stringify(forModel(p))} is outside the workspace: files live under /workspace; ` +
      "give a relative path (\"data.csv\") or one under /workspace" };
  return { rel: p };
}

function magicMime(buf) {
  if (buf.length >= 8 && buf.readUInt32BE(0) === 0x89504e47) return "image/png";
  if (buf.length >= 3 && buf[0] === 0xff && buf[1] === 0xd8 && buf[2] === 0xff) return "image/jpeg";
  if (buf.length >= 6 && /^GIF8[79]a$/.test(buf.toString("latin1", 0, 6))) return "image/gif";
  if (buf.length >= 12 && buf.toString("latin1", 0, 4) === "RIFF" && buf.toString("latin1", 8, 12) === "WEBP")
    return "image/webp";
  return null;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The text of buf, or null when it is binary (a NUL, or not UTF-8). */
function textOf(buf) {
  if (buf.subarray(0, 8192).includes(0)) return null;
  try {
    return utf8.decode(buf);
  } catch {
    return null;
  }
}

const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

async function writeFileTool(sbx, args) {
  const p = workspacePath(args.path);
  if (p.error) return errorResult(p.error);
  let data = args.content;
  if (args.encoding === "base64") {
    if (!BASE64.test(args.content)) return errorResult("content is not valid base64");
    data = Buffer.from(args.content, "base64");
  }
  await sbx.writeFile(p.rel, data);
  const bytes = typeof data === "string" ? Buffer.byteLength(data) : data.length;
  return { content: [{ type: "text", text: `wrote ${n(bytes)} bytes to /workspace/${forModel(p.rel)}` }] };
}

async function readFileTool(sbx, args, limits) {
  const p = workspacePath(args.path);
  if (p.error) return errorResult(p.error);
  let buf;
  try {
    buf = await sbx.readFile(p.rel, { maxBytes: limits.fileBytes });
  } catch (e) {
    if (e.code === "EFBIG")
      return errorResult(`${args.path} is larger than the ${n(limits.fileBytes)} bytes read_file reads; look at a part ` +
        "of it with run_command (head -c, tail, grep, sed -n '100,200p')");
    if (e.code === "ENOENT") return errorResult(`no file ${JSON.stringify(forModel(args.path))} in the workspace (list_files shows what is there)`);
    throw e;
  }
  const reply = new Reply(limits);
  const mime = magicMime(buf);
  if (mime !== null) {
    reply.image(buf, mime, `${args.path}`);
    return reply.finish();
  }
  const text = textOf(buf);
  if (text === null) {
    if (buf.length > limits.resourceBytes)
      return errorResult(`${args.path} is a binary file of ${n(buf.length)} bytes, over the ${n(limits.resourceBytes)}-byte ` +
        "cap for binary content; inspect it with run_code instead");
    return { content: [{ type: "resource", resource: { uri: `file:///workspace/${encodeURI(p.rel)}`,
      mimeType: "application/octet-stream", blob: buf.toString("base64") } }] };
  }
  const offset = Math.min(args.offset ?? 0, text.length);
  // The page's end in the file's own characters (forModel may lengthen
  // what it shows), never inside a surrogate pair.
  const room = reply.room(limits.replyChars) - 100;
  let end = Math.min(text.length, offset + room);
  let page;
  for (;;) {
    if (end < text.length && end > offset && /[\ud800-\udbff]/.test(text[end - 1])) end--;
    page = forModel(text.slice(offset, end));
    if (page.length <= room || end <= offset + 1) break;
    end = offset + Math.floor((end - offset) * (room / page.length) * 0.95);
  }
  if (offset === 0 && end >= text.length) {
    reply.text(text);
    return reply.finish();
  }
  const next = end < text.length ? `; read on with offset ${end}` : "; that is the end";
  reply.content.push({ type: "text", text: `[characters ${n(offset)} to ${n(end)} of ${n(text.length)}${next}]\n${page}` });
  return reply.finish();
}

async function listFilesTool(sbx, args, limits) {
  const p = workspacePath(args.path ?? "", { dir: true });
  if (p.error) return errorResult(p.error);
  const files = (await sbx.listFiles(p.rel)).map((f) => ({ path: Buffer.isBuffer(f.path) ? f.path.toString() : f.path, size: f.size }));
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  if (files.length === 0) return { content: [{ type: "text", text: "(no files)" }] };
  const lines = [];
  let room = limits.replyChars - 200;
  for (const f of files) {
    const line = `${forModel(f.path)}\t${f.size}`;
    if (line.length + 1 > room) break;
    room -= line.length + 1;
    lines.push(line);
  }
  const cut = files.length - lines.length;
  const more = cut > 0 ? `\n[... ${n(cut)} more files cut: list a directory with path]` : "";
  return { content: [{ type: "text", text: `${files.length} file(s) (path, bytes):\n${lines.join("\n")}${more}` }] };
}

module.exports = { writeFileTool, readFileTool, listFilesTool, workspacePath };
