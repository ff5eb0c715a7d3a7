"use strict";

// Issue 34, item 2-3: kern-sandbox/ai's session against the AI SDK 7
// interface (Experimental_SandboxSession, every member), driven by hand and
// by generateText with the SDK's MockLanguageModelV3; and the code
// interpreter tool through a tool loop.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const h = require("./lib/harness");
const { v3Step, canLoad, streamOfStrings, textOf } = require("./lib/adapters");
const { Sandbox } = require("..");
const { POOL_STATS } = require("../lib/internal");
const { createSandboxSession, codeInterpreterTool } = require("../lib/ai");

describe("kern-sandbox/ai: the AI SDK sandbox session (issue 34)", function () {
  this.timeout(h.underSanitizer ? 120000 : 30000);
  let s;
  before(function () {
    s = createSandboxSession();
  });
  after(async function () {
    if (s) await s.close();
  });

  it("is made with no argument, with Sandbox options, or on an open Sandbox (left open)", async function () {
    const a = createSandboxSession({ timeoutS: 7 });
    assert.match(a.description, /deadline of 7 s/);
    await a.close();
    const sbx = await new Sandbox().open();
    try {
      const b = createSandboxSession(sbx);
      await b.writeTextFile({ path: "x.txt", content: "on the caller's sandbox" });
      await b.close();
      assert.strictEqual((await sbx.readFile("x.txt")).toString(), "on the caller's sandbox");
    } finally {
      await sbx.close();
    }
  });

  it("an object with methods that is no Sandbox is refused, not read as options", function () {
    assert.throws(() => createSandboxSession({ run() {} }), { code: "ERR_SANDBOX_INVALID_ARG" });
    assert.throws(() => createSandboxSession("python"), { code: "ERR_SANDBOX_INVALID_ARG" });
  });

  it("description tells a model the working directory, the network and the deadline", function () {
    assert.match(s.description, /\/workspace/);
    assert.match(s.description, /no network/);
    assert.match(s.description, /deadline of 30 s/);
  });

  it("writeTextFile/readTextFile: parents made, 1-based inclusive line ranges, endLine past EOF", async function () {
    await s.writeTextFile({ path: "dir/sub/lines.txt", content: "one\ntwo\nthree\nfour\n" });
    assert.strictEqual(await s.readTextFile({ path: "dir/sub/lines.txt" }), "one\ntwo\nthree\nfour\n");
    assert.strictEqual(await s.readTextFile({ path: "dir/sub/lines.txt", startLine: 2, endLine: 3 }), "two\nthree");
    assert.strictEqual(await s.readTextFile({ path: "/workspace/dir/sub/lines.txt", startLine: 3, endLine: 99 }),
      "three\nfour\n");
    assert.strictEqual(await s.readTextFile({ path: "dir/sub/lines.txt", endLine: 1 }), "one");
    await s.writeTextFile({ path: "crlf.txt", content: "a\r\nb\r\nc" });
    assert.strictEqual(await s.readTextFile({ path: "crlf.txt", startLine: 2 }), "b\r\nc");
  });

  it("text encodings: utf-16le and latin1 both ways; an unknown label is refused", async function () {
    await s.writeTextFile({ path: "u16.txt", content: "héllo", encoding: "utf-16le" });
    assert.strictEqual((await s.readBinaryFile({ path: "u16.txt" })).length, 10);
    assert.strictEqual(await s.readTextFile({ path: "u16.txt", encoding: "utf-16le" }), "héllo");
    await s.writeTextFile({ path: "l1.txt", content: "é", encoding: "latin1" });
    assert.deepStrictEqual([...(await s.readBinaryFile({ path: "l1.txt" }))], [0xe9]);
    assert.strictEqual(await s.readTextFile({ path: "l1.txt", encoding: "latin1" }), "é");
    await assert.rejects(s.writeTextFile({ path: "k.txt", content: "x", encoding: "klingon" }),
      { code: "ERR_SANDBOX_INVALID_ARG" });
  });

  it("writeBinaryFile/readBinaryFile and the streamed writeFile/readFile move bytes exactly", async function () {
    const bytes = Buffer.alloc(200 * 1024);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7) & 0xff;
    await s.writeBinaryFile({ path: "bin/a.bin", content: new Uint8Array(bytes) });
    const back = await s.readBinaryFile({ path: "bin/a.bin" });
    assert.ok(back instanceof Uint8Array);
    assert.ok(Buffer.from(back).equals(bytes));
    await s.writeFile({ path: "bin/streamed.txt", content: streamOfStrings(["ab", "cd", "é"]) });
    assert.strictEqual(await textOf(await s.readFile({ path: "bin/streamed.txt" })), "abcdé");
    const chunks = [];
    for await (const c of await s.readFile({ path: "bin/a.bin" })) chunks.push(Buffer.from(c));
    assert.ok(chunks.length > 1, "read back in more than one chunk");
    assert.ok(Buffer.concat(chunks).equals(bytes));
  });

  it("a missing path is null for readFile, readBinaryFile, readTextFile, stat and listDirectory; deleteFile false", async function () {
    assert.strictEqual(await s.readFile({ path: "nope/x" }), null);
    assert.strictEqual(await s.readBinaryFile({ path: "nope.bin" }), null);
    assert.strictEqual(await s.readTextFile({ path: "nope.txt" }), null);
    assert.strictEqual(await s.stat({ path: "nope" }), null);
    assert.strictEqual(await s.listDirectory({ path: "nope" }), null);
    assert.strictEqual(await s.deleteFile({ path: "nope.txt" }), false);
  });

  it("stat, listDirectory and deleteFile (symlink deleted itself; a directory refused)", async function () {
    await s.writeTextFile({ path: "ls/f.txt", content: "12345" });
    await s.writeTextFile({ path: "ls/d/inner.txt", content: "" });
    await s.run({ command: "ln -s f.txt ls/link && mkfifo ls/fifo" });
    assert.deepStrictEqual(await s.stat({ path: "ls/f.txt" }), { type: "file", size: 5 });
    assert.deepStrictEqual(await s.stat({ path: "ls/link" }), { type: "file", size: 5 }, "symlinks are followed");
    assert.strictEqual((await s.stat({ path: "ls" })).type, "directory");
    assert.strictEqual((await s.stat({ path: "/workspace/ls/fifo" })).type, "other");
    const entries = (await s.listDirectory({ path: "ls" })).sort((a, b) => a.name.localeCompare(b.name));
    assert.deepStrictEqual(entries, [
      { name: "d", type: "directory" }, { name: "f.txt", type: "file" },
      { name: "fifo", type: "other" }, { name: "link", type: "symlink" }]);
    await assert.rejects(s.listDirectory({ path: "ls/f.txt" }), { code: "ERR_SANDBOX_INVALID_PATH" });
    await assert.rejects(s.deleteFile({ path: "ls/d" }), { code: "ERR_SANDBOX_INVALID_PATH" });
    assert.strictEqual(await s.deleteFile({ path: "ls/link" }), true);
    assert.deepStrictEqual(await s.stat({ path: "ls/f.txt" }), { type: "file", size: 5 }, "the target stays");
    assert.strictEqual(await s.deleteFile({ path: "/workspace/ls/f.txt" }), true);
    assert.strictEqual(await s.stat({ path: "ls/f.txt" }), null);
    const top = (await s.listDirectory({ path: "/workspace" })).map((e) => e.name);
    assert.ok(top.includes("ls") && top.includes("dir"), top.join(","));
  });

  it("paths outside the workspace are refused with a clear error; '..' may not climb out", async function () {
    for (const call of [() => s.readTextFile({ path: "/etc/passwd" }), () => s.stat({ path: "/etc" }),
      () => s.writeTextFile({ path: "/tmp/x", content: "x" }), () => s.deleteFile({ path: "/workspace/../etc/x" }),
      () => s.readBinaryFile({ path: "a/../../x" })]) {
      await assert.rejects(call(), (e) => {
        assert.strictEqual(e.code, "ERR_SANDBOX_INVALID_PATH");
        return true;
      });
    }
    await assert.rejects(s.readTextFile({ path: "/etc/passwd" }), /outside the workspace/);
    await assert.rejects(s.writeTextFile({ path: "dir", content: "x" }), /it is a directory/);
  });

  it("a symlink planted by a box to a host file is not followed by the host-side read", async function () {
    const secret = path.join(h.tmpDir("ai-secret-"), "secret.txt");
    fs.writeFileSync(secret, "host secret");
    await s.run({ command: `ln -s ${secret} planted` });
    // The positive control: the link is there and, followed, would give the secret.
    const ws = s.sandbox[POOL_STATS]().workspace;
    assert.strictEqual(fs.readFileSync(path.join(ws, "planted"), "utf8"), "host secret");
    await assert.rejects(s.readTextFile({ path: "planted" }), (e) => e.code === "ELOOP");
  });

  it("run: a shell command line, exit code, stdout/stderr, workingDirectory, env, maxOutputLength", async function () {
    const r = await s.run({ command: "echo out; echo err >&2; exit 3" });
    assert.deepStrictEqual(r, { exitCode: 3, stdout: "out\n", stderr: "err\n" });
    await s.writeTextFile({ path: "wd/here.txt", content: "" });
    assert.strictEqual((await s.run({ command: "ls", workingDirectory: "wd" })).stdout, "here.txt\n");
    assert.strictEqual((await s.run({ command: "ls", workingDirectory: "/workspace/wd" })).stdout, "here.txt\n");
    assert.strictEqual((await s.run({ command: 'printf %s "$GREETING"', env: { GREETING: "hi" } })).stdout, "hi");
    const cut = await s.run({ command: "printf 0123456789", maxOutputLength: 4 });
    assert.strictEqual(cut.stdout, "0123");
    assert.strictEqual(cut.stdoutLength, 10);
    assert.strictEqual(cut.stderrLength, 0);
  });

  it("run: a timeout comes back as a result a model can read; abortSignal rejects", async function () {
    const t = createSandboxSession({ timeoutS: 0.5 });
    try {
      const r = await t.run({ command: "sleep 5" });
      assert.notStrictEqual(r.exitCode, 0);
      assert.match(r.stderr, /\[kern-sandbox: timeout: /);
      const ac = new AbortController();
      setTimeout(() => ac.abort(new Error("stop")), 100);
      await assert.rejects(t.run({ command: "sleep 5", abortSignal: ac.signal }), { name: "AbortError" });
    } finally {
      await t.close();
    }
  });

  it("spawn without stdin: streams stdout and stderr, wait() gives the exit code, stdin is absent", async function () {
    const p = await s.spawn({ command: "echo a; echo b >&2; exit 4" });
    assert.ok(!("stdin" in p));
    const [out, err, w] = await Promise.all([textOf(p.stdout), textOf(p.stderr), p.wait()]);
    assert.strictEqual(out, "a\n");
    assert.strictEqual(err, "b\n");
    assert.deepStrictEqual(w, { exitCode: 4 });
    const q = await s.spawn({ command: "cat", stdin: false });
    assert.deepStrictEqual(await q.wait(), { exitCode: 0 }, "stdin is at EOF at once");
  });

  it("spawn with stdin: a web WritableStream, output while it runs, EOF on close", async function () {
    const p = await s.spawn({ command: 'while read l; do echo "got $l"; done; echo end', stdin: true });
    const w = p.stdin.getWriter();
    const reader = p.stdout.getReader();
    await w.write(new TextEncoder().encode("one\n"));
    // Output comes in chunks of any size: read until the answer is whole.
    let first = "";
    while (!first.endsWith("\n")) {
      const { value, done } = await reader.read();
      assert.ok(!done, `the stream ended early: ${JSON.stringify(first)}`);
      first += Buffer.from(value).toString();
    }
    assert.strictEqual(first, "got one\n", "answered before stdin closed");
    await w.write(new TextEncoder().encode("two\n"));
    await w.close();
    let rest = "";
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      rest += Buffer.from(r.value).toString();
    }
    assert.strictEqual(rest, "got two\nend\n");
    assert.deepStrictEqual(await p.wait(), { exitCode: 0 });
  });

  it("spawn: kill() ends a long process (idempotent); abortSignal rejects wait() with its reason", async function () {
    const p = await s.spawn({ command: "sleep 30" });
    const t0 = Date.now();
    await p.kill();
    await p.kill();
    const w = await p.wait();
    assert.notStrictEqual(w.exitCode, 0);
    assert.ok(Date.now() - t0 < 5000);
    const ac = new AbortController();
    const q = await s.spawn({ command: "sleep 30", abortSignal: ac.signal });
    const reason = new Error("the user stopped it");
    ac.abort(reason);
    await assert.rejects(q.wait(), (e) => e === reason);
  });

  it("generateText with experimental_sandbox: a tool loop writes a script, runs it and reads its output", async function () {
    if (!canLoad("ai")) return h.skip(this, "the ai package is not installed (npm install)");
    const { generateText, tool, jsonSchema, isStepCount } = require("ai");
    const { MockLanguageModelV3 } = require("ai/test");
    const obj = (props) => jsonSchema({ type: "object", properties: props, required: Object.keys(props) });
    const tools = {
      write: tool({ inputSchema: obj({ path: { type: "string" }, content: { type: "string" } }),
        execute: async ({ path: p, content }, { experimental_sandbox: sb }) => {
          await sb.writeTextFile({ path: p, content });
          return "written";
        } }),
      bash: tool({ inputSchema: obj({ command: { type: "string" } }),
        execute: async ({ command }, { experimental_sandbox: sb }) => sb.run({ command }) }),
      read: tool({ inputSchema: obj({ path: { type: "string" } }),
        execute: async ({ path: p }, { experimental_sandbox: sb }) => sb.readTextFile({ path: p }) }),
    };
    const model = new MockLanguageModelV3({ doGenerate: [
      v3Step({ calls: [["write", { path: "calc.sh", content: "echo $((6 * 7)) > answer.txt\n" }]] }),
      v3Step({ calls: [["bash", { command: "sh calc.sh" }]] }),
      v3Step({ calls: [["read", { path: "/workspace/answer.txt" }]] }),
      v3Step({ text: "The answer is 42." }),
    ] });
    const r = await generateText({ model, tools, prompt: "compute 6*7 in the sandbox",
      experimental_sandbox: s, stopWhen: isStepCount ? isStepCount(10) : undefined });
    assert.strictEqual(r.text, "The answer is 42.");
    assert.strictEqual(r.steps.length, 4);
    const results = r.steps.flatMap((st) => st.toolResults.map((t) => t.output));
    assert.deepStrictEqual(results, ["written", { exitCode: 0, stdout: "", stderr: "" }, "42\n"]);
    assert.strictEqual((await s.sandbox.readFile("answer.txt")).toString(), "42\n");
  });

  it("codeInterpreterTool: generateText runs code in a box and the model gets stdout", async function () {
    if (!canLoad("ai")) return h.skip(this, "the ai package is not installed (npm install)");
    const { generateText, isStepCount } = require("ai");
    const { MockLanguageModelV3 } = require("ai/test");
    const t = codeInterpreterTool();
    try {
      const model = new MockLanguageModelV3({ doGenerate: [
        v3Step({ calls: [["code", { code: "open('o.txt','w').write('x')\nprint(6*7)" }]] }),
        v3Step({ calls: [["code", { code: "echo from bash; exit 2", language: "bash" }]] }),
        v3Step({ text: "done" }),
      ] });
      const r = await generateText({ model, tools: { code: t }, prompt: "run",
        stopWhen: isStepCount ? isStepCount(5) : undefined });
      const outs = r.steps.flatMap((st) => st.toolResults.map((x) => x.output));
      assert.strictEqual(outs[0].stdout, "42\n");
      assert.strictEqual(outs[0].exitCode, 0);
      assert.deepStrictEqual(outs[0].files, ["o.txt (created, 1 bytes)"]);
      assert.strictEqual(outs[1].stdout, "from bash\n");
      assert.strictEqual(outs[1].exitCode, 2);
      // What the model saw next: the tool result in its prompt.
      const seen = model.doGenerateCalls[1].prompt.find((m) => m.role === "tool").content[0].output;
      assert.strictEqual(seen.value.stdout, "42\n");
    } finally {
      await t.close();
    }
  });

  it("require('kern-sandbox') and require('kern-sandbox/ai') load no module from node_modules", function () {
    const script = `require(${JSON.stringify(h.repo)}); require(${JSON.stringify(path.join(h.repo, "lib/ai"))});
      require(${JSON.stringify(path.join(h.repo, "lib/openai-agents"))}); require(${JSON.stringify(path.join(h.repo, "lib/mastra"))});
      const loaded = Object.keys(require.cache).filter((f) => f.includes("node_modules"));
      process.stdout.write(JSON.stringify(loaded));`;
    const loaded = JSON.parse(execFileSync(process.execPath, ["-e", script], { encoding: "utf8" }));
    assert.deepStrictEqual(loaded, []);
  });

  it("without `ai`, the session still works and codeInterpreterTool() names `npm install ai`", function () {
    const script = `const M = require("module"); const orig = M._resolveFilename;
      M._resolveFilename = function (req, ...rest) {
        if (req === "ai" || req.startsWith("ai/") || req.startsWith("@ai-sdk/")) {
          const e = new Error("Cannot find module '" + req + "'"); e.code = "MODULE_NOT_FOUND"; throw e; }
        return orig.call(this, req, ...rest);
      };
      const { createSandboxSession, createSandboxProvider, codeInterpreterTool } = require(${JSON.stringify(path.join(h.repo, "lib/ai"))});
      const s = createSandboxSession(); createSandboxProvider({ root: "/nonexistent-root" });
      let msg = "no error";
      try { codeInterpreterTool(); } catch (e) { msg = e.code + " " + e.message; }
      s.close().then(() => process.stdout.write(msg));`;
    const msg = execFileSync(process.execPath, ["-e", script], { encoding: "utf8" });
    assert.match(msg, /^ERR_SANDBOX_MISSING_PEER .*npm install ai`$/);
  });

  it("a missing peer is ERR_SANDBOX_MISSING_PEER naming the npm install command", function () {
    const { requirePeer } = require("../lib/peer");
    assert.throws(() => requirePeer("@kern-sandbox-test/not-installed/sub", { what: "the test" }), (e) => {
      assert.strictEqual(e.code, "ERR_SANDBOX_MISSING_PEER");
      assert.match(e.message, /npm install @kern-sandbox-test\/not-installed/);
      return true;
    });
  });
});
