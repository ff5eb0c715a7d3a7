"use strict";

// A client's view of the live workers, from their heartbeats (refreshed
// every viewMs): who is alive, with what policy, capacity and load.
class WorkerView {
  constructor(cmd, n) {
    this.cmd = cmd;
    this.n = n;
    this.live = new Map(); // id -> heartbeat body
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
    const next = new Map();
    const gone = [];
    ids.forEach((id, i) => {
      if (bodies[i] === null) gone.push(id);
      else {
        try {
          next.set(id, JSON.parse(bodies[i]));
        } catch {
          /* not a heartbeat of ours */
        }
      }
    });
    // A worker whose heartbeat expired is dead: forget it for everyone.
    if (gone.length) await this.cmd.srem(this.n.workers, ...gone);
    const before = this.live;
    this.live = next;
    for (const id of before.keys()) if (!next.has(id)) this.onDead(id);
    for (const id of gone) if (!before.has(id)) this.onDead(id);
  }
}

module.exports = { WorkerView };
