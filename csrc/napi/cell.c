/* kernelCell(): one message to a kernel box's interpreter (its start, a
 * cell, a rollback), settled when the interpreter answers or the kernel is
 * gone. The kernel box itself is a startKernel() box with a kernelKey; cells name it by
 * that key and run in the order they are submitted.
 *
 * kernelCell({ kernelKey, id, type, a, b, body, timeoutMs, maxOutputBytes,
 *              onStdout, onStderr, cancelKey, direct }) -> Promise<RawCellResult>
 *   type: "kernel" (a: mode 1 shared / 2 fork, b: checkpoints, body: the
 *   driver's source), "cell" (a: resultMax, b: 1 for rich results, body:
 *   the code) or "rollback" (a: n). body: a Buffer or null. direct: the
 *   caller has no other cell of this kernel under way, so this thread may
 *   send it itself (ks_sup_send_cell), sparing the supervisor's wakeup. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "cell-result.h"
#include "opts.h"

static const struct {
  const char *name;
  uint16_t type;
} ks__types[] = {
    {"kernel", KS_IP_KERNEL}, {"cell", KS_IP_CELL}, {"rollback", KS_IP_ROLLBACK}};

static const char *ks__how_name(enum ks_cell_end how) {
  switch (how) {
  case KS_CELL_DONE:
    return "done";
  case KS_CELL_ENDED:
    return "ended";
  case KS_CELL_READY:
    return "ready";
  case KS_CELL_DEAD:
    return "dead";
  case KS_CELL_SKIPPED:
    return "skipped";
  default:
    return "none";
  }
}

static napi_value ks__string(napi_env env, const char *s) {
  napi_value v = NULL;
  if (s == NULL)
    return ks_napi_null(env);
  (void) napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
  return v;
}

/* The raw outcome of a cell (lib/kernel.js shapes it), made by
 * lib/binding.js's makeCellResult from the fields of cell-result.h. */
#define KS__CELL_INDEX(name, value) KS__CELL_##name,
enum { KS_CELL_RESULT_FIELDS(KS__CELL_INDEX) KS__CELL_FIELDS };
#undef KS__CELL_INDEX

