"use strict";

// What an event-loop delay was made of, for bench/run.js's KS_BENCH_TRACE:
// between two ticks of its 1 ms timer, how long the JS thread ran, how long
// it waited runnable for a CPU (/proc/self/task/PID/schedstat: the rest of
// the delay is time the thread slept or the VM took), and how long V8's
// garbage collector paused it (perf_hooks' gc entries). A delay that is
// mostly waiting for a CPU was the host's other processes on its cores (the
// boxes, kern, a worker, Redis); one that is mostly running was JS on this
// thread, a GC pause or not. (A GC pause is wall time: it may include a wait
// for a CPU, and V8 runs part of it on threads of its own.) Tracing reads
// /proc at every tick, on the JS thread: a traced run's figures are not an
// untraced run's.
const fs = require("fs");
const { PerformanceObserver, performance } = require("perf_hooks");

let schedstat; // the JS thread's schedstat, opened once; null where there is none
const buf = Buffer.alloc(128);

/** [ms on a CPU, ms runnable and waiting for one] of the JS thread so far
 * (/proc/self/task/PID/schedstat), or null where there is no schedstat. */
function jsThreadTimes() {
  if (schedstat === undefined) {
    try {
      schedstat = fs.openSync(`/proc/self/task/${process.pid}/schedstat`, "r");
    } catch {
      schedstat = null;
    }
  }
  if (schedstat === null) return null;
  const n = fs.readSync(schedstat, buf, 0, buf.length, 0);
  const [run, wait] = buf.toString("latin1", 0, n).split(" ").map(Number);
  return [run / 1e6, wait / 1e6];
}

function delayTracer() {
  // Without schedstat the delays are traced without run and wait (NaN).
  const clock = () => jsThreadTimes() ?? [NaN, NaN];
  const gcs = []; // [start, end] in performance.now() ms, the last few
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push([e.startTime, e.startTime + e.duration]);
    if (gcs.length > 64) gcs.splice(0, gcs.length - 64);
  });
  observer.observe({ entryTypes: ["gc"] });
  let at = clock();
  let perfAt = performance.now();
  const pending = []; // delays whose GC entries may not have arrived yet
  const print = (d) => {
    let gc = 0;
    for (const [s, e] of gcs) gc += Math.max(0, Math.min(e, d.to) - Math.max(s, d.from));
    console.error(`    event loop ${d.late.toFixed(1)} ms late during ${d.phase}: ran ${d.run.toFixed(1)} ms, ` +
      `waited ${d.wait.toFixed(1)} ms for a CPU; GC pauses in it ${gc.toFixed(1)} ms`);
  };
  return {
    /** Records a delay of lateMs that ended now, since the last tick. */
    delay(lateMs, phase) {
      const [run, wait] = clock();
      pending.push({ late: lateMs, phase, run: run - at[0], wait: wait - at[1], from: perfAt, to: performance.now() });
    },
    /** Marks a tick: the next delay() covers what comes after it. Prints
     * the delays recorded 50 ms ago or more (V8 reports a GC a turn late). */
    tick() {
      at = clock();
      perfAt = performance.now();
      while (pending.length > 0 && perfAt - pending[0].to >= 50) print(pending.shift());
    },
    /** Prints every delay recorded (the monitor is being disabled). */
    flush() {
      for (const d of pending.splice(0)) print(d);
    },
  };
}

module.exports = { delayTracer, jsThreadTimes };
