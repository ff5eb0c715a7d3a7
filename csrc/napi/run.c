/* run(): hands a box to the supervisor and settles its promise with the raw
 * result (raw-result.h) when it ends; and the group natives (cancelGroup,
 * forgetGroup, dropParked), the claim's SPEC from this thread (claimSend),
 * and the loop hold (holdLoop/releaseLoop). The engine's counts, for the
 * tests only, are testing.c's. The call object and the TSFN that carries its end are call.c's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/box/supervisor.h"
#include "../core/box/text.h"
#include "addon.h"
#include "call.h"
#include "raw-result.h"

/* The values of the raw result's fields (raw-result.h). */
static napi_value ks__exit_code(napi_env env, const struct ks_box_result *res) {
  return res->status_known && WIFEXITED(res->wait_status)
             ? ks_napi_number(env, WEXITSTATUS(res->wait_status))
             : ks_napi_null(env);
}

static napi_value ks__term_signal(napi_env env, const struct ks_box_result *res) {
  return res->status_known && WIFSIGNALED(res->wait_status)
             ? ks_napi_number(env, WTERMSIG(res->wait_status))
             : ks_napi_null(env);
}

/* The first (at most 4) bytes kern wrote on KERN_STARTED_FD, the first in
 * the low byte (lib/faults.js, startedByte). */
static uint32_t ks__started_word(const struct ks_box_result *res) {
  size_t nkeep = res->nstarted < sizeof res->started ? res->nstarted : sizeof res->started;
  uint32_t word = 0;
  for (size_t i = 0; i < nkeep && i < 4; i++)
    word |= (uint32_t) res->started[i] << (8 * i);
  return word;
}

static double ks__ms(const struct timeval *tv) {
  return tv->tv_sec * 1e3 + tv->tv_usec / 1e3;
}

/* Nothing changed, the common case: 0, not an empty packed list (its two
 * typed arrays and four named properties would cost a call's path). null:
 * no scan, or it failed. */
static napi_value ks__files_value(napi_env env, struct ks_box *box, const struct ks_box_result *res) {
  if (!ks_box_request_scans(box) || res->scan_errnum != 0)
    return ks_napi_null(env);
  if (res->nchanges == 0)
    return ks_napi_number(env, 0);
  return ks_napi_changes_value(env, res->changes, res->nchanges);
}

/* The raw outcome, made by the JS function lib/binding.js gave configure()
 * (makeRawResult) from the fields of raw-result.h in its order: one call
 * into JS and an object literal of a fixed shape, far cheaper on a call's
 * path than named properties set from here. */
#define KS__RAW_INDEX(name, value) KS__RAW_##name,
enum { KS_RAW_RESULT_FIELDS(KS__RAW_INDEX) KS__RAW_FIELDS };
#undef KS__RAW_INDEX