static napi_value ks__cell_object(napi_env env, struct ks_napi_call *call, struct ks_cell *cell) {
  struct ks_cell_result *res = ks_cell_result(cell);
  const struct ks_ip_done *d = &res->done;
  const struct ks_ip_ended *e = &res->ended;
  bool ended = res->how == KS_CELL_ENDED;
  napi_value v[KS__CELL_FIELDS];

#define KS__CELL_VALUE(name, value)                                                              \
  if ((v[KS__CELL_##name] = (value)) == NULL)                                                     \
    return NULL;
  KS_CELL_RESULT_FIELDS(KS__CELL_VALUE)
#undef KS__CELL_VALUE
  return ks_napi_make(env, call->addon->make_cell, KS__CELL_FIELDS, v);
}

/* The call's settle hook (call.h): the cell's promise from its end. */
static void ks__settle_cell(napi_env env, struct ks_napi_call *call, struct ks_box *box,
                            struct ks_cell *cell) {
  (void) box;
  napi_value value = ks__cell_object(env, call, cell);
  if (value != NULL)
    (void) napi_resolve_deferred(env, call->deferred, value);
  else
    ks_napi_reject_pending(env, call->deferred, "kern-sandbox: could not build the cell result");
}

/* kernelCell's options: { kernelKey, id, type, a, b, body?, timeoutMs,
 * maxOutputBytes, onStdout?, onStderr?, cancelKey?, direct? }. */
static bool ks__cell_request(napi_env env, napi_value opts, struct ks_cell_request *req,
                             napi_value streams[2], bool *direct) {
  struct ks_opts o;
  char *type = NULL;
  double id = 0, a = 0, b = 0, timeout_ms = 0, cap = 0;
  void *body = NULL;
  size_t body_len = 0;
  bool present;
  struct ks_ip_run head;

  memset(req, 0, sizeof *req);
  if (!ks_opts_begin(env, opts, "kernelCell", "opts", &o) ||
      !ks_opt_key(&o, "kernelKey", true, &req->kernel) ||
      !ks_opt_number(&o, "id", true, 0, 4294967295.0, &id) || !ks_opt_string(&o, "type", &type))
    return false;
  for (size_t i = 0; i < sizeof ks__types / sizeof ks__types[0]; i++) {
    if (strcmp(type, ks__types[i].name) == 0)
      req->type = ks__types[i].type;
  }
  free(type);
  if (req->type == 0) {
    ks_opts_type_error(&o, "type", "must be \"kernel\", \"cell\" or \"rollback\"");
    return false;
  }
  if (!ks_opt_number(&o, "a", true, 0, 4294967295.0, &a) ||
      !ks_opt_number(&o, "b", true, 0, 4294967295.0, &b) ||
      !ks_opt_buffer(&o, "body", &body, &body_len, &present) ||
      !ks_opt_number(&o, "timeoutMs", true, 1e-6, 1e13, &timeout_ms) ||
      !ks_opt_number(&o, "maxOutputBytes", true, 0, 4294967295.0, &cap) ||
      !ks_opt_function(&o, "onStdout", &streams[0], &req->stream[KS_STDOUT]) ||
      !ks_opt_function(&o, "onStderr", &streams[1], &req->stream[KS_STDERR]) ||
      !ks_opt_key(&o, "cancelKey", false, &req->call) || !ks_opt_bool(&o, "direct", direct))
    return false;
  req->id = (uint32_t) id;
  req->timeout_ns = (uint64_t) (timeout_ms * 1e6);
  req->cap = (size_t) cap;
  head.result_max = (uint32_t) a;
  head.flags = (uint32_t) b;
  req->msg = ks_ip_frame(req->type, req->id, &head, sizeof head, body, body_len, &req->msg_len);
  if (req->msg == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return false;
  }
  return true;
}

/* kernelCell(opts) -> Promise: one message to a kernel box's interpreter. */
static napi_value ks__kernel_cell(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_value streams[2];
  bool direct = false;
  int sent = 0;
  struct ks_addon *addon;
  struct ks_cell_request req;
  struct ks_napi_call *call = NULL;
  struct ks_cell *cell = NULL;
  struct ks_err err;
  napi_value promise = NULL;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  if (argc != 1) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "kern-sandbox: kernelCell(opts) takes 1 argument");
    return NULL;
  }
  if (!ks__cell_request(env, argv[0], &req, streams, &direct)) {
    ks_cell_request_free(&req);
    return NULL;
  }
  call = ks_napi_call_new(env, addon, streams, req.stream, ks__settle_cell);
  if (call == NULL)
    goto fail;
  ks_err_clear(&err);
  if (ks_napi_ensure_supervisor(env, addon, &err) < 0) {
    ks_napi_throw_system(env, &err);
    goto fail;
  }
  cell = ks_cell_new(&req, call);
  if (cell == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    goto fail;
  }
  if (napi_create_promise(env, &call->deferred, &promise) != napi_ok) {
    ks_napi_throw_last(env);
    goto fail;
  }
  if (direct)
    sent = ks_sup_send_cell(addon->sup, cell);
  if (sent < 0 || (sent == 0 && ks_sup_submit_cell(addon->sup, cell) < 0)) {
    ks_err_set(&err, ECANCELED, "spawn", NULL);
    ks_napi_reject_system(env, call->deferred, &err);
    ks_cell_free(cell);
    ks_napi_call_free(env, call);
    return promise;
  }
  ks_napi_call_begun(env, call);
  return promise;

fail:
  if (cell != NULL)
    ks_cell_free(cell);
  else
    ks_cell_request_free(&req);
  if (call != NULL)
    ks_napi_call_free(env, call);
  return NULL;
}

bool ks_napi_init_cell(napi_env env, napi_value exports) {
  static const char *const names[] = {
#define KS__CELL_NAME(name, value) #name,
      KS_CELL_RESULT_FIELDS(KS__CELL_NAME)
#undef KS__CELL_NAME
  };
  napi_value fn;
  return napi_create_function(env, "kernelCell", NAPI_AUTO_LENGTH, ks__kernel_cell, NULL, &fn) ==
             napi_ok &&
         ks_napi_set(env, exports, "kernelCell", fn) &&
         ks_napi_export_names(env, exports, "CELL_RESULT_FIELDS", names, KS__CELL_FIELDS);
}
