// Checkpoint the workspace to a .tar.gz and restore it into a new session.
// snapshot()/restore() are opt-in, as in 0.1.1: KERN_SANDBOX_SNAPSHOT=1.
// Run: node examples/snapshot.js
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const { withSandbox } = require("kern-sandbox");

process.env.KERN_SANDBOX_SNAPSHOT = "1";

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ks-example-"));
  const archive = path.join(dir, "workspace.tar.gz");
  try {
    await withSandbox(async (sbx) => {
      await sbx.runCode("import os\nos.makedirs('model', exist_ok=True)\nopen('model/weights.txt', 'w').write('0.1 0.2 0.3')");
      sbx.snapshot(archive);
    });
    console.log("snapshot:", fs.statSync(archive).size, "bytes");
    await withSandbox(async (sbx) => {
      sbx.restore(archive);
      const r = await sbx.runCode("print(open('model/weights.txt').read())");
      console.log("restored:", r.stdout.trim()); // 0.1 0.2 0.3
      if (r.stdout.trim() !== "0.1 0.2 0.3") process.exitCode = 1;
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main();
