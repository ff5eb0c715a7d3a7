/* The raw result of a box's run (types/binding.d.ts, RawRunResult): one
 * line a field, X(name, value), in the order makeRawResult takes them.
 * The value is an expression of env, run (struct ks_napi_call *), res
 * (struct ks_box_result *) and box, evaluated in this order; NULL fails the
 * result. The output comes last: once taken, the strings own its memory.
 * run.c builds the values from this table, the addon exports the names
 * (RAW_RESULT_FIELDS), lib/binding.js makes its object literal from them,
 * and test/16.native-contract.test.js checks the .d.ts against them: a new
 * field is one line here and one in the .d.ts. */
#ifndef KS_NAPI_RAW_RESULT_H
#define KS_NAPI_RAW_RESULT_H

#define KS_RAW_RESULT_FIELDS(X)                                                                 \
  X(exitCode, ks__exit_code(env, res))                                                          \
  X(signal, ks__term_signal(env, res))                                                          \
  X(statusKnown, ks_napi_bool(env, res->status_known))                                          \
  X(timedOut, ks_napi_bool(env, res->timed_out))                                                \
  X(cancelled, ks_napi_bool(env, res->cancelled))                                               \
  X(startedWord, ks_napi_number(env, (double) ks__started_word(res)))                           \
  X(startedCount, ks_napi_number(env, (double) res->nstarted))                                  \
  X(stdoutDiscarded, ks_napi_number(env, (double) res->out[KS_STDOUT].discarded))               \
  X(stderrDiscarded, ks_napi_number(env, (double) res->out[KS_STDERR].discarded))               \
  X(stdoutMissedChunks, ks_napi_number(env, (double) atomic_load(&run->missed_chunks[0])))     \
  X(stderrMissedChunks, ks_napi_number(env, (double) atomic_load(&run->missed_chunks[1])))     \
  X(stdoutMissedBytes, ks_napi_number(env, (double) atomic_load(&run->missed_bytes[0])))       \
  X(stderrMissedBytes, ks_napi_number(env, (double) atomic_load(&run->missed_bytes[1])))       \
  X(durationMs, ks_napi_number(env, (double) res->duration_ns / 1e6))                           \
  X(userCpuMs, ks_napi_number(env, ks__ms(&res->usage.ru_utime)))                               \
  X(systemCpuMs, ks_napi_number(env, ks__ms(&res->usage.ru_stime)))                             \
  X(maxRssKb, ks_napi_number(env, (double) res->usage.ru_maxrss))                               \
  X(reportEnd, res->reported ? ks_napi_number(env, res->report_end) : ks_napi_null(env))        \
  X(settledEarly, ks_napi_bool(env, res->settled_early))                                        \
  X(prewarmed, ks_napi_bool(env, res->prewarmed))                                               \
  X(claimed, ks_napi_bool(env, res->claimed))                                                   \
  X(taken, ks_napi_bool(env, res->taken))                                                       \
  X(started, ks_napi_bool(env, res->started_ns != 0))                                           \
  X(killedByCaller, ks_napi_bool(env, res->killed_by_caller))                                   \
  X(missed, ks_napi_bool(env, res->missed))                                                     \
  X(results, ks_napi_results_value(env, &res->results))                                         \
  X(resultsDropped, ks_napi_bool(env, res->results.dropped))                                    \
  X(files, ks__files_value(env, box, res))                                                      \
  X(stdout, ks_napi_take_output(env, &run->output, &res->out[KS_STDOUT], KS_STDOUT))                 \
  X(stderr, ks_napi_take_output(env, &run->output, &res->out[KS_STDERR], KS_STDERR))

#endif
