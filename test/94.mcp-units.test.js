"use strict";

// Issue 34: the MCP server's reply bounds in isolation (SECURITY-CASES G2):
// cuts never split a character and say how much they cut, control
// characters are shown escaped, image caps by count and bytes, read_file's
// pages stay within the reply's cap whatever the file holds.
const assert = require("assert");
const { Reply, cutMiddle, forModel, limitsOf, DEFAULT_LIMITS } = require("../lib/mcp/bound");
const { readFileTool, workspacePath } = require("../lib/mcp/files");

describe("MCP server: reply bounds (issue 34)", function () {
  it("cutMiddle keeps head and tail within max, never splitting a surrogate pair", function () {
    const s = "😀".repeat(1000);
    for (const max of [10, 11, 99, 100, 1001]) {
      const { head, tail, cut } = cutMiddle(s, max);
      assert.ok(head.length + tail.length <= max);
      assert.strictEqual(head.length + tail.length + cut, s.length);
      assert.strictEqual(head, head.toWellFormed());
      assert.strictEqual(tail, tail.toWellFormed());
    }
    assert.deepStrictEqual(cutMiddle("short", 10), { head: "short", tail: "", cut: 0 });
  });

  it("forModel drops terminal escapes and shows other control characters escaped", function () {
    assert.strictEqual(forModel("\u001b[1;31mred\u001b[0m\u001b]0;title\u0007 \u0000\t\r\n"), "red \\x00\t\r\n");
  });

  it("images: at most imagesPerReply, imageBytes each, replyImageBytes together; the rest noted", function () {
    const r = new Reply(limitsOf({ imagesPerReply: 2, imageBytes: 10, replyImageBytes: 15 }));
    r.image(Buffer.alloc(11), "image/png", "a");
    r.image(Buffer.alloc(8), "image/png", "b");
    r.image(Buffer.alloc(8), "image/png", "c");
    r.image(Buffer.alloc(4), "image/png", "d");
    r.image(Buffer.alloc(1), "image/png", "e");
    const out = r.finish();
    assert.strictEqual(out.content.filter((x) => x.type === "image").length, 2);
    assert.match(out.content.at(-1).text, /^\[3 image\(s\) left out: a \(11 bytes, over the 10-byte cap of one image\); c \(8 bytes, past the 15 bytes of images in one reply\); e \(past 2 images in one reply\)/);
    assert.throws(() => limitsOf({ bogus: 1 }), /unknown limit "bogus"/);
    assert.throws(() => limitsOf({ replyChars: -1 }), /whole number/);
  });

  it("read_file pages stay within the reply's cap, even for a file of control characters", async function () {
    const text = "\u0001".repeat(200000);
    const sbx = { readFile: async () => Buffer.from(text) };
    const first = await readFileTool(sbx, { path: "f" }, DEFAULT_LIMITS);
    const t = first.content[0].text;
    assert.ok(t.length <= DEFAULT_LIMITS.replyChars, `${t.length}`);
    const m = t.match(/^\[characters 0 to ([\d,]+) of 200,000; read on with offset (\d+)\]\n/);
    assert.ok(m, t.slice(0, 100));
    assert.strictEqual(Number(m[1].replace(/,/g, "")), Number(m[2]));
    assert.strictEqual(t.slice(m[0].length), "\\x01".repeat(Number(m[2])));
    const last = await readFileTool(sbx, { path: "f", offset: 199990 }, DEFAULT_LIMITS);
    assert.match(last.content[0].text, /^\[characters 199,990 to 200,000 of 200,000; that is the end\]\n/);
  });

  it("workspace paths: relative or under /workspace; anything else is refused with a reason", function () {
    assert.deepStrictEqual(workspacePath("/workspace/a/b"), { rel: "a/b" });
    assert.deepStrictEqual(workspacePath("a/b"), { rel: "a/b" });
    assert.deepStrictEqual(workspacePath("/workspace", { dir: true }), { rel: "" });
    assert.match(workspacePath("/workspace").error, /the workspace directory itself/);
    assert.match(workspacePath("/etc/passwd").error, /outside the workspace/);
  });
});

describe("MCP server: the fast paths keep the SDK's checks (issue 34)", function () {
  let types = null;
  before(function () {
    try {
      types = require("@modelcontextprotocol/sdk/types.js");
    } catch {
      this.skip(); // SKIP: @modelcontextprotocol/sdk is not installed
    }
  });

  it("the transport's hand check takes only messages JSONRPCMessageSchema takes (a subset)", function () {
    const { plainRequest } = require("../lib/mcp/transport");
    const cases = [
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", id: "a", method: "tools/call", params: { name: "run_code", arguments: { code: "1" } } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 1, method: "x", params: { task: { ttl: 1 } } },
      { jsonrpc: "2.0", id: 1.5, method: "x" }, { jsonrpc: "2.0", id: null, method: "x" },
      { jsonrpc: "2.0", id: 2 ** 60, method: "x" }, { jsonrpc: "2.0", id: {}, method: "x" },
      { jsonrpc: "2.0", id: 1, method: "x", params: null }, { jsonrpc: "2.0", id: 1, method: "x", params: [] },
      { jsonrpc: "2.0", id: 1, method: "x", params: { _meta: 5 } }, { jsonrpc: "2.0", id: 1, method: "x", extra: 1 },
      { jsonrpc: "2.0", id: 1, result: {} }, { jsonrpc: "1.0", id: 1, method: "x" }, { jsonrpc: "2.0", id: 1, method: 5 },
      JSON.parse('{"jsonrpc":"2.0","id":1,"method":"x","__proto__":{}}'), [], null, "x",
    ];
    let taken = 0;
    for (const c of cases) {
      if (!plainRequest(c)) continue;
      taken++;
      assert.ok(types.JSONRPCMessageSchema.safeParse(c).success, JSON.stringify(c));
    }
    assert.strictEqual(taken, 4); // the positive control: the common messages do take the fast path
  });

  it("every kind of tool result is a CallToolResult as the client parses it (the server no longer re-parses)", async function () {
    const { renderRun, errorResult, textResult } = require("../lib/mcp/render");
    const limits = limitsOf({ streamChars: 50, imagesPerReply: 1 });
    const ctx = { limits, save: async () => "/workspace/.mcp-output/0-stdout.txt", timeoutS: 5, maxOutputBytes: 100 };
    const run = (over) => ({ success: true, exitCode: 0, durationMs: 1, stdout: "", stderr: "", results: [], ...over });
    const results = [
      await renderRun(run({ stdout: "1\n" }), ctx),
      await renderRun(run({}), ctx),
      await renderRun(run({ success: false, exitCode: 1, stderr: "x".repeat(500), truncated: true }), ctx),
      await renderRun(run({ success: false, fault: { type: "timeout", message: "t" } }), ctx),
      await renderRun(run({ results: [{ png: Buffer.alloc(3) }, { jpeg: Buffer.alloc(2) }, { text: "t" }] }), ctx),
      errorResult("bad"), textResult(limits, "hello"),
    ];
    for (const r of results) {
      const parsed = types.CallToolResultSchema.safeParse(r);
      assert.ok(parsed.success, JSON.stringify(r));
      assert.deepStrictEqual(parsed.data, r);
    }
  });
});
