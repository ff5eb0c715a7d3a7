"use strict";

// Facts about this host that decide kern's command line, read the way kern
// reads them, once per process.
const fs = require("fs");
const os = require("os");
const path = require("path");

// Where kern looks for its id-map helpers (trusted_helper in kern's source).
const HELPER_DIRS = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"];

function helperFound(name) {
  return HELPER_DIRS.some((d) => {
    try {
      return fs.statSync(path.join(d, name)).isFile();
    } catch {
      return false;
    }
  });
}

/** A `name:start:count` row of /etc/subuid or /etc/subgid for us, count > 1. */
function subRange(file, name, id) {
  let text;
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return false;
  }
  return text.split("\n").some((line) => {
    const [who, start, count] = line.split(":");
    if (who !== name && who !== String(id)) return false;
    return /^\s*\d+\s*$/.test(start ?? "") && Number(count) > 1;
  });
}

let uidRange = null;

/**
 * Whether kern can give an --image box a uid range: newuidmap and newgidmap
 * in its trusted directories and a subordinate allocation for this user.
 * Where it cannot, `--no-uid-range` changes nothing but kern's note.
 */
function uidRangeAvailable() {
  if (uidRange === null) {
    let name = null;
    try {
      name = os.userInfo().username;
    } catch {
      /* no passwd entry: kern matches by id alone */
    }
    const uid = typeof process.getuid === "function" ? process.getuid() : 0;
    const gid = typeof process.getgid === "function" ? process.getgid() : 0;
    uidRange = helperFound("newuidmap") && helperFound("newgidmap") &&
      subRange("/etc/subuid", name, uid) && subRange("/etc/subgid", name, gid);
  }
  return uidRange;
}

module.exports = { uidRangeAvailable, helperFound };
