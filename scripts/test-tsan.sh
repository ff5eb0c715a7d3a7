#!/usr/bin/env bash
# Runs the mocha suite (or the files given) against the ThreadSanitizer
# build of the addon (build/Tsan), with the TSan runtime preloaded into Node:
#
#   npm run test:tsan              # the whole suite
#   npm run test:tsan -- --no-config --require test/00.setup.js test/30.run.test.js
#
# Node and V8 are not instrumented, so their own memory accesses (and their
# atomics) are never checked; their locks are seen, since the runtime
# intercepts pthread. Those locks are what order our threads against theirs:
# the supervisor and scan threads, the reaper threads, libuv's workers and the
# JS thread meet only through them (queues, thread-safe functions, uv_work). Every report goes to a log file per process, and
# scripts/sanitizer-verdict.js judges them: the run fails on any report with a
# frame of ours (a data race, a lock-order inversion, a thread leak, a use of
# a destroyed mutex) or on anything else the runtime says that is not a report.
set -uo pipefail
cd "$(dirname "$0")/.."

node scripts/build-addon.js --tsan >/dev/null || exit 1
# The Node children of the run load the Test build (lib/binding.js).
node scripts/build-addon.js --test >/dev/null || exit 1

logs=$(mktemp -d "${TMPDIR:-/tmp}/ks-tsan-XXXXXX")
# Some children run as an unprivileged user (C13) and log here too.
chmod 1777 "$logs"
tsan_rt=$(gcc -print-file-name=libtsan.so)
# ignore_interceptors_accesses=1: memory touched inside intercepted libc calls
# (memcpy, strlen, write's buffer) is not checked. Called from V8 those are
# V8's own accesses, ordered by atomics TSan cannot see, and the false reports
# they give include ones raised inside free(), where this runtime's report
# code crashes (a CHECK on its thread registry). The price: our own calls of
# those functions go unchecked too (gcc does not instrument them as clang
# does); our loads and stores are checked. exitcode=0 and
# halt_on_error=0: reports are judged below, per report. report_signal_unsafe=0:
# Node's signal handlers are not ours.
export TSAN_OPTIONS="log_path=$logs/tsan:exitcode=0:halt_on_error=0:ignore_interceptors_accesses=1:report_signal_unsafe=0:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
export KERN_SANDBOX_BUILD=Tsan

# Positive controls, before the suite: our build is instrumented, and a
# deliberate race in an addon built the same way is reported to the logs
# under these options (test/fixtures/tsan-race.c).
if ! nm -D build/Tsan/kern_sandbox.node | grep ' U __tsan_func_entry' >/dev/null; then
  echo "test-tsan: build/Tsan/kern_sandbox.node is not instrumented" >&2
  exit 1
fi
ctl=$(mktemp -d "${TMPDIR:-/tmp}/ks-tsan-control-XXXXXX")
nodeinc=$(node -p 'require("path").resolve(process.execPath, "../../include/node")')
if ! gcc -std=gnu11 -fsanitize=thread -O1 -g -fPIC -shared -I"$nodeinc" \
    -o "$ctl/race.node" test/fixtures/tsan-race.c ||
  ! LD_PRELOAD=$tsan_rt TSAN_OPTIONS="$TSAN_OPTIONS:log_path=$ctl/tsan" node -e "require('$ctl/race.node').race()" ||
  ! grep -qs 'WARNING: ThreadSanitizer: data race' "$ctl"/tsan.*; then
  control=failed
else
  # The verdict must hold that report against the fixture (exit 1).
  node scripts/sanitizer-verdict.js tsan "$ctl" 'tsan-race\.c' >/dev/null 2>&1
  [ $? -eq 1 ] && control=reported || control=failed
fi
if [ "$control" != reported ]; then
  echo "test-tsan: positive control failed: no race report for test/fixtures/tsan-race.c" >&2
  cat "$ctl"/tsan.* >&2 2>/dev/null
  rm -rf "$ctl"
  exit 1
fi
rm -rf "$ctl"
echo "test-tsan: positive control reported (a planted race in test/fixtures/tsan-race.c)"

export LD_PRELOAD=$tsan_rt
# test/00.setup.js checks that this run did load the Tsan build.
export KS_TSAN_RUN=1

# npm's own code (npx) crashes under the TSan runtime; mocha does not.
node node_modules/mocha/bin/mocha.js "$@"
status=$?
unset LD_PRELOAD

node scripts/sanitizer-verdict.js tsan "$logs"
filter=$?
[ "${KS_TSAN_KEEP_LOGS:-}" = 1 ] || rm -rf "$logs"
[ "$status" -eq 0 ] && [ "$filter" -eq 0 ]
