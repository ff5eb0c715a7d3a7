"use strict";

// kern-sandbox/cluster: kern-sandbox workers on BullMQ and Redis, and a
// client with the local API's shape (README, "Many machines"). bullmq is an
// optional peer dependency, loaded at the first startWorker()/connect().
const { startWorker, defaultCapacity } = require("./worker");
const { connect } = require("./client");
const { normalizePolicy, DEFAULT_POLICY } = require("./policy");

module.exports = { startWorker, connect, normalizePolicy, DEFAULT_POLICY, defaultCapacity };
