"use strict";

// Issue 34 item 1 against the double: `kern-sandbox mcp` driven by the SDK's
// own Client over stdio (StdioClientTransport spawning node
// bin/kern-sandbox.js mcp). The tools, their results for a model (rich
// results as text and images, faults and non-zero exits as isError),
// replies bounded with each cut marked and the whole output saved, paths
// contained, bad arguments and unknown tools, 20 concurrent calls, and a
// cancelled request that kills its box.
const assert = require("assert");
const crypto = require("crypto");
const h = require("./lib/harness");
const { connect, textOf } = require("./lib/mcp");
const { TOOL_NAMES, DEFAULT_LIMITS } = require("../lib/mcp");
const { version } = require("../package.json");

// A PNG's signature and a body that says which one it is: the server tells
// images by their first bytes, and the double's python3 has no matplotlib.
const PNG_CLASS = "class P:\n  def __init__(self, i): self.i = i\n" +
  "  def _repr_png_(self): return b'\\x89PNG\\r\\n\\x1a\\nimage %d' % self.i\n";

describe("MCP server: the SDK's Client over stdio (issue 34)", function () {
  this.timeout(h.underSanitizer ? 120000 : 30000);
  let c;
  const call = (name, args, opts) => c.client.callTool({ name, arguments: args }, undefined, opts);

  before(async function () {
    c = await connect();
  });
  after(async function () {
    if (c) await c.client.close();
  });

  it("lists the ten tools, each with a description and an object input schema; names itself", async function () {
    const { tools } = await c.client.listTools();
    assert.deepStrictEqual(tools.map((t) => t.name), [...TOOL_NAMES]);
    assert.deepStrictEqual(TOOL_NAMES, ["run_code", "run_command", "write_file", "read_file", "list_files",
      "start_process", "process_output", "write_stdin", "stop_process", "list_processes"]);
    for (const t of tools) {
      assert.ok(t.description.length > 40, t.name);
      assert.strictEqual(t.inputSchema.type, "object");
    }
    assert.deepStrictEqual(tools[0].inputSchema.properties.language.enum, ["python", "bash", "node"]);
    assert.deepStrictEqual(c.client.getServerVersion(), { name: "kern-sandbox", version });
  });

  it("run_code: stdout, display() and a last expression as text, in order; python, bash and node",
    async function () {
      const r = await call("run_code", { code: "print('out')\ndisplay('shown')\n6 * 7" });
      assert.strictEqual(r.isError, undefined);
      assert.strictEqual(r.content.length, 1, "text after text is one item");
      assert.match(r.content[0].text, /^exit code 0 \(\d+ ms\)\n--- stdout ---\nout\n\n--- result 1 ---\n'shown'\n--- result 2 ---\n42$/);
      assert.match(textOf(await call("run_code", { code: "echo $((2 + 3))", language: "bash" })), /stdout ---\n5\n/);
      assert.match(textOf(await call("run_code", { code: "console.log(2 ** 10)", language: "node" })), /stdout ---\n1024\n/);
    });

  it("run_code: images come back as image content (PNG, base64), within images per reply, the rest noted",
    async function () {
      const r = await call("run_code", { code: `${PNG_CLASS}display(P(0))` });
      assert.deepStrictEqual(r.content[1], { type: "image", mimeType: "image/png",
        data: Buffer.from("\x89PNG\r\n\x1a\nimage 0", "latin1").toString("base64") });
      const many = await call("run_code", { code: `${PNG_CLASS}for i in range(12): display(P(i))` });
      const images = many.content.filter((x) => x.type === "image");
      assert.strictEqual(images.length, DEFAULT_LIMITS.imagesPerReply);
      assert.match(textOf(many), /\[4 image\(s\) left out: result 9 \(PNG\) \(past 8 images in one reply\)/);
    });

  it("a fault or a non-zero exit is a result with isError and a message a model can act on", async function () {
    const bad = await call("run_code", { code: "import sys\nprint('partial')\n1/0" });
    assert.strictEqual(bad.isError, true);
    assert.match(textOf(bad), /^error: exit code 1 \(\d+ ms\): it failed; see stderr below\.\n--- stdout ---\npartial\n/);
    assert.match(textOf(bad), /--- stderr ---\nTraceback[^]*ZeroDivisionError/);
    const slow = await call("run_code", { code: "import time\ntime.sleep(30)", timeout_s: 0.3 });
    assert.strictEqual(slow.isError, true);
    assert.match(textOf(slow), /^error: timeout: the code ran past its time limit of 0.3 s and was killed\. .*timeout_s/);
    const cmd = await call("run_command", { command: "echo to-err >&2; exit 4" });
    assert.strictEqual(cmd.isError, true);
    assert.match(textOf(cmd), /^error: exit code 4 .*\n--- stderr ---\nto-err\n$/);
  });

  it("a flood is cut in the middle, the cut says how much, and the whole stream is a workspace file",
    async function () {
      const size = 3 * 1024 * 1024;
      const r = await call("run_code", { code: `import sys\n_ = sys.stdout.write('a' * ${size} + 'END')` });
      const text = textOf(r);
      assert.ok(text.length <= DEFAULT_LIMITS.replyChars, `${text.length}`);
      const m = text.match(/\[\.\.\. ([\d,]+) characters of stdout cut here \(([\d,]+) in all\); the whole stdout is in the workspace file (\/workspace\/\S+) /);
      assert.ok(m, text.slice(0, 300));
      assert.strictEqual(Number(m[2].replace(/,/g, "")), size + 3);
      assert.strictEqual(Number(m[1].replace(/,/g, "")), size + 3 - DEFAULT_LIMITS.streamChars + 0);
      assert.ok(text.endsWith("aEND"), text.slice(-200));
      const page = await call("read_file", { path: m[3], offset: size - 5 });
      assert.match(textOf(page), /^\[characters 3,145,723 to 3,145,731 of 3,145,731; that is the end\]\naaaaaEND$/);
      const listing = textOf(await call("list_files", { path: "/workspace/.mcp-output" }));
      assert.ok(listing.includes(`${m[3].slice("/workspace/".length)}\t${size + 3}`), listing);
    });

  it("10,000 display() results and ANSI escapes: the reply stays within its cap, valid text", async function () {
    const r = await call("run_code", { code: "for i in range(10000): display(i)\nprint('\\x1b[31mred\\x1b[0m \\x07bell', flush=True)\n" +
      "import sys; sys.stdout.buffer.write(b'bad \\xff\\xfe bytes')" });
    const text = textOf(r);
    assert.ok(text.length <= DEFAULT_LIMITS.replyChars, `${text.length}`);
    assert.match(text, /\[\.\.\. [\d,]+ more result\(s\) cut: the reply's cap is 64,000 characters\]/);
    assert.ok(text.includes("red \\x07bell"), "CSI sequences dropped, BEL shown escaped");
    assert.ok(!text.includes("\u001b"));
    assert.ok(text.includes("bad \ufffd\ufffd bytes"));
  });

  it("files: text, binary as base64, images read back as image content, other binary as a resource",
    async function () {
      assert.match(textOf(await call("write_file", { path: "/workspace/d/notes.txt", content: "héllo\n" })),
        /^wrote 7 bytes to \/workspace\/d\/notes.txt$/);
      assert.strictEqual(textOf(await call("read_file", { path: "d/notes.txt" })), "héllo\n");
      assert.match(textOf(await call("run_command", { command: "cat d/notes.txt" })), /héllo/);
      const png = Buffer.concat([Buffer.from("89504e470d0a1a0a", "hex"), crypto.randomBytes(64)]);
      await call("write_file", { path: "img.png", content: png.toString("base64"), encoding: "base64" });
      assert.deepStrictEqual((await call("read_file", { path: "img.png" })).content,
        [{ type: "image", mimeType: "image/png", data: png.toString("base64") }]);
      const bin = Buffer.from([0, 1, 2, 255, 0]);
      await call("write_file", { path: "b.bin", content: bin.toString("base64"), encoding: "base64" });
      const res = (await call("read_file", { path: "b.bin" })).content[0];
      assert.deepStrictEqual(res, { type: "resource", resource: { uri: "file:///workspace/b.bin",
        mimeType: "application/octet-stream", blob: bin.toString("base64") } });
      const missing = await call("read_file", { path: "nope.txt" });
      assert.strictEqual(missing.isError, true);
      assert.match(textOf(missing), /no file "nope.txt" in the workspace \(list_files shows what is there\)/);
    });

  it("paths stay in the workspace: .., absolute paths, a symlink a box planted", async function () {
    for (const p of ["../../etc/passwd", "/etc/passwd", "a/../../x"]) {
      const r = await call("read_file", { path: p });
      assert.strictEqual(r.isError, true, p);
      assert.doesNotMatch(textOf(r), /root:/);
    }
    assert.match(textOf(await call("write_file", { path: "/etc/x", content: "x" })), /outside the workspace/);
    await call("run_command", { command: "ln -s /etc/passwd planted" });
    const r = await call("read_file", { path: "planted" });
    assert.strictEqual(r.isError, true);
    assert.match(textOf(r), /ELOOP/);
    assert.doesNotMatch(textOf(r), /root:/);
    // Positive control: the same file is readable where it is.
    assert.match(require("fs").readFileSync("/etc/passwd", "utf8"), /root:/);
  });

  it("bad arguments are error results that say what the tool takes; an unknown tool is a protocol error",
    async function () {
      const cases = [
        [{}, /missing argument "code"; run_code takes code \(required\), language, timeout_s/],
        [{ code: 1 }, /argument "code" must be a string/],
        [{ code: "1", language: "ruby" }, /argument "language" must be one of "python", "bash", "node"/],
        [{ code: "1", timeout_s: -1 }, /argument "timeout_s" must be above 0/],
        [{ code: "1", extra: true }, /unknown argument "extra"/],
      ];
      for (const [args, re] of cases) {
        const r = await call("run_code", args);
        assert.strictEqual(r.isError, true);
        assert.match(textOf(r), re);
      }
      await assert.rejects(call("no_such_tool", {}), (e) => e.code === -32602 && /unknown tool "no_such_tool"; the tools are run_code/.test(e.message));
      assert.match(textOf(await call("run_code", { code: "print('still serving')" })), /still serving/);
    });

  it("20 concurrent tool calls each get their own result", async function () {
    const rs = await Promise.all(Array.from({ length: 20 }, (_, i) =>
      (i % 2 ? call("run_command", { command: `echo cmd-${i}` }) : call("run_code", { code: `print('code-${i}')` }))));
    rs.forEach((r, i) => {
      assert.strictEqual(r.isError, undefined);
      assert.match(textOf(r), new RegExp(`stdout ---\\n${i % 2 ? "cmd" : "code"}-${i}\\n`));
    });
  });

  it("a request the client cancels kills its box; the server goes on serving", async function () {
    const marker = `cancel-${crypto.randomBytes(4).toString("hex")}`;
    const ac = new AbortController();
    const p = call("run_command", { command: `echo ${marker} > /dev/null; sleep 30` }, { signal: ac.signal });
    assert.ok(await h.waitFor(() => h.processesWith(marker).length > 0, 10000), "the box started");
    ac.abort();
    await assert.rejects(p, /abort/i);
    assert.ok(await h.waitFor(() => h.processesWith(marker).length === 0, 5000), "the box is gone");
    assert.match(textOf(await call("run_code", { code: "print('after')" })), /after/);
  });

  it("process tools without sbx.spawn say so as an error result", async function () {
    if (typeof require("..").Sandbox.prototype.spawn === "function")
      return h.skipHost(this, "this Sandbox has spawn: test/94.mcp-processes covers the process tools");
    const r = await call("start_process", { command: "sleep 1" });
    assert.strictEqual(r.isError, true);
    assert.match(textOf(r), /no process API \(sbx\.spawn\)/);
    assert.match(textOf(await call("process_output", { id: "p9" })), /no process "p9"; none was started/);
  });
});
