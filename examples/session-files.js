// A session: files persist between calls in the workspace, processes do not.
// Run: node examples/session-files.js
"use strict";

const { withSandbox } = require("kern-sandbox");

async function main() {
  await withSandbox({ timeoutS: 20 }, async (sbx) => {
    await sbx.writeFile("data.csv", "city,temp\nOslo,4\nLima,19\nCairo,27\n");
    const r = await sbx.runCode(`
import csv, json, os
rows = list(csv.DictReader(open("data.csv")))
hot = [row["city"] for row in rows if int(row["temp"]) > 10]
os.makedirs("out", exist_ok=True)
with open("out/summary.json", "w") as f:
    json.dump({"hot": hot}, f)
print(len(rows), "rows")
`);
    console.log(r.stdout.trim()); // 3 rows
    console.log("files this call made:", r.files); // [{ path: "out/summary.json", size, change: "created" }]
    const summary = JSON.parse(await sbx.readFile("out/summary.json", { maxBytes: 1 << 20 }));
    console.log(summary); // { hot: [ 'Lima', 'Cairo' ] }
    if (!r.success || summary.hot.length !== 2) process.exitCode = 1;
  });
}

main();
