/* The options objects of the box entry points, read into a box request
 * (request.h). The facade validated every value; these checks only keep a
 * wrong call from reaching the engine: a TypeError or RangeError naming the
 * entry point and the field (opts.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../core/box/interp.h"
#include "../core/workspace/wswatch.h"
#include "handle.h"
#include "opts.h"
#include "request.h"

/* A Buffer's bytes copied into *out (malloc'd; at least one byte). */
static bool ks__copy_buffer(napi_env env, const void *data, size_t len, char **out,
                            size_t *out_len) {
  *out = malloc(len ? len : 1);
  if (*out == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return false;
  }
  memcpy(*out, data, len);
  *out_len = len;
  return true;
}

/* opts.kernHandle: the session's kern, held open (kernOpen), which the box
 * execs; absent: kern by its path. The box takes its own copy (>= 3): the
 * session may close its handle while a `kern stop` of this box is still to
 * come. */
static bool ks__get_kern(const struct ks_opts *o, struct ks_addon *addon,
                         struct ks_box_request *req) {
  napi_value v;
  bool present;
  int fd;
  struct ks_err err;

  if (!ks_opt_value(o, "kernHandle", false, &v, &present))
    return false;
  if (!present)
    return true;
  if (!ks_handle_fd(o->env, addon, v, KS_HANDLE_KERN, o->fn, &fd))
    return false;
  req->exec_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (req->exec_fd < 0) {
    req->exec_fd = 0;
    ks_err_set(&err, errno, "fcntl", req->path);
    ks_napi_throw_system(o->env, &err);
    return false;
  }
  return true;
}

/* opts.watch: the session's change tracking (wsWatch), one reference taken. */
static bool ks__get_watch(const struct ks_opts *o, struct ks_box_request *req) {
  napi_value v;
  bool present;

  if (!ks_opt_value(o, "watch", false, &v, &present))
    return false;
  if (!present)
    return true;
  req->watch = ks_napi_get_watch(o->env, v);
  if (req->watch == NULL) {
    ks_opts_type_error(o, "watch", "must be an open wsWatch handle");
    return false;
  }
  ks_ws_watch_ref(req->watch);
  return true;
}

/* What every box has: kern, its argv and environment, the env file, the
 * stop argv, the deadline, the cap, the streams, the watch and the keys. */
static bool ks__get_common(const struct ks_opts *o, struct ks_addon *addon,
                           struct ks_box_request *req, napi_value streams[2]) {
  double timeout_ms = 0;
  double cap = 0;
  void *data;
  size_t len;
  bool present;

  if (!ks_opt_string(o, "kern", &req->path) || !ks_opt_strv(o, "argv", true, &req->argv) ||
      !ks_opt_strv(o, "env", true, &req->envp) || !ks_opt_string(o, "tmpdir", &req->tmpdir) ||
      !ks_opt_strv(o, "stopArgv", false, &req->stop_argv))
    return false;
  if (!ks_opt_buffer(o, "envData", &data, &len, &present) ||
      (present && !ks__copy_buffer(o->env, data, len, &req->env_data, &req->env_len)))
    return false;
  /* 1e13 ms is 1e19 ns: within uint64_t with room for the deadline's sum
   * (the facade allows 2^31 - 1 s, about 2.1e12 ms). */
  if (!ks_opt_number(o, "timeoutMs", true, 1e-6, 1e13, &timeout_ms) ||
      !ks_opt_number(o, "maxOutputBytes", true, 0, 9007199254740991.0, &cap))
    return false;
  req->timeout_ns = (uint64_t) (timeout_ms * 1e6);
  req->cap = (size_t) cap;
  if (!ks_opt_function(o, "onStdout", &streams[0], &req->stream[KS_STDOUT]) ||
      !ks_opt_function(o, "onStderr", &streams[1], &req->stream[KS_STDERR]))
    return false;
  return ks__get_watch(o, req) && ks_opt_key(o, "group", false, &req->group) &&
         ks_opt_key(o, "cancelKey", false, &req->call) && ks__get_kern(o, addon, req);
}

