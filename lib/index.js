"use strict";

const { Sandbox, withSandbox, runCode } = require("./sandbox");
const { ExecutionResult, Result } = require("./result");
const { Kernel } = require("./kernel");
const { BoxProcess } = require("./process");
const { SandboxError, MountRefused } = require("./errors");
const { AbortError } = require("./abort");
const { isKilledFault } = require("./faults");
const { doctor } = require("./doctor");
const { version } = require("../package.json");

module.exports = {
  Sandbox,
  withSandbox,
  runCode,
  ExecutionResult,
  SandboxError,
  MountRefused,
  AbortError,
  isKilledFault,
  Result,
  Kernel,
  BoxProcess,
  doctor,
  version,
};
