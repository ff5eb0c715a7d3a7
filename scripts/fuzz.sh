#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) and runs each for SECONDS, one at a
# time, under `nice -n 10`:
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      # default 60 s, all targets
#   npm run fuzz -- 600
#
# Each target starts from build/fuzz/corpus-work/<target>: the committed
# seeds (fuzz/corpus/<target>) copied in, plus whatever earlier runs added
# there. The committed corpus is never written. KS_FUZZ_FRESH=1 empties the
# working corpus first, so a run starts from the seeds alone.
#
# Logs go to build/fuzz/logs/<target>.log, crash inputs to
# build/fuzz/artifacts/<target>/; KS_FUZZ_OUT=/abs/dir moves all of
# build/fuzz elsewhere. Before fuzzing, each target replays the reproducers
# of past findings that fit it (fuzz/crashes/, see fuzz/README.md). Exits 1
# if any target crashed, leaked, timed out, ran out of memory, printed a
# sanitizer report or violated a property (replays included); 2 if the
# targets cannot be built or a name is unknown.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

seconds=${1:-60}
shift || true
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2
  exit 2
fi
all_targets=(fuzz_tar_header fuzz_vet_path fuzz_restore fuzz_open_beneath fuzz_text fuzz_chan_report
  fuzz_init_spec fuzz_interp_reader fuzz_init_frame)
if [ $# -gt 0 ]; then targets=("$@"); else targets=("${all_targets[@]}"); fi
for t in "${targets[@]}"; do
  case " ${all_targets[*]} " in
    *" $t "*) ;;
    *) echo "fuzz.sh: unknown target $t (one of: ${all_targets[*]})" >&2; exit 2 ;;
  esac
done

# `npm run build` (node-gyp rebuild) deletes all of build/, binaries and logs
# of a running fuzz job included: for long runs while others build, point
# KS_FUZZ_OUT somewhere else (an absolute path).
out=${KS_FUZZ_OUT:-$top/build/fuzz}

# libFuzzer needs clang's runtime (Debian: libclang-rt-14-dev).
probe=$(mktemp -d "${TMPDIR:-/tmp}/ks-fuzz-probe-XXXXXX")
printf 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void) d; (void) n; return 0; }\n' \
  > "$probe/p.c"
if ! clang -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" >"$probe/log" 2>&1; then
  echo "fuzz.sh: clang -fsanitize=fuzzer does not link:" >&2
  cat "$probe/log" >&2
  echo "fuzz.sh: install clang and its libFuzzer runtime (Debian: libclang-rt-14-dev)" >&2
  rm -rf "$probe"
  exit 2
fi
rm -rf "$probe"

if ! make -s -C fuzz OUT="$out" "${targets[@]}"; then
  echo "fuzz.sh: build failed" >&2
  exit 2
fi

# The targets' temp trees live here, so a crashed run leaves nothing behind.
tmp_base=/dev/shm
[ -d /dev/shm ] && [ -w /dev/shm ] || tmp_base=${TMPDIR:-/tmp}
run_tmp=$(mktemp -d "$tmp_base/ks-fuzz-run-XXXXXX")
trap 'rm -rf "$run_tmp"' EXIT

