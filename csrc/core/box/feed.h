/* A call's stdin feed: the bytes the caller gives its workload's stdin,
 * handed from the submitting (JS) thread to the supervisor one chunk at a
 * time, so that host memory stays bounded whatever the source's size.
 *
 * The submitting thread puts a chunk in the feed's one slot (ks_feed_put,
 * refused while the slot is full) or marks its end (ks_feed_end), and
 * wakes the supervisor. The supervisor takes the chunk out of the slot
 * (ks_feed_take) into its own `cur`, writes it to the box's nonblocking
 * stdin pipe as the pipe makes room, and tells the caller the slot is free
 * again (the box's on_stdin hook). So the host holds at most two chunks of
 * a feed: the one being written and the one waiting in the slot.
 *
 * A feed outlives a box: a claimed box that ends without taking its call
 * (TAKEN) never had a byte written (writes start at TAKEN), and the call's
 * cold retry gets the same feed, its slot as it was. Reference-counted: the
 * caller's handle, each request that names it, and a wake command queued on
 * the loop hold one each. */
#ifndef KS_CORE_FEED_H
#define KS_CORE_FEED_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "loop.h"

/* The largest chunk a feed takes: the caller splits bigger ones. */
#define KS_FEED_CHUNK_MAX (1u << 20)

struct ks_box;

struct ks_feed {
  pthread_mutex_t mu;
  atomic_int refs;
  /* Under mu. */
  char *slot;       /* a chunk put and not taken yet, or NULL */
  size_t slot_len;
  bool ended;       /* no chunk follows the one in the slot */
  bool posted;      /* its wake command is on the loop's queue */
  /* The supervisor thread's alone. */
  struct ks_cmd cmd;   /* the wake (sup-internal.h, KS__CMD_FEED) */
  struct ks_box *box;  /* the box it feeds now, or NULL */
  char *cur;           /* the chunk being written, or NULL */
  size_t cur_len;
  size_t cur_off;
  bool gone;           /* the box's end of the pipe closed: what is left is dropped */
};

/* A new feed with one reference, or NULL (no memory). */
struct ks_feed *ks_feed_new(void);
void ks_feed_ref(struct ks_feed *f);
/* Drops a reference; the last frees the feed and its chunks. NULL: nothing. */
void ks_feed_unref(struct ks_feed *f);

/* Puts a copy of len (1..KS_FEED_CHUNK_MAX) bytes in the slot: 1; 0 if the
 * slot is full or the feed ended (nothing copied); -ENOMEM or -EINVAL. */
int ks_feed_put(struct ks_feed *f, const void *data, size_t len);
/* No chunk follows the ones already put. */
void ks_feed_end(struct ks_feed *f);

/* Supervisor: takes the slot's chunk (true, *data now the caller's to free)
 * or nothing (false); *ended: no chunk will come after. */
bool ks_feed_take(struct ks_feed *f, char **data, size_t *len, bool *ended);
/* Supervisor, at its wake command: the command is no longer queued. */
void ks_feed_unpost(struct ks_feed *f);
/* Any thread: marks the wake command queued; false if it was already (the
 * caller then posts nothing). A true return took a reference for it. */
bool ks_feed_mark_posted(struct ks_feed *f);

#endif
