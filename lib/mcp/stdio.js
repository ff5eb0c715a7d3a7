"use strict";

// What `kern-sandbox mcp` runs: a server on this process's stdin and stdout
// until stdin ends or SIGTERM/SIGINT comes; then every box is killed and a
// temporary workspace removed before the process ends on its own. stdout
// carries only the protocol: anything else the process would print there
// (console.log of a library) goes to stderr.
const { createMcpServer } = require("./server");
const { LineTransport } = require("./transport");

// A close that cannot finish (a kern that SIGKILL cannot end) must not keep
// the process: the engine abandons such a kern to a thread of its own.
const CLOSE_GRACE_MS = 10000;

function stdoutForProtocolOnly() {
  const toStderr = (...args) => console.error(...args);
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
}

/** Serves until the end of stdin or a signal; resolves once all is closed. */
async function serveStdio(options, { input = process.stdin, output = process.stdout } = {}) {
  stdoutForProtocolOnly();
  const mcp = createMcpServer(options);
  const transport = new LineTransport({ input, output, maxLineBytes: options.maxLineBytes });
  transport.onerror = (e) => process.stderr.write(`kern-sandbox mcp: ${e && e.message}\n`);
  let closing = null;
  const stop = () => {
    if (closing === null) {
      const timer = setTimeout(() => {
        process.stderr.write("kern-sandbox mcp: close did not finish in time; exiting\n");
        process.exit(1);
      }, CLOSE_GRACE_MS);
      timer.unref();
      closing = mcp.close().finally(() => clearTimeout(timer));
    }
    return closing;
  };
  const onSignal = () => void stop();
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  const closed = new Promise((resolve) => {
    const prev = transport.onclose;
    transport.onclose = () => {
      prev?.();
      resolve();
    };
  });
  await mcp.connect(transport);
  // Open the session now: setup and the prewarmed boxes are ready for the
  // first call. A failure is reported to stderr and the call that needs the
  // session tries again (and returns the error to the model).
  mcp.sandbox().catch((e) => process.stderr.write(`kern-sandbox mcp: the sandbox did not open: ${e && e.message}\n`));
  await closed;
  await stop();
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
  // Nothing more is read: stdin must not hold the process open.
  if (typeof input.destroy === "function") input.destroy();
}

module.exports = { serveStdio };