# ASan keeps freed blocks in a quarantine (256 MiB by default) to catch
# use-after-free; that quarantine, not the parsers, was ~85% of each
# target's peak RSS (fuzz/README.md). 16 MiB still holds thousands of the
# parsers' blocks, and keeps a target inside D3's 256 MiB, which
# -rss_limit_mb below enforces (KS_FUZZ_RSS_MB overrides it).
rss_mb=${KS_FUZZ_RSS_MB:-256}
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:quarantine_size_mb=16${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export KS_FUZZ_TMPDIR=$run_tmp

# Reproducers of past findings, per target (fuzz/crashes/).
replays_for() {
  case $1 in
    fuzz_vet_path) ls "$top"/fuzz/crashes/*.path 2>/dev/null ;;
    fuzz_restore) ls "$top"/fuzz/crashes/*.tar "$top"/fuzz/crashes/*.tar.gz 2>/dev/null ;;
  esac
}

max_len_for() {
  case $1 in
    fuzz_restore) echo 1048576 ;;   # a 1 MiB gzip input can reach the 1 GiB cap
    fuzz_tar_header) echo 8192 ;;   # 16 header blocks
    fuzz_text) echo 65536 ;;        # several of the drain's reads' worth of output
    *) echo 4200 ;;                 # paths: past PATH_MAX (4095)
  esac
}

# Any of these in a log fails the target, whatever the exit status said.
bad_re='ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|PROPERTY VIOLATION'
bad_re+='|SUMMARY: (Address|Leak|UndefinedBehavior)Sanitizer'
why_re='ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer): [^ ]+( [^ ]+)?'
why_re+='|runtime error: .{0,60}|PROPERTY VIOLATION.{0,100}'

mkdir -p "$out/logs" "$out/corpus-work" "$out/artifacts"
status=0
summary=()
for t in "${targets[@]}"; do
  work=$out/corpus-work/$t
  arts=$out/artifacts/$t
  log=$out/logs/$t.log
  [ "${KS_FUZZ_FRESH:-0}" = 1 ] && rm -rf "$work"
  mkdir -p "$work" "$arts"
  cp -n "fuzz/corpus/$t"/* "$work"/ 2>/dev/null || true
  dict=()
  [ -f "fuzz/dict/$t.dict" ] && dict=(-dict="$top/fuzz/dict/$t.dict")

  mapfile -t replays < <(replays_for "$t")
  if [ ${#replays[@]} -gt 0 ]; then
    if ! "$out/$t" -rss_limit_mb=2048 -timeout=10 "${replays[@]}" >"$out/logs/$t.replay.log" 2>&1 ||
      grep -aqE "$bad_re" "$out/logs/$t.replay.log"; then
      line=$(printf '%-18s replay of fuzz/crashes/ FAILED (log: %s)' "$t" "$out/logs/$t.replay.log")
      echo "$line"
      summary+=("$line")
      status=1
      continue
    fi
  fi

  echo "== $t: ${seconds}s (log: ${log#"$top"/})"
  # Only what this run writes into $arts is its verdict: an input left by an
  # earlier run (already judged then) must not fail this one.
  stamp=$out/logs/$t.started
  : >"$stamp"
  start=$(date +%s)
  nice -n 10 "$out/$t" \
    -max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout=10 \
    -max_len="$(max_len_for "$t")" -print_final_stats=1 \
    -artifact_prefix="$arts/" "${dict[@]}" "$work" >"$log" 2>&1
  rc=$?
  end=$(date +%s)

  execs=$(grep -a '^stat::number_of_executed_units:' "$log" | tail -1 | awk '{print $2}')
  last=$(grep -aE '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1)
  cov=$(sed -nE 's/.* cov: ([0-9]+) .*/\1/p' <<<"$last")
  ft=$(sed -nE 's/.* ft: ([0-9]+) .*/\1/p' <<<"$last")
  corp=$(sed -nE 's/.* corp: ([0-9]+\/[0-9a-zA-Z]+) .*/\1/p' <<<"$last")
  rss=$(grep -a '^stat::peak_rss_mb:' "$log" | tail -1 | awk '{print $2}')

  result=ok
  if grep -aqE "$bad_re" "$log"; then
    result="FAIL: $(grep -aoE "$why_re" "$log" | head -1)"
  elif [ $rc -ne 0 ]; then
    result="FAIL: exit status $rc"
  elif [ -z "$execs" ]; then
    result="FAIL: no final stats (did it run?)"
  fi
  if [ -n "$(find "$arts" -type f -newer "$stamp" -print -quit)" ]; then
    [ "$result" = ok ] && result="FAIL: new artifacts in ${arts#"$top"/}"
  fi
  [ "$result" = ok ] || status=1
  older=$(find "$arts" -type f ! -newer "$stamp" | wc -l)
  [ "$older" -gt 0 ] && result+=" ($older older artifacts in ${arts#"$top"/}, not from this run)"

  line=$(printf '%-18s %5ss %11s execs  cov %-5s ft %-6s corpus %-12s rss %4sMB  %s' \
    "$t" "$((end - start))" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "${rss:-?}" "$result")
  echo "$line"
  summary+=("$line")
done

echo
echo "== summary ($(date -u +%Y-%m-%dT%H:%MZ), ${seconds}s per target)"
printf '%s\n' "${summary[@]}"
exit $status
