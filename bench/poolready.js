"use strict";

// Waits for a session's pool (the harness's poolReady) with the loop figure
// muted: the wait scans /proc synchronously (idleBoxesWith), the bench's own
// work and not the package's, as forks and redis-cli are (bench/run.js).
async function poolReadyMuted(h, loop, s) {
  loop?.mute();
  try {
    await h.poolReady(s);
  } finally {
    loop?.unmute();
  }
}

module.exports = { poolReadyMuted };
