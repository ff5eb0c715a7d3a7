#!/usr/bin/env bash
# Runs the whole mocha suite against the ASan+UBSan build of the addon
# (build/Debug), with the sanitizer runtimes preloaded into Node.
#
# Every sanitizer report goes to a log file per process. The run fails on:
#   - any ASan or UBSan error report, from any process;
#   - any leak whose allocation stack passes through the addon (our module
#     or our sources).
# Leaks with no frame of ours are Node's and V8's own process-lifetime
# allocations: Node is not built with ASan and does not free them at exit.
# LeakSanitizer's suppression files match any frame of a stack (and every
# stack of ours also has node:: frames), so they cannot make that
# distinction; this filter does.
set -uo pipefail
cd "$(dirname "$0")/.."

node scripts/build-addon.js --debug >/dev/null || exit 1

logs=$(mktemp -d "${TMPDIR:-/tmp}/ks-asan-XXXXXX")
# Tests run some child processes as an unprivileged user (C13): their
# sanitizer runtime must be able to write its log here too.
chmod 1777 "$logs"
asan=$(gcc -print-file-name=libasan.so)
ubsan=$(gcc -print-file-name=libubsan.so)
export LD_PRELOAD="$asan $ubsan"
# detect_odr_violation=0: Node exports its own zlib, which the addon uses on
# purpose. exitcode=0: leaks are judged below, per stack.
export ASAN_OPTIONS="detect_leaks=1:exitcode=0:detect_odr_violation=0:log_path=$logs/asan:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan"
export KERN_SANDBOX_BUILD=Debug

npx mocha "$@"
status=$?
unset LD_PRELOAD

node - "$logs" <<'JS'
const fs = require("fs");
const path = require("path");
const dir = process.argv[2];
let bad = 0;
let nodeLeaks = 0;
for (const f of fs.readdirSync(dir)) {
  const text = fs.readFileSync(path.join(dir, f), "utf8");
  // Reports are separated by blank lines; leak reports start "Direct leak" /
  // "Indirect leak", errors start with "ERROR:" or "runtime error:".
  for (const block of text.split(/\n(?=(?:Direct|Indirect) leak|=+\n==\d+==ERROR)/)) {
    const ours = /kern_sandbox\.node|\/csrc\//.test(block);
    if (/ERROR: AddressSanitizer|runtime error:/.test(block) && !/detected memory leaks/.test(block)) {
      bad++;
      console.error(`sanitizer error in ${f}:\n${block.slice(0, 4000)}`);
    } else if (/(Direct|Indirect) leak/.test(block)) {
      // Node's own record for an external or wrapped object (allocated
      // inside napi_create_external / napi_wrap, frame #1) that was still
      // reachable when the process exited: its finalizer runs at GC, which
      // a process that just ends never reaches. Not memory of ours.
      const nodeHandle = /#1 0x[0-9a-f]+ in (napi_create_external|napi_wrap) \(/.test(block);
      // V8's own heap bookkeeping (remembered sets, write-barrier slots),
      // allocated by v8::internal code while one of our N-API calls made a
      // V8 object: part of the heap, which V8 does not free at exit. Not an
      // N-API object we own (those are allocated in napi_* frames, kept).
      const v8Heap = /#1 0x[0-9a-f]+ in v8::internal::/.test(block);
      // A Worker terminated while its runs were in flight (C10): its
      // environment can no longer run JS, and N-API then refuses both ways to
      // release a promise's deferred or a callback reference
      // (napi_reject_deferred, napi_delete_reference), so Node's small record
      // of each stays. Only allocations made on a Worker's thread qualify: the
      // same leak on the main thread is still reported.
      const workerTeardown = /#1 0x[0-9a-f]+ in (napi_create_promise|napi_create_reference) \(/.test(block) &&
        /in node::worker::Worker::Run\(\)/.test(block);
      if (ours && !nodeHandle && !v8Heap && !workerTeardown) {
        bad++;
        console.error(`leak from the addon in ${f}:\n${block.slice(0, 4000)}`);
      } else {
        nodeLeaks++;
      }
    }
  }
}
console.log(`asan: ${bad} report(s) against the addon; ${nodeLeaks} Node/V8 lifetime leak ` +
  "report(s) ignored (no frame of ours)");
process.exit(bad > 0 ? 1 : 0);
JS
filter=$?
[ "${KS_ASAN_KEEP_LOGS:-}" = 1 ] || rm -rf "$logs"
[ "$status" -eq 0 ] && [ "$filter" -eq 0 ]
