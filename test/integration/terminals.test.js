"use strict";

// Issue 33, item 3, with a real kern: the terminal cases of
// test/lib/terminal-cases (SECURITY-CASES F3 among them) in real boxes,
// and what only a real box shows: a process that ignores SIGHUP dies with
// its box, and no process of the box is left. SKIPs without a real kern.
const assert = require("assert");
const h = require("../lib/harness");
const { useRealKern } = require("../lib/realkern");
const { until } = require("../lib/procs");
const { terminalCases, collect, typeLine, SHELL, SHELL_ENV, PROMPT } = require("../lib/terminal-cases");

describe("integration: terminals with a real kern (issue 33)", function () {
  this.timeout(180000);
  const pkg = useRealKern();
  let sbx = null;
  before(async function () {
    const kern = pkg();
    if (kern !== null) sbx = await new kern.Sandbox({ prewarm: 0 }).open();
  });
  after(async function () {
    if (sbx !== null) await sbx.close();
  });

  terminalCases(() => sbx, { real: true });

  it("F3: a job that ignores SIGHUP dies with the box when its shell exits or is killed", async function () {
    for (const end of ["exit", "kill"]) {
      const p = collect(await sbx.spawn(SHELL, { pty: true, env: SHELL_ENV, timeoutS: 60 }));
      await until(p.stdout, () => PROMPT.test(p.out), 20000);
      const out = await typeLine(p, "nohup sh -c 'trap \"\" HUP; exec sleep 300.5' >/dev/null 2>&1 & echo job=$!");
      assert.match(out, /job=\d+/);
      // Positive control: the job runs, and the host sees it.
      assert.match(await typeLine(p, "kill -0 %1 && echo alive"), /alive/);
      assert.strictEqual(h.processesWith("300.5").length, 1);
      if (end === "exit") p.stdin.write("exit\n");
      else p.kill("SIGKILL");
      const r = await p.wait();
      assert.strictEqual(r.fault, null);
      await h.sleep(200);
      assert.deepStrictEqual(h.processesWith("300.5"), [], `${end}: the job outlived its box`);
    }
  });

  it("F5: a SIGKILLed Node, process.exit() and a terminated Worker with a terminal's background job and " +
    "services leave nothing 2 s later", async function () {
    const path = require("path");
    const { spawn } = require("child_process");
    const portsLib = require("../../lib/ports");
    for (const mode of ["kill", "exit", "worker"]) {
      const ws = h.tmpDir(`tdeath-${mode}-`);
      const ports = (await portsLib.pickPorts([1, 2], "127.0.0.1")).map((m) => String(m.host));
      const child = spawn(process.execPath, [path.join(h.repo, "test/fixtures/scripts/process-death.js"),
        mode, h.repo, ws, ...ports], { stdio: ["ignore", "pipe", "inherit"],
        env: { ...process.env, KS_DEATH_JOB: "1" } });
      const exited = h.exitOf(child);
      const said = await h.firstOutput(child, exited);
      const mine = () => h.processes().filter((p) => p.state !== "Z" && p.pid !== child.pid &&
        (p.argv.includes(ws) || p.argv.includes("300.5"))).map((p) => p.pid);
      if (mode === "kill") {
        assert.ok(mine().length >= 4, `positive control: the boxes and the job run (${said})`);
        child.kill("SIGKILL");
      }
      const gone = await h.waitFor(() => mine().length === 0, 2000);
      child.kill("SIGKILL");
      await exited;
      assert.ok(gone, `${mode}: left behind 2 s later: ${mine()}`);
    }
  });
});
