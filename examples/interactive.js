// Talking to an interactive program while it runs: a Python REPL in a box,
// one question at a time, each answer read before the next is asked.
// Run: node examples/interactive.js
"use strict";

const { withSandbox } = require("kern-sandbox");

/** The next line the process prints on stdout. */
function nextLine(stream) {
  return new Promise((resolve) => {
    let text = "";
    const onData = (chunk) => {
      text += chunk;
      const nl = text.indexOf("\n");
      if (nl < 0) return;
      stream.off("data", onData);
      resolve(text.slice(0, nl));
    };
    stream.on("data", onData);
  });
}

async function main() {
  await withSandbox(async (sbx) => {
    // -i: the REPL reads its statements from stdin; -u: answers unbuffered.
    const repl = await sbx.spawn(["python3", "-u", "-i", "-q"]);
    for (const question of ["1 + 1", "x = 21", "x * 2", "'box'.upper()"]) {
      const answer = question.startsWith("x =") ? null : nextLine(repl.stdout);
      repl.stdin.write(`${question}\n`);
      if (answer) console.log(`>>> ${question}\n${await answer}`);
    }
    repl.stdin.end(); // EOF: the REPL exits
    const result = await repl.wait();
    console.log(`repl exited ${result.exitCode}`);
  });
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
