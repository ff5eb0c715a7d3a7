"use strict";

// `npx kern-sandbox worker (--redis URL | --redis-socket PATH) [--capacity N]
// [policy flags]`: a cluster worker (lib/cluster/worker.js) until SIGTERM or
// SIGINT, which drain it: no new jobs, running ones finish (up to --grace-s),
// then exit 0. Prints "ready ID" on stdout once it takes jobs.
const USAGE = `usage: kern-sandbox worker (--redis URL | --redis-socket PATH) [options]
  --redis URL            redis://[:password@]host:port[/db], rediss:// for TLS (or REDIS_URL)
  --redis-socket PATH    a unix socket
  --capacity N           calls at once (default: from the cores and memory)
  --prefix NAME          the cluster's key prefix (default kern-sandbox)
  --state-dir DIR        where run directories live (default $TMPDIR/kern-sandbox-worker-UID)
  --grace-s N            on SIGTERM, how long running calls may go on (default 30)
  --warm N               sessions opened ahead for one-shot calls (default capacity / 2, at least 1)
policy (a job asking for more is refused, never clamped):
  --image REF            an allowed image (repeat; default python:3.12-slim)
  --any-image            allow every image kern has
  --max-memory-mb N      (default 2048)     --max-cpus N        (default: no cap asked)
  --max-timeout-s N      (default 300)      --max-output-bytes N (default 64 MiB)
  --allow-env            jobs may carry env (its values then sit in Redis)
  --allow-network        jobs may ask for network, egressAllow and setup
  --allow-mounts         jobs may ask for host mounts
timing (tests, tuning):
  --heartbeat-ms N (2000)  --lock-ms N (BullMQ lockDuration, 10000)  --stalled-ms N (stalledInterval, 5000)
`;

const NUMBER_FLAGS = { "--capacity": "capacity", "--grace-s": "graceS", "--warm": "warm", "--max-memory-mb": "maxMemoryMb",
  "--max-cpus": "maxCpus", "--max-timeout-s": "maxTimeoutS", "--max-output-bytes": "maxOutputBytes",
  "--heartbeat-ms": "heartbeatMs", "--lock-ms": "lockDurationMs", "--stalled-ms": "stalledIntervalMs" };

function parse(argv) {
  const a = { policy: {}, images: [], timing: {}, graceS: 30 };
  for (let i = 0; i < argv.length; i++) {
    const f = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${f} needs a value`);
      return argv[++i];
    };
    if (f === "--redis") a.url = next();
    else if (f === "--redis-socket") a.socket = next();
    else if (f === "--prefix") a.prefix = next();
    else if (f === "--state-dir") a.stateDir = next();
    else if (f === "--image") a.images.push(next());
    else if (f === "--any-image") a.policy.images = null;
    else if (f === "--allow-env") a.policy.env = true;
    else if (f === "--allow-network") a.policy.network = true;
    else if (f === "--allow-mounts") a.policy.mounts = true;
    else if (f in NUMBER_FLAGS) {
      const v = Number(next());
      const k = NUMBER_FLAGS[f];
      if (!Number.isFinite(v) || v < 0 || (v === 0 && k !== "warm")) throw new Error(`${f} needs a number > 0`);
      if (k === "capacity" || k === "graceS" || k === "warm") a[k] = v;
      else if (k.endsWith("Ms")) a.timing[k] = v;
      else a.policy[k] = v;
    } else throw new Error(`unknown argument ${JSON.stringify(f)}`);
  }
  if (a.images.length) a.policy.images = a.images;
  a.url ??= a.socket ? undefined : process.env.REDIS_URL;
  if (!a.url === !a.socket) throw new Error("give one of --redis URL and --redis-socket PATH");
  return a;
}

async function main(argv) {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(USAGE);
    return 0;
  }
  let a;
  try {
    a = parse(argv);
  } catch (e) {
    process.stderr.write(`kern-sandbox worker: ${e.message}\n${USAGE}`);
    return 2;
  }
  const cluster = require("../cluster");
  const connection = a.url ?? { path: a.socket };
  const worker = await cluster.startWorker({ connection, capacity: a.capacity, warm: a.warm, policy: a.policy, prefix: a.prefix,
    stateDir: a.stateDir, timing: a.timing });
  for (const dir of worker.removedRunDirs) process.stderr.write(`kern-sandbox worker: removed ${dir} of a worker that died\n`);
  process.stdout.write(`ready ${worker.id}\n`);
  await new Promise((resolve) => {
    const stop = () => {
      // The drain's every step is bounded (grace, then a few seconds per
      // Redis step); this is the backstop if one is not.
      setTimeout(() => {
        process.stderr.write("kern-sandbox worker: the drain did not end in time; exiting\n");
        process.exit(0);
      }, (a.graceS + 40) * 1000).unref();
      resolve();
    };
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
  await worker.close({ graceS: a.graceS });
  // Everything is closed; a client still reconnecting to a Redis that went
  // away must not keep the process (a drain exits 0).
  setTimeout(() => process.exit(0), 2000).unref();
  return 0;
}

module.exports = { main, parse };
