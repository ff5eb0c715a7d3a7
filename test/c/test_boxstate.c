/* Plain C tests of the box lifecycle's table (csrc/core/box/boxstate.c),
 * without Node, under ASan/UBSan (see the Makefile).
 *
 * Every pair of states is tried against the expected table below, written
 * out here on its own rather than taken from boxstate.c: a transition added
 * to or dropped from the module without this list changing fails. The
 * Makefile builds this file twice: as the release build has it, where an
 * illegal transition returns false (and is made all the same), and with
 * KS_STATE_CHECKS, as the Debug build has it, where it aborts: that is
 * tried in a child process per pair. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "box/boxstate.h"
#include "check.h"

#define N KS_BOX_NSTATES

struct pair {
  enum ks_box_state from, to;
};

/* The legal transitions, and nothing else. */
static const struct pair legal[] = {
    {KS_BOX_PENDING, KS_BOX_PARKED},    {KS_BOX_PENDING, KS_BOX_RUNNING},
    {KS_BOX_PENDING, KS_BOX_ENDED},     {KS_BOX_PARKED, KS_BOX_CLAIMED},
    {KS_BOX_PARKED, KS_BOX_KILLED},     {KS_BOX_PARKED, KS_BOX_DRAINING},
    {KS_BOX_RUNNING, KS_BOX_SETTLING},  {KS_BOX_RUNNING, KS_BOX_KILLED},
    {KS_BOX_RUNNING, KS_BOX_DRAINING},  {KS_BOX_SETTLING, KS_BOX_ENDED},
    {KS_BOX_SETTLING, KS_BOX_KILLED},   {KS_BOX_SETTLING, KS_BOX_DRAINING},
    {KS_BOX_KILLED, KS_BOX_DRAINING},   {KS_BOX_KILLED, KS_BOX_ENDED},
    {KS_BOX_DRAINING, KS_BOX_ENDED},    {KS_BOX_CLAIMED, KS_BOX_ENDED},
};

static const char *const names[N] = {"PENDING", "PARKED",   "RUNNING", "SETTLING",
                                     "KILLED",  "DRAINING", "CLAIMED", "ENDED"};

static bool expected(enum ks_box_state from, enum ks_box_state to) {
  for (size_t i = 0; i < sizeof legal / sizeof legal[0]; i++) {
    if (legal[i].from == from && legal[i].to == to)
      return true;
  }
  return false;
}

static void test_names(void) {
  CHECK(N == 8);
  for (int s = 0; s < N; s++) {
    const char *name = ks_box_state_name((enum ks_box_state) s);
    CHECK(name != NULL && strcmp(name, names[s]) == 0);
  }
  CHECK(strcmp(ks_box_state_name((enum ks_box_state) N), "INVALID") == 0);
  CHECK(strcmp(ks_box_state_name((enum ks_box_state) -1), "INVALID") == 0);
}

/* The table, pair by pair; and the states out of range, never legal. */
static void test_can(void) {
  int nlegal = 0;
  for (int from = 0; from < N; from++) {
    for (int to = 0; to < N; to++) {
      bool want = expected((enum ks_box_state) from, (enum ks_box_state) to);
      bool got = ks_box_state_can((enum ks_box_state) from, (enum ks_box_state) to);
      CHECK(got == want);
      if (got != want)
        fprintf(stderr, "  %s -> %s: %s, expected %s\n", names[from], names[to],
                got ? "legal" : "illegal", want ? "legal" : "illegal");
      nlegal += got;
    }
    CHECK(!ks_box_state_can((enum ks_box_state) from, (enum ks_box_state) N));
    CHECK(!ks_box_state_can((enum ks_box_state) N, (enum ks_box_state) from));
    CHECK(!ks_box_state_can((enum ks_box_state) from, (enum ks_box_state) -1));
  }
  CHECK(nlegal == (int) (sizeof legal / sizeof legal[0]));
  /* ENDED is final, and every other state leads somewhere. */
  for (int s = 0; s < N; s++) {
    bool any = false;
    for (int to = 0; to < N; to++)
      any |= ks_box_state_can((enum ks_box_state) s, (enum ks_box_state) to);
    CHECK(any == (s != KS_BOX_ENDED));
  }
}

/* The longest lives a box has, through the setter. */
static void test_lives(void) {
  static const enum ks_box_state lives[][6] = {
      {KS_BOX_PENDING, KS_BOX_RUNNING, KS_BOX_SETTLING, KS_BOX_ENDED},
      {KS_BOX_PENDING, KS_BOX_RUNNING, KS_BOX_KILLED, KS_BOX_DRAINING, KS_BOX_ENDED},
      {KS_BOX_PENDING, KS_BOX_PARKED, KS_BOX_CLAIMED, KS_BOX_ENDED},
      {KS_BOX_PENDING, KS_BOX_PARKED, KS_BOX_KILLED, KS_BOX_DRAINING, KS_BOX_ENDED},
      {KS_BOX_PENDING, KS_BOX_RUNNING, KS_BOX_SETTLING, KS_BOX_KILLED, KS_BOX_DRAINING,
       KS_BOX_ENDED},
      {KS_BOX_PENDING, KS_BOX_ENDED},
  };
  for (size_t i = 0; i < sizeof lives / sizeof lives[0]; i++) {
    enum ks_box_state s = KS_BOX_PENDING; /* zero: a calloc'ed box's */
    CHECK(s == lives[i][0]);
    for (int j = 1; j < 6 && lives[i][j] != KS_BOX_PENDING; j++) {
      CHECK(ks_box_state_set(&s, lives[i][j]));
      CHECK(s == lives[i][j]);
    }
    CHECK(s == KS_BOX_ENDED);
  }
}

#ifndef KS_STATE_CHECKS
/* The release build: true for a legal transition, false for an illegal
 * one, and the state moved either way. */
static void test_set(void) {
  for (int from = 0; from < N; from++) {
    for (int to = 0; to < N; to++) {
      enum ks_box_state s = (enum ks_box_state) from;
      bool r = ks_box_state_set(&s, (enum ks_box_state) to);
      CHECK(r == expected((enum ks_box_state) from, (enum ks_box_state) to));
      CHECK(s == (enum ks_box_state) to);
    }
  }
}
#else
/* The checked build: a legal transition returns true; an illegal one
 * aborts (SIGABRT), which a child process per pair shows. */
static void test_set(void) {
  for (int from = 0; from < N; from++) {
    for (int to = 0; to < N; to++) {
      enum ks_box_state s = (enum ks_box_state) from;
      int status = 0;
      pid_t pid;
      if (expected((enum ks_box_state) from, (enum ks_box_state) to)) {
        CHECK(ks_box_state_set(&s, (enum ks_box_state) to));
        CHECK(s == (enum ks_box_state) to);
        continue;
      }
      fflush(stderr);
      pid = fork();
      MUST(pid >= 0);
      if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
          dup2(null, 2); /* the abort's message, expected */
        (void) ks_box_state_set(&s, (enum ks_box_state) to);
        _exit(0); /* not aborted: a failure */
      }
      MUST(waitpid(pid, &status, 0) == pid);
      CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
      if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT))
        fprintf(stderr, "  %s -> %s did not abort\n", names[from], names[to]);
    }
  }
}
#endif

int main(void) {
#ifdef KS_STATE_CHECKS
  mode_name = "checked";
#else
  mode_name = "release";
#endif
  test_names();
  test_can();
  test_lives();
  test_set();
  printf("test_boxstate [%s]: %d checks, %d failures\n", mode_name, checks, failures);
  return failures == 0 ? 0 : 1;
}
