"use strict";

// Helpers of the process tests (test/54, test/integration/processes*):
// waiting for what a stream prints, and a bounded HTTP GET.
const http = require("http");

/** Resolves with all text so far once pred(text) holds; rejects after ms. */
function until(stream, pred, ms = 10000) {
  let text = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out; got ${JSON.stringify(text)}`)), ms);
    const onData = (d) => {
      text += d;
      if (!pred(text)) return;
      clearTimeout(timer);
      stream.off("data", onData);
      resolve(text);
    };
    stream.on("data", onData);
  });
}

/** GET url: { status, body }; an error after 10 s without an answer. */
function httpGet(url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode, body }));
    });
    req.on("error", reject);
    req.setTimeout(10000, () => req.destroy(new Error("timeout")));
  });
}

module.exports = { until, httpGet };
