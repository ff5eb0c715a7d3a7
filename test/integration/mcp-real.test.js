"use strict";

// Issue 34 item 1 with a real kern: the SDK's Client over stdio to
// `kern-sandbox mcp`. run_code's stdout, a figure as image/png (a stand-in
// matplotlib.pyplot in the workspace on python:3.12-slim, which has no
// matplotlib; a real matplotlib chart on python-mpl:local, an image of
// Debian's python3-matplotlib that make-mpl-image.sh builds), a fault as
// isError, a 100 MB flood bounded with its cut marked, a cancelled
// request and stdin EOF leaving no box.
const assert = require("assert");
const crypto = require("crypto");
const h = require("../lib/harness");
const { realKern, why, haveImage } = require("../lib/realkern");
const { connect, textOf } = require("../lib/mcp");

const FAKE_PYPLOT = `
_figs = {}
class Figure:
    def __init__(self, num): self.num = num
    def savefig(self, buf, format=None):
        buf.write(b'\\x89PNG\\r\\n\\x1a\\n' + ('figure %d' % self.num).encode())
def figure(num=None):
    num = num if num is not None else len(_figs) + 1
    return _figs.setdefault(num, Figure(num))
def get_fignums(): return sorted(_figs)
def close(which='all'): _figs.clear()
`;

describe("MCP server with a real kern (issue 34)", function () {
  this.timeout(120000);
  let c;
  const call = (name, args, opts) => c.client.callTool({ name, arguments: args }, undefined, opts);

  before(async function () {
    if (why !== null) return;
    c = await connect([], { KERN_BIN: realKern });
  });
  after(async function () {
    if (c) await c.client.close();
  });
  beforeEach(function () {
    if (why !== null) h.skipHost(this, why);
  });

  it("lists the tools; run_code returns stdout; a figure comes back as image/png; a fault is isError",
    async function () {
      assert.strictEqual((await c.client.listTools()).tools.length, 10);
      assert.match(textOf(await call("run_code", { code: "print(sum(range(100)))" })), /stdout ---\n4950\n/);
      await call("write_file", { path: "matplotlib/__init__.py", content: "" });
      await call("write_file", { path: "matplotlib/pyplot.py", content: FAKE_PYPLOT });
      const fig = await call("run_code", { code: "import matplotlib.pyplot as plt\nplt.figure()\nprint('drawn')" });
      const img = fig.content.find((x) => x.type === "image");
      assert.strictEqual(img.mimeType, "image/png");
      assert.strictEqual(Buffer.from(img.data, "base64").toString("latin1"), "\x89PNG\r\n\x1a\nfigure 1");
      const bad = await call("run_code", { code: "1/0" });
      assert.strictEqual(bad.isError, true);
      assert.match(textOf(bad), /ZeroDivisionError/);
    });

  it("a real matplotlib chart comes back as image/png content (image python-mpl:local)", async function () {
    if (!haveImage("python-mpl:local"))
      return h.skipHost(this, "kern has no python-mpl:local image (test/integration/make-mpl-image.sh makes it)");
    const mpl = await connect(["--image", "python-mpl:local", "--prewarm", "0"], { KERN_BIN: realKern });
    try {
      const t0 = Date.now();
      const r = await mpl.client.callTool({ name: "run_code", arguments: { code:
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" +
        "plt.plot([1, 4, 9, 16])\nplt.title('squares')\nprint('plotted')" } });
      h.note(`matplotlib chart: ${Date.now() - t0} ms`);
      assert.strictEqual(r.isError, undefined, textOf(r));
      assert.match(textOf(r), /stdout ---\nplotted\n/);
      const img = r.content.find((x) => x.type === "image");
      assert.strictEqual(img.mimeType, "image/png");
      const png = Buffer.from(img.data, "base64");
      assert.strictEqual(png.readUInt32BE(0), 0x89504e47);
      assert.ok(png.length > 5000, `${png.length} bytes`);
    } finally {
      await mpl.client.close();
    }
  });

  it("a 100 MB flood comes back bounded, its cut marked, the kept output saved", async function () {
    const t0 = Date.now();
    const r = await call("run_code", { code: "import sys\nfor _ in range(100): sys.stdout.write('x' * 1000000)" });
    const text = textOf(r);
    h.note(`100 MB flood: ${Date.now() - t0} ms, reply ${text.length} characters`);
    assert.ok(text.length <= 64000);
    assert.match(text, /\[\.\.\. 67,092,864 characters of stdout cut here \(67,108,864 in all\); the whole stdout is in the workspace file/);
    assert.match(text, /\[the sandbox kept only the first 67,108,864 bytes of each stream; the rest was discarded\]/);
  });

  it("a cancelled request leaves no box; the server goes on", async function () {
    const marker = `mcp-cancel-${crypto.randomBytes(4).toString("hex")}`;
    const ac = new AbortController();
    const p = call("run_command", { command: `sleep 30; echo ${marker}` }, { signal: ac.signal });
    assert.ok(await h.waitFor(() => h.processesWith(marker).length > 0, 20000), "the box started");
    ac.abort();
    await assert.rejects(p);
    assert.ok(await h.waitFor(() => h.processesWith(marker).length === 0, 5000), "no box left");
    assert.match(textOf(await call("run_code", { code: "print('next')" })), /next/);
  });

  it("stdin EOF ends the server with a box running, and leaves no box", async function () {
    const marker = `mcp-eof-${crypto.randomBytes(4).toString("hex")}`;
    const own = await connect([], { KERN_BIN: realKern });
    own.client.callTool({ name: "run_command", arguments: { command: `sleep 30; echo ${marker}` } }).catch(() => {});
    assert.ok(await h.waitFor(() => h.processesWith(marker).length > 0, 20000), "the box started");
    const pid = own.pid;
    await own.client.close(); // ends stdin; the SDK sends SIGTERM only after 2 s
    assert.ok(await h.waitFor(() => !require("fs").existsSync(`/proc/${pid}`), 5000), "the server exited");
    assert.ok(await h.waitFor(() => h.processesWith(marker).length === 0, 5000), "no box left");
  });
});
