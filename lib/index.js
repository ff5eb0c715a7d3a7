"use strict";

const { Sandbox, withSandbox, runCode } = require("./sandbox");
const { ExecutionResult } = require("./result");
const { SandboxError, MountRefused } = require("./errors");
const { version } = require("../package.json");

module.exports = {
  Sandbox,
  withSandbox,
  runCode,
  ExecutionResult,
  SandboxError,
  MountRefused,
  version,
};
