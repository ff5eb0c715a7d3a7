"use strict";

// Issue 14's load figure, shared by test/44 (the double) and
// test/integration/code-interpreter (a real kern): `count` kernels open at
// once in one session, half shared and half fork mode, each running `cells`
// cells that count up from its own start; every cell must read back its own
// kernel's state.

/** Runs the kernels and closes them; returns how many results were wrong. */
async function manyKernels(s, { count = 20, cells = 100 } = {}) {
  const kernels = await Promise.all(Array.from({ length: count },
    (_, i) => s.kernel(i % 2 ? { isolation: "fork" } : {})));
  let wrong = 0;
  await Promise.all(kernels.map(async (k, i) => {
    await k.runCode(`acc = ${i * 1000}`);
    for (let c = 1; c <= cells; c++) {
      const r = await k.runCode("acc += 1\nacc");
      if (r.results[0]?.text !== String(i * 1000 + c)) wrong++;
    }
  }));
  await Promise.all(kernels.map((k) => k.close()));
  return wrong;
}

module.exports = { manyKernels };
