#!/usr/bin/env bash
# Builds python-mpl:local, a Debian bookworm image with python3 and python3-matplotlib from Debian's
# archive (no container registry, no PyPI), and loads it into a real kern's cache, for the MCP chart
# test in test/integration/mcp-real.test.js. Same approach as ../shared/tools/make-kern-images.sh.
# Needs: root, debootstrap, a real kern ($KERN_BIN or on PATH).
#   test/integration/make-mpl-image.sh [WORKDIR]    (default ${TMPDIR:-/tmp}/kern-mpl-image)
set -euo pipefail
kern=${KERN_BIN:-$(command -v kern || true)}
[ -n "$kern" ] && [ -x "$kern" ] || { echo "make-mpl-image: no kern binary (set KERN_BIN)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "make-mpl-image: install debootstrap first" >&2; exit 2; }
work=${1:-${TMPDIR:-/tmp}/kern-mpl-image}
rootfs="$work/rootfs"
mkdir -p "$work"
if [ ! -x "$rootfs/usr/bin/python3" ]; then
  rm -rf "$rootfs"
  debootstrap --variant=minbase --include=python3,python3-matplotlib,libstdc++6 bookworm "$rootfs" \
    >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
fi
out="$work/img"
rm -rf "$out"; mkdir -p "$out"
tar -C "$rootfs" --numeric-owner -cf "$out/layer.tar" .
sha=$(sha256sum "$out/layer.tar" | cut -d' ' -f1)
printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","LANG=C.UTF-8"],"Cmd":["python3"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}\n' "$sha" >"$out/config.json"
printf '[{"Config":"config.json","RepoTags":["python-mpl:local"],"Layers":["layer.tar"]}]\n' >"$out/manifest.json"
tar -C "$out" -cf "$out.tar" manifest.json config.json layer.tar
"$kern" load -i "$out.tar"
rm -rf "$out" "$out.tar"
"$kern" images
