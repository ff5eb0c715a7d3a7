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

/**
 * What a connection option becomes: `make(extra)` gives a new client of our
 * own (a duplicate of a client given, or one from the options or URL), and
 * `bull` is what BullMQ gets. A URL ("redis://:pw@host:6379/0", "rediss://"
 * for TLS) becomes a client of ours, which `dispose()` disconnects.
 */
function connectionOf(connection) {
  const { IORedis } = peers();
  const extra = { maxRetriesPerRequest: null };
  let owned = null;
  if (typeof connection === "string") {
    owned = new IORedis(connection, { ...extra, lazyConnect: true });
    owned.on("error", () => {});
    connection = owned;
  }
  if (connection === null || typeof connection !== "object")
    throw sandboxError("ERR_SANDBOX_INVALID_OPTION", "connection: ioredis options, an ioredis client or a redis:// URL");
  const isClient = typeof connection.duplicate === "function";
  return {
    make: (more = {}) => (isClient ? connection.duplicate({ ...extra, ...more }) : new IORedis({ ...connection, ...extra, ...more })),
    bull: isClient ? connection : { ...connection, ...extra },
    dispose: () => owned && owned.disconnect(),
  };
}

module.exports.connectionOf = connectionOf;
