/* The closer thread (closer.h). One for the whole process, started by the
 * first close handed to it and never ended: it holds no descriptor while it
 * waits, and a detached thread blocked on a condition keeps no event loop
 * alive. Closes are done in the order they came, one at a time: they share
 * one device anyway. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "closer.h"

struct ks__close_item {
  struct ks__close_item *next;
  int fd;
};

static pthread_mutex_t ks__lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ks__more = PTHREAD_COND_INITIALIZER;
/* Under ks__lock: the queue (oldest first), whether the thread runs, and
 * whether it sleeps on ks__more (only then is a signal needed). */
static struct ks__close_item *ks__head, **ks__tail = &ks__head;
static bool ks__started, ks__idle;
/* Handed over and not yet closed; read without the lock (ks_closer_pending). */
static atomic_int ks__pending;

static void ks__close_now(int fd) {
  (void) close(fd); /* EINTR still closes it on Linux: never retry */
  atomic_fetch_sub(&ks__pending, 1);
}

static void *ks__closer_main(void *arg) {
  (void) arg;
  (void) pthread_setname_np(pthread_self(), "ks-closer"); /* what top -H and perf show */
  pthread_mutex_lock(&ks__lock);
  for (;;) {
    struct ks__close_item *item;
    while (ks__head == NULL) {
      ks__idle = true;
      pthread_cond_wait(&ks__more, &ks__lock);
      ks__idle = false;
    }
    item = ks__head;
    ks__head = item->next;
    if (ks__head == NULL)
      ks__tail = &ks__head;
    pthread_mutex_unlock(&ks__lock);
    ks__close_now(item->fd);
    free(item);
    pthread_mutex_lock(&ks__lock);
  }
  return NULL;
}

/* Starts the thread; called under ks__lock. Every signal blocked in it: the
 * host's handlers run on the host's own threads. */
static bool ks__start(void) {
  pthread_attr_t attr;
  pthread_t thread;
  sigset_t all, old;
  int r = pthread_attr_init(&attr);

  if (r != 0)
    return false;
  (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  (void) pthread_attr_setstacksize(&attr, 64 * 1024);
  sigfillset(&all);
  (void) pthread_sigmask(SIG_SETMASK, &all, &old);
  r = pthread_create(&thread, &attr, ks__closer_main, NULL);
  (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
  (void) pthread_attr_destroy(&attr);
  return r == 0;
}

void ks_closer_close(int fd) {
  struct ks__close_item *item = malloc(sizeof *item);
  bool wake;

  atomic_fetch_add(&ks__pending, 1);
  if (item == NULL) {
    ks__close_now(fd);
    return;
  }
  item->fd = fd;
  item->next = NULL;
  pthread_mutex_lock(&ks__lock);
  if (!ks__started && !(ks__started = ks__start())) {
    pthread_mutex_unlock(&ks__lock);
    free(item);
    ks__close_now(fd);
    return;
  }
  *ks__tail = item;
  ks__tail = &item->next;
  wake = ks__idle;
  pthread_mutex_unlock(&ks__lock);
  if (wake)
    pthread_cond_signal(&ks__more);
}

int ks_closer_pending(void) {
  return atomic_load(&ks__pending);
}
