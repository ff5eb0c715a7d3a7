"use strict";

// The real kern the integration tests run against, if there is one: found
// through KERN_INTEGRATION_BIN or `kern` in an absolute PATH entry, with the
// images of ../shared/tools/make-kern-images.sh in its cache. `why` says,
// for a SKIP line, what is missing (null when everything is there).
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const h = require("./harness");

function findRealKern() {
  const cands = [];
  if (process.env.KERN_INTEGRATION_BIN) cands.push(process.env.KERN_INTEGRATION_BIN);
  for (const dir of (process.env.PATH || "").split(":").filter((d) => path.isAbsolute(d)))
    cands.push(path.join(dir, "kern"));
  for (const c of cands) {
    try {
      fs.accessSync(c, fs.constants.X_OK);
      if (fs.realpathSync(c) !== fs.realpathSync(h.fakeKern())) return fs.realpathSync(c);
    } catch {
      /* next */
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
  ? "no real kern found (set KERN_INTEGRATION_BIN or put kern on PATH)"
  : !haveImage("python:3.12-slim")
    ? `kern at ${realKern} has no python:3.12-slim image (run ../shared/tools/make-kern-images.sh)`
    : null;

module.exports = { realKern, haveImage, why };
