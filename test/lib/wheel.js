"use strict";

// A minimal pure-Python wheel (PEP 427), made with the standard library, for
// the setup tests that install one with pip and no index.
const path = require("path");
const { execFileSync } = require("child_process");

/** A minimal pure-Python wheel (PEP 427) in dir, by the standard library. */
function buildWheel(dir, name, version, source) {
  const file = path.join(dir, `${name}-${version}-py3-none-any.whl`);
  const script = `
import base64, hashlib, sys, zipfile
name, version, source, out = sys.argv[1:5]
info = f"{name}-{version}.dist-info"
files = {f"{name}/__init__.py": source,
         f"{info}/METADATA": f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n",
         f"{info}/WHEEL": "Wheel-Version: 1.0\\nGenerator: ks-test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
record = []
with zipfile.ZipFile(out, "w") as z:
    for n, text in files.items():
        data = text.encode()
        z.writestr(n, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{n},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    z.writestr(f"{info}/RECORD", "\\n".join(record) + "\\n")
`;
  execFileSync("python3", ["-c", script, name, version, source, file]);
  return file;
}

module.exports = { buildWheel };
