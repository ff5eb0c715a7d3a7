"use strict";

// Materializes what an OpenAI Agents manifest asks for in the workspace:
// `file` and `dir` entries (with children), and `local_file` (a host file
// the developer named, copied in). Entries a kern box cannot honour here
// (local_dir, git_repo, mounts) are refused with what to do instead.
const fs = require("fs");
const { sandboxError } = require("../errors");
const { workspacePath, inBoxPath, BOX_WORKSPACE } = require("../adapter/paths");
const { writeBytes } = require("../adapter/files");

/** manifest: a Manifest (or { root, entries }). */
async function materialize(sbx, manifest, sdk) {
  const root = manifest.root ?? BOX_WORKSPACE;
  if (root !== BOX_WORKSPACE)
    throw sandboxError("ERR_SANDBOX_NOT_SUPPORTED", `a kern box's workspace is ${BOX_WORKSPACE}; ` +
      `the manifest's root ${JSON.stringify(root)} cannot be served (leave root at its default)`);
  const dirs = [];
  const walk = async (base, entries) => {
    for (const [name, entry] of Object.entries(entries || {})) {
      const rel = workspacePath(base === "" ? name : `${base}/${name}`, { what: "manifest path" });
      await one(sbx, rel, entry, dirs, walk);
    }
  };
  await walk("", manifest.entries);
  if (dirs.length > 0) {
    const r = await sbx.run(["mkdir", "-p", "--", ...dirs.map(inBoxPath)]);
    if (r.exitCode !== 0) throw sandboxError("ERR_SANDBOX_INVALID_PATH", `cannot make the manifest's directories: ${r.stderr}`);
  }
  void sdk;
}

async function one(sbx, rel, entry, dirs, walk) {
  switch (entry && entry.type) {
    case "file":
      await writeBytes(sbx, rel, typeof entry.content === "string" ? Buffer.from(entry.content, "utf8")
        : Buffer.from(entry.content));
      return;
    case "dir":
      dirs.push(rel);
      await walk(rel, entry.children);
      return;
    case "local_file":
      await writeBytes(sbx, rel, await fs.promises.readFile(entry.src));
      return;
    default:
      throw sandboxError("ERR_SANDBOX_NOT_SUPPORTED", `the manifest entry ${JSON.stringify(rel)} of type ` +
        `${JSON.stringify(entry && entry.type)} cannot be materialized in a kern box: use file, dir or local_file ` +
        "entries (or copy the tree in with writeFile / hydrateWorkspace)");
  }
}

module.exports = { materialize };
