"use strict";

// The file calls the frameworks want and the Sandbox has no host call for:
// stat, one directory's entries with their types, deleting one file. Each
// runs a short sh script in a box, with the path as an argument (never in
// the script's text), so whatever a box planted in the workspace (a symlink
// to /etc, a directory swapped for a link) is followed only inside a box,
// which sees nothing of the host but the workspace.
const { sandboxError } = require("../errors");
const { boxPath, inBoxPath } = require("./paths");

const STAT = `p="$1"
if [ ! -e "$p" ]; then echo missing; exit 0; fi
if [ -d "$p" ]; then echo directory 0; exit 0; fi
if [ -f "$p" ]; then
  s=$(stat -L -c %s -- "$p" 2>/dev/null) || s=$(wc -c < "$p") || exit 3
  echo file $s; exit 0
fi
echo other 0`;

// Entries as "type NUL name NUL": a name may hold any byte but NUL and '/'.
const LIST = `d="$1"
if [ ! -e "$d" ] && [ ! -L "$d" ]; then echo missing; exit 0; fi
if [ ! -d "$d" ]; then echo notdir; exit 0; fi
cd -- "$d" || exit 3
echo ok
for f in * .*; do
  case "$f" in .|..) continue;; esac
  if [ -L "$f" ]; then t=symlink
  elif [ ! -e "$f" ]; then continue
  elif [ -d "$f" ]; then t=directory
  elif [ -f "$f" ]; then t=file
  else t=other; fi
  printf '%s\\000%s\\000' "$t" "$f"
done`;

const DELETE = `p="$1"
if [ -L "$p" ]; then rm -f -- "$p" || exit 3; echo deleted; exit 0; fi
if [ ! -e "$p" ]; then echo missing; exit 0; fi
if [ -d "$p" ]; then echo directory; exit 0; fi
rm -f -- "$p" || exit 3
echo deleted`;

/** Runs script with the box path of rel as $1; its stdout, or a
 * SandboxError with what the box said when it failed. */
async function inBox(sbx, script, rel, what, signal) {
  const opts = signal ? { signal } : {};
  const r = await sbx.run(["sh", "-c", script, "sh", inBoxPath(rel)], opts);
  if (!r.success)
    throw sandboxError("ERR_SANDBOX_INVALID_PATH", `cannot ${what} ${JSON.stringify(boxPath(rel))}: ` +
      `${(r.fault && r.fault.message) || r.stderr.trim() || `exit ${r.exitCode}`}`);
  return r.stdout;
}

/** { type: "file" | "directory" | "other", size } or null; symlinks followed (in the box). */
async function stat(sbx, rel, signal) {
  const [type, size] = (await inBox(sbx, STAT, rel, "stat", signal)).trim().split(" ");
  if (type === "missing") return null;
  return { type, size: Number(size) || 0 };
}

/** [{ name, type: "file" | "directory" | "symlink" | "other" }], null when
 * missing; a path that is no directory is an error. The package's own
 * temporary names (.ks-*) are left out, as listFiles leaves them out. */
async function listDirectory(sbx, rel, signal) {
  const out = await inBox(sbx, LIST, rel, "list", signal);
  if (out.startsWith("missing")) return null;
  if (out.startsWith("notdir"))
    throw sandboxError("ERR_SANDBOX_INVALID_PATH", `cannot list ${JSON.stringify(boxPath(rel))}: not a directory`);
  const fields = out.slice(out.indexOf("\n") + 1).split("\0");
  const entries = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (!fields[i + 1].startsWith(".ks-")) entries.push({ name: fields[i + 1], type: fields[i] });
  }
  return entries;
}

/** true when the file (or the symlink itself) was deleted, false when
 * there was none; a directory is an error. */
async function deleteFile(sbx, rel, signal) {
  const out = (await inBox(sbx, DELETE, rel, "delete", signal)).trim();
  if (out === "missing") return false;
  if (out === "directory")
    throw sandboxError("ERR_SANDBOX_INVALID_PATH", `cannot delete ${JSON.stringify(boxPath(rel))}: it is a directory`);
  return true;
}

module.exports = { stat, listDirectory, deleteFile };
