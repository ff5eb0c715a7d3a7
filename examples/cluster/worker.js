// A cluster worker started from code (the same as `npx kern-sandbox worker`):
//   REDIS_SOCKET=/run/redis/redis.sock node examples/cluster/worker.js
//   REDIS_URL=redis://:password@redis:6379 node examples/cluster/worker.js
// SIGTERM (or Ctrl-C) drains it: running calls finish, then it exits.
"use strict";

const { startWorker } = require("kern-sandbox/cluster");

async function main() {
  // ioredis options ({ path } for a socket, { host, port, password, tls }), a client, or a URL.
  const connection = process.env.REDIS_SOCKET ? { path: process.env.REDIS_SOCKET }
    : process.env.REDIS_URL || "redis://127.0.0.1:6379";
  const worker = await startWorker({
    connection,
    capacity: 4,
    // Refused, never clamped: a job asking for more gets ERR_SANDBOX_POLICY_REFUSED.
    policy: { images: ["python:3.12-slim"], maxMemoryMb: 1024, maxTimeoutS: 120, env: false, network: false },
  });
  console.log(`worker ${worker.id} takes up to ${worker.capacity} calls`);
  await new Promise((resolve) => {
    process.once("SIGTERM", resolve);
    process.once("SIGINT", resolve);
  });
  await worker.close({ graceS: 30 });
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