static napi_value ks__result_object(napi_env env, struct ks_napi_call *run, struct ks_box *box) {
  struct ks_box_result *res = ks_box_result(box);
  napi_value v[KS__RAW_FIELDS];
  napi_value maker;
  napi_value undefined;
  napi_value obj;

  if (run->addon->make_raw == NULL ||
      napi_get_reference_value(env, run->addon->make_raw, &maker) != napi_ok || maker == NULL ||
      napi_get_undefined(env, &undefined) != napi_ok)
    return NULL;
#define KS__RAW_VALUE(name, value)                                                               \
  if ((v[KS__RAW_##name] = (value)) == NULL)                                                      \
    return NULL;
  KS_RAW_RESULT_FIELDS(KS__RAW_VALUE)
#undef KS__RAW_VALUE
  if (napi_call_function(env, undefined, maker, KS__RAW_FIELDS, v, &obj) != napi_ok)
    return NULL;
  return obj;
}

/* RAW_RESULT_FIELDS: the names makeRawResult takes, in order. */
static bool ks__export_raw_fields(napi_env env, napi_value exports) {
  static const char *const names[] = {
#define KS__RAW_NAME(name, value) #name,
      KS_RAW_RESULT_FIELDS(KS__RAW_NAME)
#undef KS__RAW_NAME
  };
  napi_value arr;
  napi_value s;
  if (napi_create_array_with_length(env, KS__RAW_FIELDS, &arr) != napi_ok)
    return false;
  for (uint32_t i = 0; i < KS__RAW_FIELDS; i++) {
    if (napi_create_string_utf8(env, names[i], NAPI_AUTO_LENGTH, &s) != napi_ok ||
        napi_set_element(env, arr, i, s) != napi_ok)
      return false;
  }
  return ks_napi_set(env, exports, "RAW_RESULT_FIELDS", arr);
}

/* The call's settle hook (call.h): the run's promise from its box. */
static void ks__settle(napi_env env, struct ks_napi_call *run, struct ks_box *box,
                       struct ks_cell *cell) {
  (void) cell;
  struct ks_box_result *res = ks_box_result(box);
  napi_value value;

  if (res->spawn_errnum != 0) {
    struct ks_err err = {
        .errnum = res->spawn_errnum, .syscall = res->spawn_syscall, .path = NULL};
    /* Only execve failures are about kern's path; the rest are resources. */
    if (res->spawn_syscall != NULL && strcmp(res->spawn_syscall, "execve") == 0)
      err.path = ks_box_request_path(box);
    ks_napi_reject_system(env, run->deferred, &err);
    return;
  }
  value = ks__result_object(env, run, box);
  if (value != NULL)
    (void) napi_resolve_deferred(env, run->deferred, value);
  else
    ks_napi_reject_pending(env, run->deferred, "kern-sandbox: could not build the run result");
}

/* ---- run(path, argv, envp, envData, tmpdir, stopArgv, timeoutMs, cap,
 *          onStdout, onStderr, watch, group, kernFd, cancelKey, init)
 *      -> Promise<RawRunResult>, or undefined for a prewarm box
 * kernFd: the session's kern, held open (kernOpen); null execs path.
 * cancelKey: cancelGroup(cancelKey) kills this box alone (an AbortSignal);
 * 0 for none.
 * init: null (argv runs the workload itself, as 0.1.1), or the in-box init's
 * terms: { earlyCap: -1..255, spec: Buffer | null, parkKey, claimKey,
 * run: null | { code: Buffer, resultMax, results: bool } (the RUN of an
 * --interp box), resultMax, kernelKey } (ks_box_request). With parkKey the box is started and parked; its promise
 * settles when it ends ({ claimed: true } once a call took it over), and
 * holds no reference on the loop; dropParked(parkKey) recycles it. -------- */

static bool ks__get_named_double(napi_env env, napi_value obj, const char *name, double *out) {
  napi_value v;
  if (napi_get_named_property(env, obj, name, &v) != napi_ok ||
      napi_get_value_double(env, v, out) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "kern-sandbox: run(): bad init terms");
    return false;
  }
  return true;
}

/* The interpreter terms of an --interp box: its RUN, and its kernel key. */
static bool ks__get_interp_terms(napi_env env, napi_value terms, struct ks_box_request *req) {
  napi_value run = ks_napi_prop(env, terms, "run");
  napi_valuetype t;
  double result_max;

  if (!ks_napi_get_key(env, ks_napi_prop(env, terms, "kernelKey"), "kernelKey", &req->kernel_key) ||
      !ks_napi_get_count(env, ks_napi_prop(env, terms, "resultMax"), "resultMax", 4294967295.0,
                     &result_max))
    return false;
  req->result_max = (size_t) result_max;
  if (napi_typeof(env, run, &t) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (t == napi_object) {
    void *code;
    size_t len;
    bool results = false;
    struct ks_ip_run head;
    if (!ks_napi_get_buffer(env, ks_napi_prop(env, run, "code"), &code, &len))
      return false;
    if (napi_get_value_bool(env, ks_napi_prop(env, run, "results"), &results) != napi_ok) {
      napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "kern-sandbox: run(): bad RUN terms");
      return false;
    }
    head.result_max = (uint32_t) req->result_max;
    head.flags = results ? KS_IP_RESULTS : 0;
    req->ip_msg = ks_ip_frame(KS_IP_RUN, 0, &head, sizeof head, code, len, &req->ip_msg_len);
    if (req->ip_msg == NULL) {
      napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
      return false;
    }
  }
  return true;
}

/* terms[name]: a boolean, false if absent. */
static bool ks__get_flag(napi_env env, napi_value terms, const char *name, bool *out) {
  napi_value v = ks_napi_prop(env, terms, name);
  napi_valuetype t = napi_undefined;
  *out = false;
  if (v != NULL && napi_typeof(env, v, &t) == napi_ok && t == napi_undefined)
    return true;
  if (v == NULL || napi_get_value_bool(env, v, out) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "kern-sandbox: run(): bad init terms");
    return false;
  }
  return true;
}

/* terms.shareChannel: the caller sends a claim's spec itself (claimSend):
 * the channel is made here, and a copy of the host's end is the caller's
 * (*shared). terms.claimOnly: this claim brings no box of its own (its spec
 * went that way already, or it is a Python claim that retries cold). */
static bool ks__get_channel_terms(napi_env env, napi_value terms, struct ks_box_request *req,
                                  int *shared) {
  bool share = false;
  int sp[2];

  if (!ks__get_flag(env, terms, "shareChannel", &share) ||
      !ks__get_flag(env, terms, "claimOnly", &req->claim_only))
    return false;
  if (!share)
    return true;
  /* Without one (no descriptors left), the engine makes its own channel and
   * the claim's spec goes through the engine, as for any box. */
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
    return true;
  *shared = fcntl(sp[0], F_SETFL, O_NONBLOCK) == 0 ? fcntl(sp[0], F_DUPFD_CLOEXEC, 3) : -1;
  if (*shared < 0) {
    close(sp[0]);
    close(sp[1]);
    return true;
  }
  req->chan_given = true;
  req->chan[0] = sp[0];
  req->chan[1] = sp[1];
  return true;
}

static bool ks__get_init_terms(napi_env env, napi_value terms, struct ks_box_request *req,
                               int *shared) {
  napi_valuetype t;
  double early;
  napi_value spec;
  bool is_buffer = false;

  if (napi_typeof(env, terms, &t) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (t == napi_null || t == napi_undefined)
    return true;
  if (!ks__get_named_double(env, terms, "earlyCap", &early) ||
      !ks_napi_get_key(env, ks_napi_prop(env, terms, "parkKey"), "parkKey", &req->park_key) ||
      !ks_napi_get_key(env, ks_napi_prop(env, terms, "claimKey"), "claimKey", &req->claim_key))
    return false;
  if (!(early >= -1 && early <= 255) || early != (double) (int) early) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "kern-sandbox: earlyCap out of range");
    return false;
  }
  req->channel = true;
  req->early_cap = (int) early;
  if (!ks__get_interp_terms(env, terms, req) || !ks__get_channel_terms(env, terms, req, shared))
    return false;
  if (napi_get_named_property(env, terms, "spec", &spec) != napi_ok ||
      napi_is_buffer(env, spec, &is_buffer) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (is_buffer) {
    void *data;
    size_t len;
    if (napi_get_buffer_info(env, spec, &data, &len) != napi_ok) {
      ks_napi_throw_last(env);
      return false;
    }
    req->spec = malloc(len ? len : 1);
    if (req->spec == NULL) {
      napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
      return false;
    }
    memcpy(req->spec, data, len);
    req->spec_len = len;
  }
  return true;
}

/* terms.begun: the watch call the caller began (watchBegin) before it sent
 * a claim's argv itself; it must be of this run's watch. */
static bool ks__take_begun(napi_env env, napi_value terms, struct ks_box_request *req) {
  napi_valuetype t;
  napi_value begun;

  if (napi_typeof(env, terms, &t) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (t != napi_object)
    return true;
  if (napi_get_named_property(env, terms, "begun", &begun) != napi_ok ||
      napi_typeof(env, begun, &t) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (t == napi_undefined || t == napi_null)
    return true;
  if (req->watch == NULL || !ks_napi_take_begun(env, begun, req->watch, &req->begun)) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          "kern-sandbox: run(): terms.begun is no open call of this run's watch");
    return false;
  }
  req->has_begun = true;
  return true;
}

static bool ks__get_request(napi_env env, napi_value *argv, struct ks_box_request *req,
                            int *shared) {
  napi_valuetype t;
  double timeout_ms;
  double cap;
  bool is_buffer = false;

  memset(req, 0, sizeof *req);
  req->path = ks_napi_get_string(env, argv[0], NULL);
  if (req->path == NULL)
    return false;
  req->argv = ks_napi_get_strv(env, argv[1]);
  if (req->argv == NULL)
    return false;
  req->envp = ks_napi_get_strv(env, argv[2]);
  if (req->envp == NULL)
    return false;

  if (napi_is_buffer(env, argv[3], &is_buffer) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (is_buffer) {
    void *data;
    size_t len;
    if (napi_get_buffer_info(env, argv[3], &data, &len) != napi_ok) {
      ks_napi_throw_last(env);
      return false;
    }
    req->env_data = malloc(len ? len : 1);
    if (req->env_data == NULL) {
      napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
      return false;
    }
    memcpy(req->env_data, data, len);
    req->env_len = len;
  }
  req->tmpdir = ks_napi_get_string(env, argv[4], NULL);
  if (req->tmpdir == NULL)
    return false;
  if (napi_typeof(env, argv[5], &t) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (t == napi_object) {
    req->stop_argv = ks_napi_get_strv(env, argv[5]);
    if (req->stop_argv == NULL)
      return false;
  }
  if (napi_get_value_double(env, argv[6], &timeout_ms) != napi_ok ||
      napi_get_value_double(env, argv[7], &cap) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  /* The facade validated these; re-check only what protects the casts:
   * 1e13 ms is 1e19 ns, within uint64_t with room for the deadline's sum
   * (the facade allows 2^31 - 1 s, about 2.1e12 ms). */
  if (!(timeout_ms > 0 && timeout_ms <= 1e13) || !(cap >= 0 && cap <= 9007199254740991.0)) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "kern-sandbox: timeout or cap out of range");
    return false;
  }
  req->timeout_ns = (uint64_t) (timeout_ms * 1e6);
  req->cap = (size_t) cap;
  req->stream[KS_STDOUT] = ks_napi_is_function(env, argv[8]);
  req->stream[KS_STDERR] = ks_napi_is_function(env, argv[9]);
  {
    napi_valuetype t;
    if (napi_typeof(env, argv[10], &t) != napi_ok) {
      ks_napi_throw_last(env);
      return false;
    }
    if (t != napi_null && t != napi_undefined) {
      req->watch = ks_napi_get_watch(env, argv[10]);
      if (req->watch == NULL) {
        napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                              "kern-sandbox: run() needs an open wsWatch handle or null");
        return false;
      }
      ks_ws_watch_ref(req->watch);
    }
  }
  if (!ks_napi_get_key(env, argv[11], "group", &req->group) ||
      !ks_napi_get_key(env, argv[13], "cancelKey", &req->call))
    return false;
  req->early_cap = -1;
  if (!ks__get_init_terms(env, argv[14], req, shared))
    return false;
  {
    napi_valuetype t;
    int32_t fd;
    if (napi_typeof(env, argv[12], &t) != napi_ok) {
      ks_napi_throw_last(env);
      return false;
    }
    if (t != napi_null && t != napi_undefined) {
      if (napi_get_value_int32(env, argv[12], &fd) != napi_ok || fd < 0) {
        napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                              "kern-sandbox: run() needs a descriptor or null for kern");
        return false;
      }
      /* The box's own copy (>= 3): the session may close its descriptor
       * while a `kern stop` of this box is still to come. */
      req->exec_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
      if (req->exec_fd < 0) {
        struct ks_err err;
        req->exec_fd = 0;
        ks_err_set(&err, errno, "fcntl", req->path);
        ks_napi_throw_system(env, &err);
        return false;
      }
    }
  }
  return true;
}

