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
});
