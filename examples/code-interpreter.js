// A code interpreter for an agent: a Python kernel whose state persists
// across cells, rich results (the value of a trailing expression, display()),
// and, in fork isolation, cells that cannot lose the kernel's state.
// Run: node examples/code-interpreter.js
"use strict";

const { withSandbox } = require("kern-sandbox");

async function main() {
  await withSandbox(async (sbx) => {
    const kernel = await sbx.kernel({ isolation: "fork" });
    try {
      await kernel.runCode("rows = [('Lima', 19.4), ('Cairo', 22.1), ('Oslo', 6.3)]");
      // The last line is an expression: its value is the cell's result.
      const avg = await kernel.runCode("sum(t for _, t in rows) / len(rows)");
      console.log("mean:", avg.results[0].text);

      // display() shows any object; one with _repr_html_ gives HTML too.
      const table = await kernel.runCode([
        "class Table:",
        "    def __init__(self, rows): self.rows = rows",
        "    def _repr_html_(self):",
        "        cells = ''.join(f'<tr><td>{c}</td><td>{t}</td></tr>' for c, t in self.rows)",
        "        return f'<table>{cells}</table>'",
        "display(Table(rows))",
      ].join("\n"));
      console.log("formats:", table.results[0].formatNames().join(", "));

      // A cell that crashes the interpreter loses only itself...
      const crash = await kernel.runCode("rows.clear()\nimport os\nos.abort()");
      console.log("crashed cell exit:", crash.exitCode);
      // ...and one past its deadline is killed; the state from before stands.
      const slow = await kernel.runCode("rows.clear()\nwhile True: pass", { timeoutS: 0.5 });
      console.log("slow cell:", slow.fault.type);
      console.log("rows still:", (await kernel.runCode("len(rows)")).results[0].text);

      // Undo the last cell that made a state.
      await kernel.runCode("rows.append(('Nuuk', -1.0))");
      await kernel.rollback();
      console.log("after rollback:", (await kernel.runCode("len(rows)")).results[0].text);
    } finally {
      await kernel.close();
    }
  });
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
