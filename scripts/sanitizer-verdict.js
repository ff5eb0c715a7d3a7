#!/usr/bin/env node
// Judges the sanitizer logs of a suite run (scripts/test-asan.sh,
// scripts/test-tsan.sh): `node scripts/sanitizer-verdict.js asan|tsan DIR
// [PATTERN]`, where PATTERN (a regular expression) names one more module as
// ours: the positive control's fixture.
// Prints one line of counts and every report it holds against the addon;
// exits 1 if there is one. A report is ours when a frame is in our module or
// our sources; Node and V8 are not built with the sanitizers, and what they
// report of themselves is counted, not judged.
"use strict";

const fs = require("fs");
const path = require("path");

const extra = process.argv[4] ? new RegExp(process.argv[4]) : null;
const ours = (block) => /kern_sandbox\.node|\/csrc\//.test(block) || (extra !== null && extra.test(block));

// ASan + UBSan: any error report, from any process, fails the run; a leak
// fails it when its allocation stack passes through the addon. Leaks with no
// frame of ours are Node's and V8's process-lifetime allocations, which they
// do not free at exit. LeakSanitizer's suppression files match any frame of
// a stack (and every stack of ours also has node:: frames), so they cannot
// make that distinction; this does.
function judgeAsan(text, bad, ignored) {
  // Reports are separated by blank lines; leak reports start "Direct leak" /
  // "Indirect leak", errors start with "ERROR:" or "runtime error:".
  for (const block of text.split(/\n(?=(?:Direct|Indirect) leak|=+\n==\d+==ERROR)/)) {
    if (/ERROR: AddressSanitizer|runtime error:/.test(block) && !/detected memory leaks/.test(block)) {
      bad("sanitizer error", block);
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
      if (ours(block) && !nodeHandle && !v8Heap && !workerTeardown) bad("leak from the addon", block);
      else ignored();
    }
  }
}

// ThreadSanitizer: any report with a frame of ours fails the run, and so
// does anything the runtime says that is not a report (a CHECK failure,
// "Dying", a thread that ended with ignores left on), since the run's
// verdict cannot be trusted then. Reports with no frame of ours are Node's
// or V8's (a race inferred between V8's platform threads, whose atomics the
// runtime cannot see).
function judgeTsan(text, bad, ignored) {
  // Its closing count ("ThreadSanitizer: reported N warnings") is not a report.
  const reports = text.replace(/^ThreadSanitizer: reported \d+ warnings\n?/gm, "");
  for (const block of reports.split(/^==================$/m)) {
    if (!/ThreadSanitizer/.test(block)) continue;
    if (ours(block) || !/WARNING: ThreadSanitizer/.test(block)) bad("tsan report", block);
    else ignored();
  }
}

const judges = {
  asan: [judgeAsan, "Node/V8 lifetime leak report(s) ignored (no frame of ours)"],
  tsan: [judgeTsan, "report(s) with no frame of ours ignored"],
};

const [kind, dir] = process.argv.slice(2);
if (!judges[kind] || !dir) {
  console.error("usage: node scripts/sanitizer-verdict.js asan|tsan DIR [PATTERN]");
  process.exit(2);
}
const [judge, ignoredWhat] = judges[kind];
let nbad = 0;
let nignored = 0;
for (const f of fs.readdirSync(dir)) {
  const text = fs.readFileSync(path.join(dir, f), "utf8");
  judge(text, (what, block) => {
    nbad++;
    console.error(`${what} in ${f}:\n${block.slice(0, 6000)}`);
  }, () => nignored++);
}
console.log(`${kind}: ${nbad} report(s) against the addon; ${nignored} ${ignoredWhat}`);
process.exit(nbad > 0 ? 1 : 0);
