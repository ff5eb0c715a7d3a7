"use strict";

// Issue 15, part 5: the module shapes users reach for. package.json
// "exports" (types, import, require) with an ES module wrapper: named imports
// work in Node and type-check with TypeScript's moduleResolution node,
// node16 and bundler, importing the package by name (CJS and ESM).
const assert = require("assert");
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const h = require("./lib/harness");

const NAMES = ["AbortError", "BoxProcess", "ExecutionResult", "Kernel", "MountRefused", "Result", "Sandbox",
  "SandboxError", "doctor", "isKilledFault", "runCode", "version", "withSandbox"];

/** A throwaway project whose node_modules/kern-sandbox is this package. */
function project(files) {
  const dir = h.tmpDir("shapes-");
  fs.mkdirSync(path.join(dir, "node_modules"));
  fs.symlinkSync(h.repo, path.join(dir, "node_modules", "kern-sandbox"));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  return dir;
}

describe("module shapes (issue 15)", function () {
  this.timeout(120000);

  it("import by name from an ES module and require from CommonJS give the same exports", function () {
    const dir = project({
      "esm.mjs": `import * as ns from "kern-sandbox";
import kern, { runCode, Sandbox, AbortError, isKilledFault, version } from "kern-sandbox";
if (kern.runCode !== runCode || kern.Sandbox !== Sandbox || kern.AbortError !== AbortError) process.exit(2);
console.log(JSON.stringify({ names: Object.keys(ns).filter((k) => k !== "default").sort(), version,
  fns: [typeof runCode, typeof isKilledFault] }));`,
      "cjs.cjs": `const kern = require("kern-sandbox");
const pkg = require("kern-sandbox/package.json");
console.log(JSON.stringify({ names: Object.keys(kern).sort(), version: pkg.version }));`,
    });
    const esm = JSON.parse(execFileSync(process.execPath, ["esm.mjs"], { cwd: dir, encoding: "utf8" }));
    const cjs = JSON.parse(execFileSync(process.execPath, ["cjs.cjs"], { cwd: dir, encoding: "utf8" }));
    assert.deepStrictEqual(esm.names, NAMES);
    assert.deepStrictEqual(cjs.names, NAMES);
    assert.deepStrictEqual(esm.fns, ["function", "function"]);
    assert.strictEqual(esm.version, cjs.version);
    // The ES entry is the CommonJS module, not a second copy of it.
    const same = execFileSync(process.execPath, ["--input-type=module", "-e",
      `import { Sandbox } from "kern-sandbox"; import { createRequire } from "module";
       const req = createRequire(import.meta.url);
       console.log(req("kern-sandbox").Sandbox === Sandbox);`], { cwd: dir, encoding: "utf8" });
    assert.strictEqual(same.trim(), "true");
  });

  it("tsc --strict type-checks imports by name with moduleResolution node, node16 and bundler " +
    "(CJS and ESM)", function () {
    const tsc = path.join(h.repo, "node_modules", ".bin", "tsc");
    if (!fs.existsSync(tsc)) return h.skip(this, "typescript is not installed (npm install)");
    if (h.underSanitizer) return h.skipHost(this, "tsc checks types, not the addon; it runs in the plain suite");
    const use = `const r: ExecutionResult = await runCode("print(1)", { signal: new AbortController().signal });
  const s = new Sandbox({ capDrop: ["ALL"] });
  const l: ResourceLimits | null = r.limits;
  console.log(r.usage, l, s, version);`;
    const esm = `import { runCode, Sandbox, version } from "kern-sandbox";
import type { ExecutionResult, ResourceLimits } from "kern-sandbox";
export async function main(): Promise<void> {
  ${use}
}
`;
    const cjs = `import kern = require("kern-sandbox");
import type { ExecutionResult, ResourceLimits } from "kern-sandbox";
const { runCode, Sandbox, version } = kern;
export async function main(): Promise<void> {
  ${use}
}
`;
    const base = { strict: true, noEmit: true, target: "ES2022", lib: ["ES2022"], skipLibCheck: false,
      typeRoots: [path.join(h.repo, "node_modules", "@types")], types: ["node"] };
    const dir = project({
      "esm.mts": esm, "cjs.cts": cjs, "plain.ts": esm,
      "tsconfig.node16.json": JSON.stringify({ compilerOptions: { ...base, module: "node16",
        moduleResolution: "node16" }, files: ["esm.mts", "cjs.cts"] }),
      "tsconfig.node.json": JSON.stringify({ compilerOptions: { ...base, module: "commonjs",
        moduleResolution: "node", esModuleInterop: true }, files: ["plain.ts"] }),
      "tsconfig.bundler.json": JSON.stringify({ compilerOptions: { ...base, module: "esnext",
        moduleResolution: "bundler" }, files: ["plain.ts"] }),
    });
    for (const mode of ["node16", "node", "bundler"]) {
      try {
        execFileSync(tsc, ["-p", path.join(dir, `tsconfig.${mode}.json`)], { cwd: dir, encoding: "utf8" });
      } catch (e) {
        assert.fail(`moduleResolution ${mode}: ${e.stdout}${e.stderr}`);
      }
    }
    // Positive control: a name the package does not export fails in each mode.
    fs.writeFileSync(path.join(dir, "plain.ts"), `import { noSuchExport } from "kern-sandbox";\nconsole.log(noSuchExport);\n`);
    for (const mode of ["node", "bundler"]) {
      assert.throws(() => execFileSync(tsc, ["-p", path.join(dir, `tsconfig.${mode}.json`)],
        { cwd: dir, stdio: "pipe" }), `moduleResolution ${mode} accepted a missing export`);
    }
  });
});
