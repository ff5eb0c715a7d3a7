"use strict";

// The symbol `await using` calls: Node's own from 18.18 and 20.4 on; the same
// registered symbol (Symbol.for) on an older Node, where TypeScript's
// down-levelled `await using` and polyfills look it up.
const ASYNC_DISPOSE = Symbol.asyncDispose ?? Symbol.for("nodejs.asyncDispose");

module.exports = { ASYNC_DISPOSE };
