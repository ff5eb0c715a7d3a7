"use strict";

// The Redis names the cluster uses, all under one prefix (default
// "kern-sandbox"), so several clusters can share a Redis.
//
//   {prefix}:oneshot            BullMQ queue of one-shot calls (any worker)
//   {prefix}:host:{workerId}    BullMQ queue of one worker: the calls of the sessions pinned there
//   {prefix}:workers            set of worker ids that have published a heartbeat
//   {prefix}:worker:{workerId}  the worker's heartbeat (JSON, with its policy), with a TTL
//   {prefix}:reply:{clientId}   pub/sub channel: outcomes of the client's calls
//   {prefix}:abort              pub/sub channel: aborts of running calls ("queue/jobId")

const DEFAULT_PREFIX = "kern-sandbox";

function names(prefix = DEFAULT_PREFIX) {
  if (typeof prefix !== "string" || !/^[A-Za-z0-9_.-]{1,64}$/.test(prefix))
    throw new TypeError("prefix: 1-64 of [A-Za-z0-9_.-]");
  return {
    // BullMQ's own key prefix: its keys are {bull}:{queue}:...
    bullPrefix: `${prefix}-bull`,
    oneshot: "oneshot",
    host: (workerId) => `host-${workerId}`,
    workers: `${prefix}:workers`,
    worker: (workerId) => `${prefix}:worker:${workerId}`,
    reply: (clientId) => `${prefix}:reply:${clientId}`,
    abort: `${prefix}:abort`,
  };
}

module.exports = { names, DEFAULT_PREFIX };
