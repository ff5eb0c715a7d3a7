{
  "targets": [
    {
      "target_name": "kern_sandbox",
      "sources": [
        "csrc/core/workspace/closer.c",
        "csrc/core/workspace/commit.c",
        "csrc/core/compat.c",
        "csrc/core/envfd.c",
        "csrc/core/box/box.c",
        "csrc/core/box/box-api.c",
        "csrc/core/box/box-claim.c",
        "csrc/core/box/box-scan.c",
        "csrc/core/box/box-tail.c",
        "csrc/core/box/box-feed.c",
        "csrc/core/box/fdpass.c",
        "csrc/core/box/box-proc.c",
        "csrc/core/box/feed.c",
        "csrc/core/box/boxstate.c",
        "csrc/core/box/channel.c",
        "csrc/core/box/interp.c",
        "csrc/core/box/interpreter.c",
        "csrc/core/box/interpreter-cells.c",
        "csrc/core/box/keys.c",
        "csrc/core/box/boxpipes.c",
        "csrc/core/box/loop.c",
        "csrc/core/box/timers.c",
        "csrc/core/box/outbuf.c",
        "csrc/core/box/proc.c",
        "csrc/core/archive/snapshot.c",
        "csrc/core/archive/tar.c",
        "csrc/core/box/text.c",
        "csrc/core/workspace/wsfs.c",
        "csrc/core/workspace/wswalk.c",
        "csrc/core/workspace/wsscan.c",
        "csrc/core/workspace/wstab.c",
        "csrc/core/workspace/wstrack.c",
        "csrc/core/workspace/wstrack-events.c",
        "csrc/core/workspace/wswatch.c",
        "csrc/napi/addon.c",
        "csrc/napi/afterturn.c",
        "csrc/napi/binding.c",
        "csrc/napi/call.c",
        "csrc/napi/cell.c",
        "csrc/napi/convert.c",
        "csrc/napi/errnames.c",
        "csrc/napi/fs.c",
        "csrc/napi/handle.c",
        "csrc/napi/opts.c",
        "csrc/napi/propkeys.c",
        "csrc/napi/pack.c",
        "csrc/napi/protocol.c",
        "csrc/napi/request.c",
        "csrc/napi/run.c",
        "csrc/napi/feed.c",
        "csrc/napi/testing.c",
        "csrc/napi/tty.c",
        "csrc/napi/turn.c",
        "csrc/napi/util.c",
        "csrc/napi/watch.c"
      ],
      "defines": ["NAPI_VERSION=8"],
      "#zlib": "zlib comes from Node itself: node-gyp puts Node's zlib.h first on the include path and the node binary exports its symbols, so the addon needs no zlib1g-dev and uses the exact zlib Node runs (test/70.snapshot pins the version).",
      "cflags": [
        "-std=gnu11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-fvisibility=hidden",
        "-fno-strict-aliasing"
      ],
      "cflags!": ["-fno-exceptions"],
      "configurations": {
        "Debug": {
          "#": "The Debug build is the sanitizer build (npm run test:asan). KS_FAILPOINTS: the pauses tests put into the engine's races (csrc/core/box/sup-internal.h); never in a release build. KS_STATE_CHECKS: an illegal box state transition aborts (csrc/core/box/boxstate.h). KS_TEST_NATIVES: the counts the tests' census reads (csrc/napi/testing.c).",
          "defines": ["KS_FAILPOINTS", "KS_STATE_CHECKS", "KS_TEST_NATIVES"],
          "cflags": [
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=undefined",
            "-fno-omit-frame-pointer",
            "-O1",
            "-g"
          ],
          "ldflags": ["-fsanitize=address,undefined"]
        },
        "Tsan": {
          "#": "The ThreadSanitizer build (npm run test:tsan), built by scripts/build-addon.js --tsan. KS_STATE_CHECKS and KS_TEST_NATIVES as in Debug.",
          "defines": ["KS_STATE_CHECKS", "KS_TEST_NATIVES"],
          "cflags": [
            "-fsanitize=thread",
            "-fno-omit-frame-pointer",
            "-O1",
            "-g"
          ],
          "ldflags": ["-fsanitize=thread"]
        },
        "Test": {
          "#": "What npm test loads (build/Test, built by scripts/build-addon.js --test): the Release build's flags and code, plus the counts the tests' census reads (KS_TEST_NATIVES, csrc/napi/testing.c), which the Release build users load never has.",
          "inherit_from": ["Release"],
          "defines": ["KS_TEST_NATIVES"]
        }
      },
      "conditions": [
        ["OS!='linux'", { "type": "none" }]
      ]
    },
    {
      "target_name": "ks-init",
      "#": "The in-box init (csrc/init/): a separate static program, mounted read-only into every box and run as its command. No sanitizers in any configuration: it runs inside the box, where their runtimes are not.",
      "type": "executable",
      "sources": ["csrc/init/ks-init.c", "csrc/init/spec.c"],
      "cflags": ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O2"],
      "ldflags": ["-static", "-s"],
      "configurations": { "Debug": {}, "Tsan": {}, "Test": { "inherit_from": ["Release"] } },
      "conditions": [
        ["OS!='linux'", { "type": "none" }],
        ["OS=='linux' and (target_arch=='x64' or target_arch=='arm64')", {
          "#": "Without glibc (csrc/init/nolibc.c): its start-up costs every cold box 0.6 ms on a VM. No stack protector (no TLS to hold its canary), no fortify wrappers, and no loop turned into a call of memset inside memset.",
          "sources": ["csrc/init/nolibc.c"],
          "cflags": ["-fno-stack-protector", "-fno-tree-loop-distribute-patterns", "-U_FORTIFY_SOURCE", "-fno-pie"],
          "ldflags": ["-nostdlib", "-no-pie"],
          "libraries": ["-lgcc"]
        }]
      ]
    }
  ]
}