/* opts.stdin: the call's stdin feed (stdinOpen), one reference taken,
 * and opts.onStdin, required with it: called each time the feed's slot is
 * free again. For startBox and claimBox only. */
static bool ks__get_feed(const struct ks_opts *o, struct ks_box_request *req, napi_value *on_stdin) {
  napi_value v;
  bool present;
  bool has_cb = false;

  *on_stdin = NULL;
  if (!ks_opt_value(o, "stdin", false, &v, &present))
    return false;
  if (!present)
    return true;
  req->feed = ks_handle_feed(o->env, v, o->fn);
  if (req->feed == NULL)
    return false;
  ks_feed_ref(req->feed);
  if (!ks_opt_function(o, "onStdin", on_stdin, &has_cb))
    return false;
  if (!has_cb) {
    ks_opts_type_error(o, "onStdin", "is required with stdin");
    return false;
  }
  return true;
}

/* opts.stdinFd: a process's stdin, the read end of a pipe (pipePair),
 * owned from here on whatever happens next (read first, so that no other
 * option's error leaves it open). */
static bool ks__get_stdin_fd(const struct ks_opts *o, struct ks_box_request *req) {
  double fd = -1;

  if (!ks_opt_number(o, "stdinFd", false, 0, INT_MAX, &fd))
    return false;
  if (fd >= 0) {
    req->stdin_rd = (int) fd;
    req->has_stdin_rd = true;
  }
  return true;
}

/* opts.ttyFd: a process's terminal, the master of a pty (ptyPair) whose
 * slave is opts.stdinFd, owned from here on as stdinFd is; startBox's only
 * (a terminal's box is cold). */
static bool ks__get_tty_fd(const struct ks_opts *o, enum ks_napi_box_mode mode,
                           struct ks_box_request *req) {
  double fd = -1;

  if (!ks_opt_number(o, "ttyFd", false, 0, INT_MAX, &fd))
    return false;
  if (fd < 0)
    return true;
  req->tty_fd = (int) fd;
  req->has_tty = true;
  if (mode != KS_NAPI_START || !req->has_stdin_rd) {
    ks_opts_type_error(o, "ttyFd", mode != KS_NAPI_START ? "is startBox's only"
                                                         : "needs opts.stdinFd (the pty's slave)");
    return false;
  }
  return true;
}

/* opts.init.run: the RUN an --interp box gets once it is taken: { code:
 * Buffer, results: boolean }. */
static bool ks__get_run(const struct ks_opts *init, struct ks_box_request *req) {
  struct ks_opts run;
  struct ks_ip_run head;
  bool present;
  bool results;
  void *code;
  size_t len;

  if (!ks_opts_sub(init, "run", "opts.init.run", false, &run, &present))
    return false;
  if (!present)
    return true;
  if (!ks_opt_buffer(&run, "code", &code, &len, &present) || !ks_opt_bool(&run, "results", &results))
    return false;
  if (!present) {
    ks_opts_type_error(&run, "code", "is required");
    return false;
  }
  head.result_max = (uint32_t) req->result_max;
  head.flags = results ? KS_IP_RESULTS : 0;
  req->ip_msg = ks_ip_frame(KS_IP_RUN, 0, &head, sizeof head, code, len, &req->ip_msg_len);
  if (req->ip_msg == NULL) {
    napi_throw_error(init->env, "ENOMEM", "kern-sandbox: out of memory");
    return false;
  }
  return true;
}

/* opts.init: the in-box init's terms ({ earlyCap, resultMax, run? }):
 * required but for startBox, where absent means argv runs the workload
 * itself (0.1.1's argv). */
