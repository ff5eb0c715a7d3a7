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

/** This process's uid and gid (0 where the platform has none). */
function ownIds() {
  return {
    uid: typeof process.getuid === "function" ? process.getuid() : 0,
    gid: typeof process.getgid === "function" ? process.getgid() : 0,
  };
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
    const { uid, gid } = ownIds();
    uidRange = helperFound("newuidmap") && helperFound("newgidmap") &&
      subRange("/etc/subuid", name, uid) && subRange("/etc/subgid", name, gid);
  }
  return uidRange;
}

/**
 * Where kern keeps its runtime tree (each box's scratch layer, its registry
 * and exit records): the first of $XDG_RUNTIME_DIR/kern, /run/user/UID/kern
 * and /tmp/kern-UID it can make (runtime_subdir_candidates in kern's
 * source). Read, never made: the first that is a directory, or that
 * `mkdir -p` could make (its nearest existing ancestor is a directory we
 * may write). Returns { dir, tmpfsAt }, tmpfsAt the directory a runtime
 * dir in memory belongs on (for kern's last resort, /tmp/kern-UID, the
 * /run/user/UID that kern would take first), or null.
 */
function kernRuntimeDir(env = process.env) {
  const { uid } = ownIds();
  const userRun = `/run/user/${uid}`;
  const candidates = [];
  if (env.XDG_RUNTIME_DIR) candidates.push(path.join(env.XDG_RUNTIME_DIR, "kern"));
  candidates.push(`${userRun}/kern`, `/tmp/kern-${uid}`);
  const makeable = (c) => {
    for (let p = c; ; p = path.dirname(p)) {
      let st;
      try {
        st = fs.statSync(p);
      } catch {
        if (path.dirname(p) === p) return false;
        continue;
      }
      if (!st.isDirectory()) return false;
      if (p === c) return true;
      try {
        fs.accessSync(p, fs.constants.W_OK | fs.constants.X_OK);
        return true;
      } catch {
        return false;
      }
    }
  };
  const dir = candidates.find(makeable);
  if (dir === undefined) return null;
  return { dir, tmpfsAt: dir === candidates.at(-1) ? userRun : path.dirname(dir) };
}

/** Octal escapes of /proc/self/mountinfo (a space is \040). */
const unescapeMount = (s) => s.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));

/**
 * The mount that holds path p (itself or its nearest existing ancestor):
 * { mountPoint, fsType, options } (options: the mount's and its super
 * block's, e.g. ["rw", "relatime", "discard"]), or null where
 * /proc/self/mountinfo cannot be read.
 */
function mountOf(p) {
  let real = p;
  for (;;) {
    try {
      real = fs.realpathSync(real);
      break;
    } catch {
      const up = path.dirname(real);
      if (up === real) return null;
      real = up;
    }
  }
  let text;
  try {
    text = fs.readFileSync("/proc/self/mountinfo", "utf8");
  } catch {
    return null;
  }
  let best = null;
  for (const line of text.split("\n")) {
    // id parent major:minor root mountpoint options [optional...] - fstype source superoptions
    const [left, right] = line.split(" - ");
    if (right === undefined) continue;
    const f = left.split(" ");
    const [fsType, , superOptions = ""] = right.split(" ");
    const mountPoint = unescapeMount(f[4]);
    const inside = mountPoint === "/" || real === mountPoint || real.startsWith(`${mountPoint}/`);
    // The longest match wins; of equal ones, the later (mounted over the other).
    if (inside && (best === null || mountPoint.length >= best.mountPoint.length))
      best = { mountPoint, fsType, options: [...f[5].split(","), ...superOptions.split(",")] };
  }
  return best;
}

module.exports = { uidRangeAvailable, helperFound, ownIds, kernRuntimeDir, mountOf };
