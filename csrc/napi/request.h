/* A box's request from the options object of its entry point (run.c):
 * startBox (a cold box), parkBox (a prewarm box), claimBox (a call in a
 * parked box) and startKernel (a kernel's box). */
#ifndef KS_NAPI_REQUEST_H
#define KS_NAPI_REQUEST_H

#include <stdbool.h>

#include "../core/box/supervisor.h"
#include "addon.h"

enum ks_napi_box_mode { KS_NAPI_START, KS_NAPI_PARK, KS_NAPI_CLAIM, KS_NAPI_KERNEL };

/* Reads opts for an entry point of mode (fn names it in errors) into req;
 * parked is claimBox's first argument (the parked box's handle), else NULL.
 * streams: opts.onStdout, opts.onStderr, opts.onStdin (a function, or
 * NULL when the box has no stdin feed) and opts.onStarted (a process's:
 * a function, or NULL), for the call. *shared: parkBox
 * with shareChannel: the caller's copy of the channel's host end (or -1:
 * none could be made, and the engine sends a claim's spec itself).
 * False with an exception pending; req is then the caller's to free
 * (ks_box_request_free), and *shared to close. */
bool ks_napi_box_request(napi_env env, struct ks_addon *addon, enum ks_napi_box_mode mode,
                         const char *fn, napi_value parked, napi_value opts,
                         struct ks_box_request *req, napi_value streams[4], int *shared);

#endif