static napi_value ks__run(napi_env env, napi_callback_info info) {
  size_t argc = 15;
  napi_value argv[15];
  struct ks_addon *addon;
  struct ks_box_request req;
  struct ks_napi_call *run = NULL;
  struct ks_box *box = NULL;
  struct ks_err err;
  napi_value promise = NULL;
  int shared = -1;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  if (argc != 15) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "run() takes 15 arguments");
    return NULL;
  }
  if (!ks__get_request(env, argv, &req, &shared) || !ks__take_begun(env, argv[14], &req))
    goto fail;
  run = ks_napi_call_new(env, addon, argv + 8, req.stream, ks__settle);
  if (run == NULL)
    goto fail;
  /* Neither an idle prewarmed box nor an idle kernel keeps the process
   * alive: a kernel's cells do, while they run. */
  run->parked = req.park_key != 0 || req.kernel_key != 0;

  ks_err_clear(&err);
  if (ks_napi_ensure_supervisor(env, addon, &err) < 0) {
    ks_napi_throw_system(env, &err);
    goto fail;
  }
  box = ks_box_new(&req, run);
  if (box == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    goto fail;
  }
  KS_NAPI_CALL_GOTO(env, napi_create_promise(env, &run->deferred, &promise), fail);
  if (shared >= 0) {
    /* The caller's copy of the channel: held like a session's descriptors
     * (closed at a Worker's teardown if JS never does), on terms. */
    napi_value v;
    if (!ks_addon_hold(env, addon, shared, NULL))
      goto fail;
    if (napi_create_int32(env, shared, &v) != napi_ok ||
        !ks_napi_set(env, argv[14], "channelFd", v)) {
      (void) ks_addon_release(addon, shared);
      goto fail;
    }
    shared = -1;
  }
  if (ks_sup_submit(addon->sup, box) < 0) {
    ks_err_set(&err, ECANCELED, "spawn", NULL);
    ks_napi_reject_system(env, run->deferred, &err);
    ks_box_free(box);
    ks_napi_call_free(env, run);
    return promise;
  }
  ks_napi_call_begun(env, run);
  return promise;

