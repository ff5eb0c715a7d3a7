"use strict";

// The real kern the integration tests run against, if there is one: the
// caller's KERN_BIN (as the package itself reads it; test/00.setup.js keeps
// it as KS_CALLER_KERN_BIN before pointing KERN_BIN at the double), else
// KERN_INTEGRATION_BIN, else `kern` in an absolute PATH entry; with the images
// of ../shared/tools/make-kern-images.sh in its cache. `why` says, for a SKIP
// line, exactly what is missing (null when everything is there).
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const h = require("./harness");

const tried = [];

function findRealKern() {
  const cands = [];
  for (const v of ["KS_CALLER_KERN_BIN", "KERN_INTEGRATION_BIN"]) {
    if (process.env[v]) cands.push([process.env[v], v === "KS_CALLER_KERN_BIN" ? "KERN_BIN" : v]);
  }
  for (const dir of (process.env.PATH || "").split(":").filter((d) => path.isAbsolute(d)))
    cands.push([path.join(dir, "kern"), "PATH"]);
  for (const [c, from] of cands) {
    try {
      fs.accessSync(c, fs.constants.X_OK);
      if (fs.realpathSync(c) !== fs.realpathSync(h.fakeKern())) return fs.realpathSync(c);
    } catch {
      if (from !== "PATH") tried.push(`${from}=${c} is not an executable file`);
    }
  }
  return null;
}

function imagesOf(kern) {
  try {
    return execFileSync(kern, ["images"], { encoding: "utf8", timeout: 20000, stdio: "pipe" });
  } catch {
    return "";
  }
}

const realKern = findRealKern();
const images = realKern ? imagesOf(realKern) : "";
const haveImage = (ref) => images.includes(ref.split(":")[0]) && images.includes(ref.split(":")[1] || "");
const why = realKern === null
  ? `no real kern found${tried.length ? ` (${tried.join("; ")})` : ""}: set KERN_BIN or ` +
    "KERN_INTEGRATION_BIN to its absolute path, or put kern on PATH"
  : !haveImage("python:3.12-slim")
    ? `kern at ${realKern} has no python:3.12-slim image (run ../shared/tools/make-kern-images.sh)`
    : null;

/**
 * Mocha hooks for a describe() of real-kern tests: KERN_BIN names the real
 * kern while they run, and each test SKIPs, saying why, when there is none.
 * Returns a function that gives the package (loaded in before()).
 */
function useRealKern() {
  let saved;
  let kern = null;
  before(function () {
    if (why !== null) return;
    saved = process.env.KERN_BIN;
    process.env.KERN_BIN = realKern;
    kern = require("../..");
  });
  after(function () {
    if (why !== null) return;
    if (saved === undefined) delete process.env.KERN_BIN;
    else process.env.KERN_BIN = saved;
  });
  beforeEach(function () {
    if (why !== null) h.skipHost(this, why);
  });
  return () => kern;
}

module.exports = { realKern, haveImage, why, useRealKern };
