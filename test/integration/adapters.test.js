"use strict";

// Issue 34 against a real kern: the adapters' path containment where boxes
// are real (a symlink to a host file planted by a box; stat/list/delete
// served inside a box, where /etc is the image's), spawn with stdin, the
// harness provider's resume, Mastra's executeCommand; and what the AI SDK
// session's run() costs over sbx.run on the same prewarmed session.
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const h = require("../lib/harness");
const { useRealKern } = require("../lib/realkern");

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

describe("integration: the framework adapters with a real kern (issue 34)", function () {
  this.timeout(600000);
  const pkg = useRealKern();
  let ai;
  before(function () {
    if (pkg() === null) return;
    ai = require("../../lib/ai");
  });

  it("AI SDK session: a box's symlink to a host file is refused on the host; stat/list/delete run in the box", async function () {
    const secret = path.join(h.tmpDir("ai-real-"), "secret.txt");
    fs.writeFileSync(secret, "host secret");
    const s = ai.createSandboxSession();
    try {
      const made = await s.run({ command: `ln -s ${secret} planted && ln -s /etc/passwd pw && echo ok` });
      assert.strictEqual(made.stdout, "ok\n", made.stderr);
      await assert.rejects(s.readTextFile({ path: "planted" }), (e) => e.code === "ELOOP");
      // Followed inside the box: the box cannot see the host file at all.
      assert.strictEqual(await s.stat({ path: "planted" }), null, "a dangling link in the box");
      assert.strictEqual((await s.stat({ path: "pw" })).type, "file", "the image's /etc/passwd, in the box");
      const names = (await s.listDirectory({ path: "." })).map((e) => `${e.name}:${e.type}`).sort();
      assert.deepStrictEqual(names, ["planted:symlink", "pw:symlink"]);
      assert.strictEqual(await s.deleteFile({ path: "planted" }), true);
      assert.ok(fs.existsSync(secret), "the link went, not its target");
      await assert.rejects(s.readTextFile({ path: "/etc/passwd" }), { code: "ERR_SANDBOX_INVALID_PATH" });
      const p = await s.spawn({ command: "wc -c", stdin: true });
      const w = p.stdin.getWriter();
      await w.write(new Uint8Array(100000));
      await w.close();
      assert.strictEqual((await new Response(p.stdout).text()).trim(), "100000");
      assert.deepStrictEqual(await p.wait(), { exitCode: 0 });
    } finally {
      await s.close();
    }
  });

  it("harness provider: a session resumed by id has its files", async function () {
    const root = path.join(h.tmpDir("harness-real-"), "sessions");
    const provider = ai.createSandboxProvider({ root });
    const a = await provider.createSession({ sessionId: "real-1" });
    await a.run({ command: "echo persisted > p.txt" });
    await a.stop();
    const b = await provider.resumeSession({ sessionId: "real-1" });
    try {
      assert.strictEqual((await b.run({ command: "cat p.txt" })).stdout, "persisted\n");
    } finally {
      await b.destroy();
    }
  });

  it("OpenAI Agents: exec and writeStdin talk to a process in a real box", async function () {
    const { KernSandboxClient } = require("../../lib/openai-agents");
    const s = await new KernSandboxClient().create();
    try {
      const live = await s.exec({ cmd: "python3 -u -c 'import sys\nfor l in sys.stdin: print(l.strip().upper(), flush=True)'",
        yieldTimeMs: 1000 });
      assert.strictEqual(typeof live.sessionId, "number", JSON.stringify(live));
      assert.match(await s.writeStdin({ sessionId: live.sessionId, chars: "hello\n", yieldTimeMs: 1500 }), /HELLO/);
      assert.match(await s.writeStdin({ sessionId: live.sessionId, chars: "\u0003", yieldTimeMs: 3000 }), /Process exited/);
    } finally {
      await s.delete();
    }
  });

  it("@ai-sdk/harness's HarnessAgent on the provider: bootstrap recipe, stop, resume by id, destroy", async function () {
    // Not on the double: the harness passes box paths (/workspace/...) in
    // env values, which only a real box resolves.
    const { HarnessAgent } = await import("@ai-sdk/harness/agent");
    const root = path.join(h.tmpDir("harness-agent-"), "sessions");
    const provider = ai.createSandboxProvider({ root });
    const seen = [];
    const lifecycle = (sessionId) => ({ type: "resume-session", specificationVersion: "harness-v1", harnessId: "stub",
      sessionId, data: {} });
    // A stub harness: the bootstrap recipe and doStart are the framework's
    // contract with a sandbox; its turns are not (they need a real agent CLI).
    const harness = {
      specificationVersion: "harness-v1", harnessId: "stub", builtinTools: {},
      getBootstrap: async () => ({ harnessId: "stub", bootstrapDir: ".stub-bootstrap",
        files: [{ path: ".stub-bootstrap/bridge.sh", content: "echo bridge ready\n" }],
        commands: [{ command: "sh bridge.sh > ready.txt" }] }),
      doStart: async (o) => {
        const r = await o.sandboxSession.run({ command: 'cat .stub-bootstrap/ready.txt; test -d "$W" && echo workdir', env: { W: o.sessionWorkDir } });
        seen.push([o.sessionWorkDir, o.resumeFrom != null, r.stdout]);
        return { sessionId: o.sessionId, isResume: o.resumeFrom != null,
          doPromptTurn: async () => { throw new Error("no turns"); }, doCompact: async () => {},
          doContinueTurn: async () => { throw new Error("no turns"); },
          doStop: async () => lifecycle(o.sessionId), doDetach: async () => lifecycle(o.sessionId), doDestroy: async () => {} };
      },
    };
    const agent = new HarnessAgent({ harness, sandbox: provider, permissionMode: "allow-all" });
    const first = await agent.createSession({ sessionId: "h1" });
    const state = await first.stop();
    const again = await agent.createSession({ sessionId: "h1", resumeFrom: state });
    await again.destroy();
    assert.deepStrictEqual(seen, [["/workspace/stub-h1", false, "bridge ready\nworkdir\n"],
      ["/workspace/stub-h1", true, "bridge ready\nworkdir\n"]]);
    assert.ok(!fs.existsSync(path.join(root, "h1")), "destroy() removed the workspace");
  });

  it("Mastra: executeCommand in a real box", async function () {
    const { KernWorkspaceSandbox } = require("../../lib/mastra");
    const s = new KernWorkspaceSandbox();
    try {
      const r = await s.executeCommand("python3 -c 'print(6*7)'; id -u");
      assert.strictEqual(r.success, true, r.stderr);
      assert.match(r.stdout, /^42\n/);
    } finally {
      await s.destroy();
    }
  });

  it("figure: AI SDK run() against sbx.run on one prewarmed session (p50 of 200 each, alternated)", async function () {
    const kern = pkg();
    await kern.withSandbox({}, async (sbx) => {
      const s = ai.createSandboxSession(sbx);
      const direct = [];
      const viaSdk = [];
      for (let i = 0; i < 220; i++) {
        await h.poolReady(sbx);
        let t = performance.now();
        await sbx.run(["sh", "-c", "true"]);
        if (i >= 20) direct.push(performance.now() - t);
        await h.poolReady(sbx);
        t = performance.now();
        await s.run({ command: "true" });
        if (i >= 20) viaSdk.push(performance.now() - t);
      }
      const d = median(direct);
      const v = median(viaSdk);
      h.note(`sbx.run(["sh","-c","true"]) p50 ${d.toFixed(3)} ms; session.run({command:"true"}) p50 ${v.toFixed(3)} ms; ` +
        `difference ${(v - d).toFixed(3)} ms`);
    });
  });
});
