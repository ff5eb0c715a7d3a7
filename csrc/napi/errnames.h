#ifndef KS_NAPI_ERRNAMES_H
#define KS_NAPI_ERRNAMES_H

/* Node's code for a positive errno ("ENOENT"), or "EUNKNOWN". */
const char *ks_errno_code(int errnum);
/* Node's lowercase description ("no such file or directory"). */
const char *ks_errno_message(int errnum);

#endif
