"use strict";

// A client's view of the live workers, from their heartbeats (refreshed
// every viewMs): who is alive, with what policy, capacity and load.
//
// A heartbeat key that is missing is not yet a death: after a Redis restart
// without persistence, or a pause past the keys' TTL, every key is gone at
// once while every worker is alive and writes its key again within its
// heartbeat period. A worker is dead once its key has been missing for one
// heartbeat period and a refresh more (it publishes its period).
class WorkerView {
  constructor(cmd, n, viewMs) {
    this.cmd = cmd;
    this.n = n;
    this.viewMs = viewMs;
    this.seen = new Map(); // id -> { body, lastSeen }
    this.live = new Map(); // id -> heartbeat body, the alive ones
    this.onDead = () => {};
  }

  alive(id) {
    return this.live.has(id);
  }

  count() {
    return this.live.size;
  }

  list() {
    return [...this.live.values()];
  }

  async refresh() {
    const ids = await this.cmd.smembers(this.n.workers);
    const bodies = ids.length ? await this.cmd.mget(ids.map((id) => this.n.worker(id))) : [];
    const now = Date.now();
    ids.forEach((id, i) => {
      if (bodies[i] === null) {
        if (!this.seen.has(id)) this.seen.set(id, { body: null, lastSeen: 0 }); // never seen alive
        return;
      }
      try {
        this.seen.set(id, { body: JSON.parse(bodies[i]), lastSeen: now });
      } catch {
        /* not a heartbeat of ours */
      }
    });
    const dead = [];
    for (const [id, e] of this.seen) {
      const grace = e.body === null ? 0 : (e.body.heartbeatMs ?? 2000) + this.viewMs;
      if (now - e.lastSeen > grace) dead.push(id);
    }
    for (const id of dead) this.seen.delete(id);
    // A dead worker is forgotten for everyone (its key expired long ago).
    if (dead.length) await this.cmd.srem(this.n.workers, ...dead).catch(() => {});
    const before = this.live;
    this.live = new Map([...this.seen].filter(([, e]) => e.body !== null).map(([id, e]) => [id, e.body]));
    for (const id of dead) if (before.has(id) || !this.live.has(id)) this.onDead(id);
  }
}

module.exports = { WorkerView };
