#!/usr/bin/env bash
# Runs the whole mocha suite against the ASan+UBSan build of the addon
# (build/Debug), with the sanitizer runtimes preloaded into Node.
#
# Every sanitizer report goes to a log file per process, and
# scripts/sanitizer-verdict.js judges them: the run fails on any ASan or
# UBSan error report, from any process, and on any leak whose allocation
# stack passes through the addon (our module or our sources).
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
# purpose. exitcode=0: leaks are judged below, per stack. malloc_context_size=64:
# the verdict looks for a Worker's Run() frame under a leak's allocation, and
# a run started from deep in an async chain has it past the default 30 frames.
export ASAN_OPTIONS="detect_leaks=1:exitcode=0:detect_odr_violation=0:log_path=$logs/asan:allocator_may_return_null=1:malloc_context_size=64"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan"
export KERN_SANDBOX_BUILD=Debug

npx mocha "$@"
status=$?
unset LD_PRELOAD

node scripts/sanitizer-verdict.js asan "$logs"
filter=$?
[ "${KS_ASAN_KEEP_LOGS:-}" = 1 ] || rm -rf "$logs"
[ "$status" -eq 0 ] && [ "$filter" -eq 0 ]
