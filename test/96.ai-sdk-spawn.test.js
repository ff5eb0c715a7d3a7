"use strict";

// Issue 34: the adapters' code for the process API (sbx.spawn, issue 33),
// run now on a stand-in for it (test/lib/adapters.js: standInSpawn, built on
// sbx.run): the AI SDK session's spawn with and without stdin, the harness
// session's published ports, and the OpenAI Agents exec/writeStdin and
// resolveExposedPort. The real process API replaces the stand-in when it
// lands; the tests of real ports and terminals are in test/96.ai-sdk-harness
// and test/97 (they SKIP until then).
const assert = require("assert");
const path = require("path");
const h = require("./lib/harness");
const { standInSpawn, textOf, canLoad } = require("./lib/adapters");
const { Sandbox } = require("..");
const { createSandboxSession, createSandboxProvider } = require("../lib/ai");

describe("kern-sandbox adapters on the process API's shape (issue 34, a stand-in for sbx.spawn)", function () {
  this.timeout(h.underSanitizer ? 120000 : 30000);

  it("AI SDK spawn: argv, stdin as a Node Writable, streams, wait and kill go through sbx.spawn", async function () {
    const sbx = await new Sandbox().open();
    const calls = standInSpawn(sbx);
    const s = createSandboxSession(sbx);
    try {
      const p = await s.spawn({ command: "cat; echo done", stdin: true, workingDirectory: "/workspace", env: { A: "1" } });
      const w = p.stdin.getWriter();
      await w.write(new TextEncoder().encode("via spawn\n"));
      await w.close();
      assert.strictEqual(await textOf(p.stdout), "via spawn\ndone\n");
      assert.deepStrictEqual(await p.wait(), { exitCode: 0 });
      assert.deepStrictEqual(calls[0].argv, ["sh", "-c", "cat; echo done"]);
      assert.strictEqual(calls[0].opts.stdin, true);
      assert.strictEqual(calls[0].opts.timeoutS, null, "a spawned process has no deadline of its own");
      assert.deepStrictEqual(calls[0].opts.env, { A: "1" });
      const q = await s.spawn({ command: "sleep 30" });
      assert.strictEqual(calls[1].opts.stdin, false);
      const t0 = Date.now();
      await q.kill();
      assert.notStrictEqual((await q.wait()).exitCode, 0);
      assert.ok(Date.now() - t0 < 5000);
    } finally {
      await s.close();
      await sbx.close();
    }
  });

  it("harness: every spawn publishes the provider's ports; getPortEndpoint gives the newest live one's URL", async function () {
    const root = path.join(h.tmpDir("harness-spawn-"), "sessions");
    const provider = createSandboxProvider({ root, ports: [8000, 9000] });
    // The session's Sandbox is its own: the stand-in goes on through the
    // prototype, on the first spawn of each Sandbox.
    const saved = Sandbox.prototype.spawn;
    let calls = null;
    Sandbox.prototype.spawn = async function (argv, opts) {
      calls = standInSpawn(this); // now an own property of this Sandbox
      return this.spawn(argv, opts);
    };
    try {
      const t = await provider.createSession({ sessionId: "ports-2" });
      try {
        const server = await t.spawn({ command: "sleep 30" });
        assert.deepStrictEqual(calls[0].opts.ports, [8000, 9000]);
        assert.deepStrictEqual(await t.getPortEndpoint({ port: 8000 }), { url: "http://127.0.0.1:48000" });
        assert.strictEqual(await t.getPortUrl({ port: 9000, protocol: "ws" }), "ws://127.0.0.1:49000");
        await server.kill();
        await assert.rejects(t.getPortEndpoint({ port: 8000 }), /no running process of this session publishes port 8000/);
      } finally {
        await t.destroy();
      }
    } finally {
      Sandbox.prototype.spawn = saved;
      if (saved === undefined) delete Sandbox.prototype.spawn;
    }
  });

  it("OpenAI Agents: exec publishes exposedPorts; resolveExposedPort; Ctrl-C is SIGINT; supportsPty", async function () {
    if (!canLoad("@openai/agents-core")) return h.skip(this, "@openai/agents-core is not installed (npm install)");
    const { KernSandboxClient } = require("../lib/openai-agents");
    const sbx = await new Sandbox().open();
    const calls = standInSpawn(sbx);
    const client = new KernSandboxClient(sbx);
    const s = await client.create();
    try {
      s.state.configuredExposedPorts = [8000];
      assert.strictEqual(s.supportsPty(), true);
      const live = await s.exec({ cmd: "while read l; do echo \"got $l\"; done", yieldTimeMs: 200 });
      assert.strictEqual(typeof live.sessionId, "number");
      assert.deepStrictEqual(calls[calls.length - 1].opts.ports, [8000]);
      const ep = await s.resolveExposedPort(8000);
      assert.deepStrictEqual([ep.host, ep.port, ep.tls], ["127.0.0.1", 48000, false]);
      assert.match(await s.writeStdin({ sessionId: live.sessionId, chars: "x\n", yieldTimeMs: 300 }), /got x/);
      const out = await s.writeStdin({ sessionId: live.sessionId, chars: "\u0003", yieldTimeMs: 2000 });
      assert.match(out, /Process exited/);
    } finally {
      await s.delete();
      await sbx.close();
    }
  });
});