fail:
  if (shared >= 0)
    close(shared);
  if (box != NULL)
    ks_box_free(box);
  else
    ks_box_request_free(&req);
  if (run != NULL)
    ks_napi_call_free(env, run);
  return NULL;
}

/* holdLoop() / releaseLoop(): JS is about to wait / has waited for a box
 * whose run holds nothing (a parked or kernel box it has killed), so the
 * loop is held meanwhile (lib/hold.js pairs them). */
static napi_value ks__hold_loop(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  (void) info;
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  ks_napi_loop_hold(env, addon);
  return NULL;
}

static napi_value ks__release_loop(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  (void) info;
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  ks_napi_loop_release(env, addon);
  return NULL;
}

/* shutdown(): what the environment's teardown does, now: kills and reaps
 * every box, removes the workspaces sessions created and closes their
 * descriptors. For process.exit() and an uncaught exception, after which
 * Node runs no cleanup hook of the main environment. No run starts after. */
static napi_value ks__shutdown(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  (void) info;
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  ks_addon_shutdown(addon);
  ks_addon_drop_held(addon);
  return NULL;
}

/* The group argument of cancelGroup and forgetGroup. */
static bool ks__group_arg(napi_env env, napi_callback_info info, struct ks_addon **addon,
                          uint64_t *group) {
  size_t argc = 1;
  napi_value argv[1];
  double g;

  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok ||
      napi_get_instance_data(env, (void **) addon) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (argc != 1 || napi_get_value_double(env, argv[0], &g) != napi_ok || !(g > 0) ||
      !(g <= 9007199254740991.0)) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "kern-sandbox: a group is a number > 0");
    return false;
  }
  *group = (uint64_t) g;
  return true;
}

