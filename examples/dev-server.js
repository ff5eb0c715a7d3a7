// A service in a box, used while it runs: a web server on a published port.
// The box has no network; only box port 8765 is reachable, from this host,
// at the address the package chose. Run: node examples/dev-server.js
"use strict";

const { withSandbox } = require("kern-sandbox");

async function main() {
  await withSandbox(async (sbx) => {
    await sbx.writeFile("site/index.html", "<h1>hello from a box</h1>\n");
    const server = await sbx.spawn(["python3", "-m", "http.server", "8765", "--bind", "127.0.0.1",
      "--directory", "site"], { ports: [8765], timeoutS: null, stdin: false });
    await server.waitForPort(8765, { timeoutS: 30 }); // a listener in the box answered
    const { url } = server.ports[8765];
    const res = await fetch(url);
    console.log(`GET ${url.replace(/:\d+$/, ":PORT")} -> ${res.status}: ${(await res.text()).trim()}`);
    server.kill(); // SIGTERM to the server, the box after 2 s
    const result = await server.wait();
    console.log(`server stopped: fault ${result.fault}, exit ${result.exitCode}`);
  });
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
