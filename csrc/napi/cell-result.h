/* The raw outcome of a kernel message (types/binding.d.ts, RawCellResult):
 * one line a field, X(name, value), in the order makeCellResult takes
 * them, as raw-result.h is for a box's run. The value is an expression of
 * env, call (struct ks_napi_call *), res (struct ks_cell_result *), d (its
 * DONE), e (its ENDED) and ended, evaluated in this order; NULL fails the
 * result. The output comes last: once taken, the strings own its memory.
 * cell.c builds the values from this table, the addon exports the names
 * (CELL_RESULT_FIELDS), lib/binding.js makes its object literal from them,
 * and test/16.native-contract.test.js checks the .d.ts against them. */
#ifndef KS_NAPI_CELL_RESULT_H
#define KS_NAPI_CELL_RESULT_H

#define KS_CELL_RESULT_FIELDS(X)                                                                \
  X(how, ks__string(env, ks__how_name(res->how)))                                               \
  X(end, ks_napi_number(env, d->end))                                                           \
  X(value, ks_napi_number(env, d->value))                                                       \
  X(depth, ks_napi_number(env, ended ? e->depth : d->depth))                                    \
  X(waitStatus, ks_napi_number(env, e->wait_status))                                            \
  X(mode, ks_napi_number(env, res->ready.mode))                                                 \
  X(pid, ks_napi_number(env, res->ready.pid))                                                   \
  X(timedOut, ks_napi_bool(env, res->timed_out))                                                \
  X(cancelled, ks_napi_bool(env, res->cancelled))                                               \
  X(why, ks__string(env, res->why))                                                             \
  X(stdoutDiscarded, ks_napi_number(env, (double) res->out[KS_STDOUT].discarded))               \
  X(stderrDiscarded, ks_napi_number(env, (double) res->out[KS_STDERR].discarded))               \
  X(stdoutMissedChunks, ks_napi_number(env, (double) atomic_load(&call->missed_chunks[0])))    \
  X(stderrMissedChunks, ks_napi_number(env, (double) atomic_load(&call->missed_chunks[1])))    \
  X(stdoutMissedBytes, ks_napi_number(env, (double) atomic_load(&call->missed_bytes[0])))      \
  X(stderrMissedBytes, ks_napi_number(env, (double) atomic_load(&call->missed_bytes[1])))      \
  X(results, ks_napi_results_value(env, &res->results))                                         \
  X(resultsDropped, ks_napi_bool(env, res->results.dropped))                                    \
  X(durationMs, ks_napi_number(env, (double) res->duration_ns / 1e6))                           \
  X(userCpuMs, ks_napi_number(env, (double) (ended ? e->utime_us : d->utime_us) / 1e3))         \
  X(systemCpuMs, ks_napi_number(env, (double) (ended ? e->stime_us : d->stime_us) / 1e3))       \
  X(maxRssKb, ks_napi_number(env, (double) (ended ? e->maxrss_kb : d->maxrss_kb)))              \
  X(stdout, ks_napi_take_output(env, &call->output, &res->out[KS_STDOUT], KS_STDOUT))           \
  X(stderr, ks_napi_take_output(env, &call->output, &res->out[KS_STDERR], KS_STDERR))

#endif