/* cancelGroup(group): kills every box of a closing session. */
static napi_value ks__cancel_group(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  uint64_t group;

  if (!ks__group_arg(env, info, &addon, &group))
    return NULL;
  if (addon->sup != NULL && ks_sup_cancel_group(addon->sup, group) < 0)
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
  return NULL;
}

/* forgetGroup(group): the closed session's calls have all settled. */
static napi_value ks__forget_group(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  uint64_t group;

  if (!ks__group_arg(env, info, &addon, &group))
    return NULL;
  if (addon->sup != NULL)
    ks_sup_forget_group(addon->sup, group);
  return NULL;
}

/* dropParked(parkKey): recycles a prewarm box if it is still parked. */
static napi_value ks__drop_parked(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  uint64_t key;

  if (!ks__group_arg(env, info, &addon, &key))
    return NULL;
  if (addon->sup != NULL && ks_sup_drop_parked(addon->sup, key) < 0)
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
  return NULL;
}

/* A claim's frame up to this size is written to the parked box's channel
 * by the calling thread (a fresh socket's buffer takes ~200 KiB). */
#define KS__CLAIM_SEND_MAX (64u << 10)

/* The SPEC frame of argv (an array of strings, JS-checked for NUL bytes):
 * malloc'd, its length in *len; NULL with an exception pending. The one
 * check of argv: anything but a non-empty array of strings throws. */
