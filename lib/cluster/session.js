"use strict";

// cluster.Sandbox: a session on one worker (the one that opened it, picked
// by load among those whose policy allows its options); its files live
// there, and every call goes to that worker's own queue.
const { randomUUID } = require("crypto");
const { sandboxError } = require("../errors");

function makeSandboxClass({ pickWorker, sessionCall, wireable, ensureOpen, openSessions }) {
  class Sandbox {
    #opts;
    #worker = null;
    #id = null;
    #state = "new"; // new | opening | open | closed

    constructor(opts = {}) {
      this.#opts = wireable(opts ?? {}, "Sandbox");
    }

    /** The id of the worker this session is pinned to (null before open()). */
    get workerId() {
      return this.#worker;
    }

    /** The session's id on its worker (it is in Redis with every call: not a secret). */
    get sessionId() {
      return this.#id;
    }

    async open({ signal } = {}) {
      ensureOpen();
      if (this.#state !== "new") throw sandboxError("ERR_SANDBOX_INVALID_ARG", "open() was already called");
      this.#state = "opening";
      try {
        this.#worker = await pickWorker(this.#opts, signal);
        this.#id = randomUUID();
        await sessionCall(this.#worker, this.#id, "open", { args: [], call: {}, signal, opts: this.#opts });
      } catch (e) {
        this.#state = "closed";
        throw e;
      }
      this.#state = "open";
      openSessions.add(this);
      return this;
    }

    #call(op, args, opts = {}) {
      if (this.#state === "new" || this.#state === "opening")
        return Promise.reject(sandboxError("ERR_SANDBOX_NOT_OPEN", "the Sandbox was never opened: call open() first"));
      if (this.#state === "closed") return Promise.reject(sandboxError("ERR_SANDBOX_CLOSED", "the Sandbox is closed"));
      return sessionCall(this.#worker, this.#id, op, { args, ...opts });
    }

    #callOptions(opts, where) {
      const o = opts ?? {};
      const signal = o.signal ?? null;
      return { signal, call: wireable(o, where), checkCall: true };
    }

    runCode(code, opts) {
      try {
        return this.#call("runCode", [code], this.#callOptions(opts, "runCode()"));
      } catch (e) {
        return Promise.reject(e);
      }
    }

    run(argv, opts) {
      try {
        return this.#call("run", [argv], this.#callOptions(opts, "run()"));
      } catch (e) {
        return Promise.reject(e);
      }
    }

    writeFile(path, data) {
      return this.#call("writeFile", [path, data]);
    }

    readFile(path, opts) {
      return this.#call("readFile", [path, opts ?? null]);
    }

    listFiles(subdir) {
      return this.#call("listFiles", [subdir ?? null]);
    }

    /** Closes the session on its worker; a worker that is gone took it along. */
    async close() {
      if (this.#state !== "open") {
        this.#state = "closed";
        return;
      }
      this.#state = "closed";
      openSessions.delete(this);
      try {
        await sessionCall(this.#worker, this.#id, "close", {});
      } catch (e) {
        if (e.code !== "ERR_SANDBOX_HOST_LOST" && e.code !== "ERR_SANDBOX_JOB_LOST" && e.code !== "ERR_SANDBOX_CLOSED") throw e;
      }
    }

    async [Symbol.asyncDispose]() {
      await this.close();
    }
  }
  return Sandbox;
}

module.exports = { makeSandboxClass };
