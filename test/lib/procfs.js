"use strict";

// The one reader of /proc/<pid>/stat for the tests (process tables, parent
// and group checks, start times, sessions).
const fs = require("fs");

/** The fields of /proc/<pid>/stat the tests use, or null once the process
 * is gone. The command name (field 2) may hold spaces and ")", so fields
 * are counted from after its last ")". */
function readStat(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return null;
  }
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]), sid: Number(f[3]),
    startTicks: Number(f[19]), cpuTicks: Number(f[11]) + Number(f[12]) };
}

/** The pids listed in /proc now. */
function pids() {
  return fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name)).map(Number);
}

module.exports = { readStat, pids };