static char *ks__spec_frame(napi_env env, napi_value argv, size_t *len) {
  struct ks_init_frame_header h = {.magic = KS_INIT_FRAME_MAGIC, .type = KS_INIT_SPEC};
  uint32_t n = 0;
  size_t body = 0, at;
  char *frame;
  napi_value v;

  if (napi_get_array_length(env, argv, &n) != napi_ok || n == 0)
    goto bad;
  for (uint32_t i = 0; i < n; i++) {
    size_t l;
    if (napi_get_element(env, argv, i, &v) != napi_ok ||
        napi_get_value_string_utf8(env, v, NULL, 0, &l) != napi_ok)
      goto bad;
    body += l + 1;
  }
  if (body > KS_INIT_SPEC_MAX)
    goto bad;
  frame = malloc(sizeof h + body);
  if (frame == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  h.len = (uint32_t) body;
  memcpy(frame, &h, sizeof h);
  at = sizeof h;
  for (uint32_t i = 0; i < n && at < sizeof h + body; i++) {
    size_t l = 0;
    /* Each string again: its bytes and a NUL, within the room counted. */
    if (napi_get_element(env, argv, i, &v) != napi_ok ||
        napi_get_value_string_utf8(env, v, frame + at, sizeof h + body - at, &l) != napi_ok) {
      free(frame);
      goto bad;
    }
    at += l + 1;
  }
  if (at != sizeof h + body) { /* a string changed length in between: cannot happen */
    free(frame);
    goto bad;
  }
  *len = at;
  return frame;
bad:
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                        "a SPEC frame's argv must be a non-empty array of strings");
  return NULL;
}

/* claimSend(channelFd, argv) -> bytes of the frame left unsent (0: all
 * went): a claim's SPEC frame, built from argv and written by the calling
 * thread to a parked box's channel (run()'s shareChannel), so that the box
 * starts the call before the engine's thread even wakes; then the caller's
 * copy of the channel is closed. Never blocks: a full channel, a box gone
 * or a frame over KS__CLAIM_SEND_MAX leaves bytes unsent, which the caller
 * hands to the engine. Only a descriptor run() gave. */
static napi_value ks__claim_send(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  struct ks_addon *addon;
  int32_t fd = -1;
  char *frame;
  size_t len = 0;
  ssize_t n = -1;
  napi_value out;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  if (argc != 2 || napi_get_value_int32(env, argv[0], &fd) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "claimSend(channelFd, argv)");
    return NULL;
  }
  frame = ks__spec_frame(env, argv[1], &len); /* checks argv */
  if (frame == NULL)
    return NULL;
  if (ks_addon_holds(addon, fd)) {
    if (len <= KS__CLAIM_SEND_MAX) {
      do
        n = send(fd, frame, len, MSG_DONTWAIT | MSG_NOSIGNAL);
      while (n < 0 && errno == EINTR);
    }
    if (ks_addon_release(addon, fd))
      (void) close(fd); /* EINTR closes it too */
  }
  free(frame);
  KS_NAPI_CALL(env, napi_create_double(env, (double) (len - (n > 0 ? (size_t) n : 0)), &out));
  return out;
}

/* specFrame(argv) -> Buffer: the SPEC frame of argv, as claimSend writes it
 * (the engine sends it when the caller could not: terms.spec). */
static napi_value ks__spec_frame_buffer(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  char *frame;
  size_t len = 0;
  void *data;
  napi_value out;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc != 1) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "specFrame(argv)");
    return NULL;
  }
  frame = ks__spec_frame(env, argv[0], &len); /* checks argv */
  if (frame == NULL)
    return NULL;
  if (napi_create_buffer_copy(env, len, frame, &data, &out) != napi_ok) {
    free(frame);
    ks_napi_throw_last(env);
    return NULL;
  }
  free(frame);
  return out;
}

bool ks_napi_init_run(napi_env env, napi_value exports) {
  static const struct ks_napi_fn fns[] = {
      {"cancelGroup", ks__cancel_group}, {"forgetGroup", ks__forget_group},
      {"run", ks__run}, {"shutdown", ks__shutdown},
      {"dropParked", ks__drop_parked}, {"holdLoop", ks__hold_loop},
      {"releaseLoop", ks__release_loop},
      {"claimSend", ks__claim_send}, {"specFrame", ks__spec_frame_buffer},
  };
  napi_value v;

  if (!ks_napi_export(env, exports, fns, sizeof fns / sizeof fns[0]) ||
      !ks__export_raw_fields(env, exports))
    return false;
  if (napi_create_int32(env, KS_BOX_STARTED_FD, &v) != napi_ok ||
      !ks_napi_set(env, exports, "STARTED_FD", v))
    return false;
  if (napi_create_int32(env, KS_BOX_ENV_FD, &v) != napi_ok ||
      !ks_napi_set(env, exports, "ENV_FD", v))
    return false;
  return true;
}
