"use strict";

// bullmq (and the ioredis it ships with) are optional peer dependencies of
// kern-sandbox/cluster: loaded here, when the cluster is first used, never by
// require("kern-sandbox").
const path = require("path");
const { sandboxError } = require("../errors");

let loaded = null;

/** { bullmq, IORedis }, or a SandboxError naming the npm command. */
function peers() {
  if (loaded !== null) return loaded;
  let bullmq;
  try {
    bullmq = require("bullmq");
  } catch (e) {
    if (e && e.code !== "MODULE_NOT_FOUND") throw e;
    throw sandboxError("ERR_SANDBOX_MISSING_PEER",
      "kern-sandbox/cluster needs bullmq: run `npm install bullmq@^5`", { cause: e });
  }
  // ioredis is bullmq's own dependency: take the copy bullmq uses, so a
  // client we make is the class bullmq recognises.
  const IORedis = require(require.resolve("ioredis", { paths: [path.dirname(require.resolve("bullmq"))] }));
  loaded = { bullmq, IORedis: IORedis.default || IORedis };
  return loaded;
}

module.exports = { peers };
