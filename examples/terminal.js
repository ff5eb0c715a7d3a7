// A shell on a terminal in a box: commands typed one at a time, the size
// changed while it runs, and ^C interrupting a command the shell outlives.
// Run: node examples/terminal.js
"use strict";

const { withSandbox } = require("kern-sandbox");

async function main() {
  await withSandbox(async (sbx) => {
    const shell = await sbx.spawn(["sh", "-i"], { pty: { cols: 100, rows: 30 }, env: { PS1: "box$" } });
    let screen = "";
    shell.stdout.on("data", (chunk) => (screen += chunk));
    // Resolves once the shell shows its prompt again after screen[from].
    const prompt = (from = 0) => new Promise((resolve) => {
      const check = () => (screen.slice(from).endsWith("box$") ? resolve() : setTimeout(check, 10));
      check();
    });
    // Types a line at the prompt; resolves with what the command printed
    // (the terminal echoes the line itself first).
    const type = async (line) => {
      const from = screen.length;
      shell.stdin.write(`${line}\n`);
      await prompt(from + line.length);
      const lines = screen.slice(from).split("\r\n");
      return lines.slice(lines.indexOf(line) + 1, -1).join(" ");
    };
    await prompt();
    console.log(`size: ${await type("stty size")}`);
    shell.resize(132, 43);
    console.log(`resized: ${await type("stty size")}`);
    console.log(`a terminal: ${await type("test -t 0 && echo yes")}`);
    shell.stdin.write("sleep 100\n");
    await new Promise((r) => setTimeout(r, 300));
    const from = screen.length;
    shell.stdin.write("\x03"); // ^C: SIGINT to the foreground job only
    await prompt(from);
    console.log(`after ^C: ${await type("echo status $?")}`);
    shell.stdin.write("exit\n");
    const result = await shell.wait();
    console.log(`shell exited ${result.exitCode}`);
  });
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
