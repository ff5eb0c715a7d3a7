"use strict";

// Which host paths may be bound into a box. The reference refused a short
// list by string equality; here a source is refused after symlink resolution
// when it is, contains, or lies inside a sensitive path, or is the same inode
// as one (a bind-mount alias).
const fs = require("fs");
const os = require("os");
const path = require("path");
const { MountRefused } = require("./errors");

const BOX_WORKSPACE = "/workspace";

// Refused with everything beneath them.
const SENSITIVE_TREES = ["/etc", "/root", "/boot", "/proc", "/sys", "/dev", "/run", "/var/run"];
// Refused exactly (and every ancestor of them is refused too).
const SENSITIVE_PATHS = [
  "/home", // every user's home; a path inside your own home stays allowed
  "/var/run/docker.sock",
  "/run/docker.sock",
  "/run/containerd/containerd.sock",
  "/run/podman/podman.sock",
];
const HOME_SECRETS = [".ssh", ".aws", ".config", ".docker", ".kube", ".gnupg", ".netrc",
  ".local/share/keyrings", ".azure", ".gcloud"];
const BOX_RESERVED_TARGETS = new Set(["/", "/proc", "/sys", "/dev"]);

function realOrSelf(p) {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

function sensitiveTrees() {
  const home = realOrSelf(os.homedir());
  const trees = [...SENSITIVE_TREES, ...HOME_SECRETS.map((d) => path.join(home, d))];
  if (process.env.XDG_RUNTIME_DIR && path.isAbsolute(process.env.XDG_RUNTIME_DIR))
    trees.push(realOrSelf(process.env.XDG_RUNTIME_DIR));
  if (process.env.SSH_AUTH_SOCK && path.isAbsolute(process.env.SSH_AUTH_SOCK))
    trees.push(realOrSelf(process.env.SSH_AUTH_SOCK));
  return { home, trees: trees.map((t) => (t === "/" ? t : realOrSelf(t))) };
}

function within(child, parent) {
  return child === parent || child.startsWith(parent === "/" ? "/" : `${parent}/`);
}

function statOrNull(p) {
  try {
    return fs.statSync(p);
  } catch {
    return null;
  }
}

/** Refuses a host path a box would see, with a message that says why. */
function checkHostSource(src, what) {
  if (typeof src !== "string" || src === "" || src.includes("\0"))
    throw new MountRefused(`${what} must be an absolute host path, got ${JSON.stringify(src)}`);
  if (!path.isAbsolute(src))
    throw new MountRefused(`${what} must be an absolute host path, got ${JSON.stringify(src)}`);
  let real;
  try {
    real = fs.realpathSync(src); // resolve symlinks before any comparison
  } catch {
    throw new MountRefused(`${what} ${JSON.stringify(src)} does not exist: create the directory first`);
  }
  if (/[:\n\r,]/.test(real) || /[\u0000-\u001f]/.test(real))
    throw new MountRefused(
      `${what} ${JSON.stringify(real)} contains ':', ',' or a control character, which kern's ` +
        "-v SRC:DST syntax cannot carry; use a path without them");
  const { home, trees } = sensitiveTrees();
  const refuse = () => {
    throw new MountRefused(
      `refusing ${what} ${JSON.stringify(real)}: it is, contains or lies inside a sensitive host ` +
        "path (system directories, your home directory, credentials, runtime sockets); mount a " +
        "dedicated directory instead");
  };
  for (const t of trees) if (within(real, t) || within(t, real)) refuse();
  for (const p of [...SENSITIVE_PATHS, home]) if (within(p, real)) refuse();
  // A bind mount can give a sensitive directory a second, innocent name
  // (A30), so the same rules are applied again by device and inode: the
  // source must not be a sensitive path or an ancestor of one (an alias of
  // "/" contains /etc), and no ancestor of the source may be a sensitive
  // tree (a path inside an alias of /etc lies inside /etc).
  const ids = (paths) => new Set(paths.map(statOrNull).filter(Boolean).map((s) => `${s.dev}:${s.ino}`));
  const withAncestors = [];
  for (const p of [...trees, ...SENSITIVE_PATHS, home]) {
    for (let a = p; ; a = path.dirname(a)) {
      withAncestors.push(a);
      if (a === path.dirname(a)) break;
    }
  }
  const contained = ids(withAncestors);
  const treeIds = ids(trees);
  const st = statOrNull(real);
  if (st && contained.has(`${st.dev}:${st.ino}`)) refuse();
  for (let a = real; ; a = path.dirname(a)) {
    const s = a === real ? st : statOrNull(a);
    if (s && treeIds.has(`${s.dev}:${s.ino}`)) refuse();
    if (a === path.dirname(a)) break;
  }
  return real;
}

function checkTarget(target) {
  if (typeof target !== "string" || !target.startsWith("/"))
    throw new MountRefused(
      `a mount target must be an absolute path in the box, got ${JSON.stringify(target)}`);
  const parts = target.split("/");
  if (parts.some((c) => c === ".." || c === "."))
    throw new MountRefused(`a mount target must not contain '.' or '..': ${JSON.stringify(target)}`);
  if (/[:\n\r,\u0000]/.test(target) || /[\u0000-\u001f]/.test(target))
    throw new MountRefused(
      `a mount target must not contain ':', ',' or control characters: ${JSON.stringify(target)}`);
  const norm = "/" + parts.filter(Boolean).join("/");
  if (BOX_RESERVED_TARGETS.has(norm))
    throw new MountRefused(`a mount target cannot replace the box's own ${JSON.stringify(norm)}`);
  return norm;
}

/** Validates the `mounts` option; returns [{ src, target, ro }]. */
function validateMounts(mounts) {
  if (mounts === undefined || mounts === null) return [];
  if (typeof mounts !== "object" || Array.isArray(mounts))
    throw new MountRefused("options.mounts must be an object { hostSrc: target | [target, mode] }");
  const out = [];
  for (const [src, spec] of Object.entries(mounts)) {
    let target;
    let ro = false;
    if (Array.isArray(spec)) {
      if (spec.length !== 2)
        throw new MountRefused(`mount ${JSON.stringify(src)}: expected [target, "ro" | "rw"]`);
      const [t, mode] = spec;
      if (mode !== "ro" && mode !== "rw")
        throw new MountRefused(`mount mode must be "ro" or "rw", got ${JSON.stringify(mode)}`);
      target = t;
      ro = mode === "ro";
    } else {
      target = spec;
    }
    const tgt = checkTarget(target);
    out.push({ src: checkHostSource(src, "mount source"), target: tgt, ro });
  }
  return out;
}

module.exports = { validateMounts, checkHostSource, BOX_WORKSPACE, within };
