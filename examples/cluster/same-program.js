"use strict";

// The same program, locally or on a cluster: only where `Sandbox` comes from
// changes.
//   node examples/cluster/same-program.js                       (local boxes)
//   REDIS_SOCKET=/run/redis/redis.sock node examples/cluster/same-program.js
//                                     (the cluster: start examples/cluster/worker.js first)
const kern = require("kern-sandbox");

async function analyse({ Sandbox }) {
  const sbx = new Sandbox({ timeoutS: 10 });
  await sbx.open();
  try {
    await sbx.writeFile("data.csv", "city,visits\nLyon,3\nOslo,4\nLima,5\n");
    const r = await sbx.runCode(
      "import csv\nrows = list(csv.DictReader(open('data.csv')))\n" +
      "print(len(rows), 'rows,', sum(int(r['visits']) for r in rows), 'visits')");
    const slow = await sbx.runCode("while True: pass", { timeoutS: 0.5 });
    return { out: r.stdout.trim(), fault: slow.fault && slow.fault.type, files: (await sbx.listFiles()).map((f) => f.path) };
  } finally {
    await sbx.close();
  }
}

async function main() {
  const where = process.env.REDIS_SOCKET || process.env.REDIS_URL;
  let source = kern;
  let cluster = null;
  if (where) {
    const { connect } = require("kern-sandbox/cluster");
    cluster = await connect({ connection: process.env.REDIS_SOCKET ? { path: process.env.REDIS_SOCKET } : process.env.REDIS_URL });
    source = cluster;
  }
  try {
    const { out, fault, files } = await analyse(source);
    console.log(`${cluster ? "cluster" : "local"}: ${out}; a busy loop ended with a ${fault} fault; files ${files.join(",")}`);
  } finally {
    if (cluster) await cluster.close();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