static bool ks__get_init(const struct ks_opts *o, bool required, struct ks_box_request *req) {
  struct ks_opts init;
  bool present;
  double early = -1;
  double result_max = 0;

  req->early_cap = -1;
  if (!ks_opts_sub(o, "init", "opts.init", required, &init, &present))
    return false;
  if (!present)
    return true;
  if (!ks_opt_number(&init, "earlyCap", true, -1, 255, &early) ||
      !ks_opt_number(&init, "resultMax", true, 0, 4294967295.0, &result_max))
    return false;
  if (early != (double) (int) early || result_max != (double) (uint32_t) result_max) {
    ks_opts_type_error(&init, early != (double) (int) early ? "earlyCap" : "resultMax",
                       "must be a whole number");
    return false;
  }
  req->channel = true;
  req->early_cap = (int) early;
  req->result_max = (size_t) result_max;
  return ks__get_run(&init, req);
}

/* parkBox's opts.shareChannel: the caller sends a claim's spec itself
 * (claimSend): the channel is made here, and a copy of the host's end is
 * the caller's (*shared). Without one (no descriptors left), the engine
 * makes its own channel and a claim's spec goes through the engine. */
static bool ks__get_shared_channel(const struct ks_opts *o, struct ks_box_request *req,
                                   int *shared) {
  bool share = false;
  int sp[2];

  if (!ks_opt_bool(o, "shareChannel", &share))
    return false;
  if (!share || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
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

/* claimBox's opts: spec (what of the SPEC frame the caller could not send,
 * or all of it), claimOnly (the claim brings no box of its own) and begun
 * (the watch call the caller began before it sent the argv itself: of this
 * box's watch). */
static bool ks__get_claim(const struct ks_opts *o, struct ks_box_request *req) {
  napi_value begun;
  bool present;
  void *data;
  size_t len;

  if (!ks_opt_bool(o, "claimOnly", &req->claim_only) ||
      !ks_opt_buffer(o, "spec", &data, &len, &present) ||
      (present && !ks__copy_buffer(o->env, data, len, &req->spec, &req->spec_len)) ||
      !ks_opt_value(o, "begun", false, &begun, &present))
    return false;
  if (!present)
    return true;
  if (req->watch == NULL || !ks_napi_take_begun(o->env, begun, req->watch, &req->begun)) {
    ks_opts_type_error(o, "begun", "must be an open call of opts.watch (watchBegin)");
    return false;
  }
  req->has_begun = true;
  return true;
}

bool ks_napi_box_request(napi_env env, struct ks_addon *addon, enum ks_napi_box_mode mode,
                         const char *fn, napi_value parked, napi_value opts,
                         struct ks_box_request *req, napi_value streams[4], int *shared) {
  struct ks_opts o;
  napi_value claim;
  bool present;

  memset(req, 0, sizeof *req);
  req->early_cap = -1;
  *shared = -1;
  streams[2] = NULL;
  streams[3] = NULL;
  if (!ks_opts_begin(env, opts, fn, "opts", &o) || !ks__get_stdin_fd(&o, req) ||
      !ks__get_tty_fd(&o, mode, req) ||
      !ks__get_common(&o, addon, req, streams) ||
      !ks__get_init(&o, mode != KS_NAPI_START, req))
    return false;
  if ((mode == KS_NAPI_START || mode == KS_NAPI_CLAIM) &&
      (!ks__get_feed(&o, req, &streams[2]) ||
       !ks_opt_function(&o, "onStarted", &streams[3], &req->want_started) ||
       !ks_opt_bool(&o, "flow", &req->flow) || !ks_opt_bool(&o, "handStdout", &req->hand_stdout)))
    return false;
  if (!req->want_started)
    streams[3] = NULL;
  switch (mode) {
  case KS_NAPI_START:
    return true;
  case KS_NAPI_PARK:
    return ks_opt_key(&o, "parkKey", true, &req->park_key) &&
           ks__get_shared_channel(&o, req, shared);
  case KS_NAPI_CLAIM:
    return ks_handle_park_key(env, parked, fn, &req->claim_key) && ks__get_claim(&o, req);
  case KS_NAPI_KERNEL:
    if (!ks_opt_key(&o, "kernelKey", true, &req->kernel_key) ||
        !ks_opt_value(&o, "claim", false, &claim, &present))
      return false;
    return !present || ks_handle_park_key(env, claim, fn, &req->claim_key);
  }
  return true;
}
