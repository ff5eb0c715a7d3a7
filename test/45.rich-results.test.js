"use strict";

// Issue 14, part 1 against the double: rich results of one-shot Python
// calls (ExecutionResult.results, Result), with everything else exactly
// `python3 -c` (the equality table, test/41, runs with results on), no
// helper file in the workspace for any code, results within maxOutputBytes,
// and `results: false` giving 0.1.1's argv.
const assert = require("assert");
const h = require("./lib/harness");
const { Sandbox, Result, runCode, withSandbox } = require("..");
const { POOL_STATS } = require("../lib/internal");

// A stand-in for matplotlib.pyplot (the double's python3 has no matplotlib):
// the calls the figure capture makes, and a PNG that says which figure it is.
const FAKE_PYPLOT = `
import io
_figs = {}
class Figure:
    def __init__(self, num): self.num = num
    def savefig(self, buf, format=None):
        buf.write(b'\\x89PNG\\r\\n\\x1a\\n' + ('figure %d' % self.num).encode())
    def __repr__(self): return '<Figure %d>' % self.num
def figure(num=None):
    num = num if num is not None else len(_figs) + 1
    return _figs.setdefault(num, Figure(num))
def get_fignums(): return sorted(_figs)
def close(which='all'): _figs.clear()
`;

describe("code interpreter: rich results of one-shot calls (issue 14)", function () {
  this.timeout(60000);

  it("the value of a trailing expression is a result, None is not; display() adds results in " +
    "order; Result's getters read data", async function () {
    const r = await runCode("print('out')\ndisplay(1, 'two')\nNone\n[3] * 2");
    assert.strictEqual(r.stdout, "out\n");
    assert.ok(r.results.every((x) => x instanceof Result));
    assert.deepStrictEqual(r.results.map((x) => x.text), ["1", "'two'", "[3, 3]"]);
    const none = await runCode("x = 1\nNone");
    assert.deepStrictEqual(none.results, []);
    const doc = await runCode("'''only a docstring'''\nprint(__doc__)");
    assert.strictEqual(doc.stdout, "only a docstring\n");
    assert.deepStrictEqual(doc.results, []);
  });

  it("the trailing expression is found as Jupyter finds it, whatever shape the code has; a " +
    "compile-time warning is printed once", async function () {
    const cases = [
      ["x = [1,\n2]\nx", "[1, 2]"],
      ["print('a',\n  'b')\nlen(\n'abc'\n)", "3"],
      ["s = \"\"\"\nx\n\"\"\"\nlen(s)", "3"],
      ["a = 1; a + 1", "2"],
      ["x = 41\nx + 1  # the answer", "42"],
      ["if True:\n    5", null],
      ["for i in range(2):\n    i", null],
      ["y = 3", null],
      ["x = 1 + \\\n2", null],
      ["import os", null],
      ["def f():\n    return 1\nf()", "1"],
      ["@staticmethod\ndef g(): pass\ng", "<staticmethod(<function g at"],
      // One top-level line (one compile when it can): statements by their
      // first word or an assignment to a name, the rest as expressions.
      ["import os; os.sep", "'/'"],
      ["pass", null],
      ["x = 5", null],
      ["if_ = 4", null],
      ["match = 2", null],
      ["del(__doc__)", null],
      ["3 >= 2", "True"],
      ["3 == 3", "True"],
      ["(z := 9)", "9"],
      ["not 0", "True"],
      ["(lambda: 7)()", "7"],
      ["f'{1+1}'", "'2'"],
      ["'abc'.upper()", "'ABC'"],
      ["type(1)", "<class 'int'>"],
      ["sum(range(10))\n# a comment after it\n", "45"],
      ["len([1,\n  2])", "2"],
    ];
    await withSandbox(async (s) => {
      for (const [code, want] of cases) {
        const r = await s.runCode(code);
        assert.strictEqual(r.exitCode, 0, `${code}: ${r.stderr}`);
        if (want === null) assert.deepStrictEqual(r.results, [], code);
        else assert.ok(r.results.length === 1 && r.results[0].text.startsWith(want), `${code}: ${JSON.stringify(r.results)}`);
      }
      // SyntaxWarning at compile time: once, as python3 -c prints it.
      const w = await s.runCode("x = 1\nx is 1");
      assert.strictEqual((w.stderr.match(/SyntaxWarning/g) || []).length, 1, w.stderr);
      assert.deepStrictEqual(w.results.map((x) => x.text), ["True"]);
      // And of one line, and the errors of lines that are no expression:
      // as python3 -c prints them (its argv: results: false).
      for (const code of ["1 is 1", "x := 1", "d = {}; d['\\d'] = 1", "x[1] = 2", "y: int = 3\ny",
        "else:", "return 5", "await x"]) {
        const [rich, plain] = [await s.runCode(code), await s.runCode(code, { results: false })];
        assert.deepStrictEqual([rich.stdout, rich.stderr, rich.exitCode],
          [plain.stdout, plain.stderr, plain.exitCode], code);
      }
      const one = await s.runCode("1 is 1");
      assert.strictEqual((one.stderr.match(/SyntaxWarning/g) || []).length, 1, one.stderr);
      assert.deepStrictEqual(one.results.map((x) => x.text), ["True"]);
    });
  });

  it("_repr_html_, _repr_markdown_, _repr_svg_, _repr_latex_, _repr_json_, _repr_png_ and " +
    "_repr_jpeg_ are used; a _repr_ that raises is skipped; text/plain is always there",
  async function () {
    const r = await runCode([
      "class Rich:",
      "    def __repr__(self): return 'Rich()'",
      "    def _repr_html_(self): return '<i>r</i>'",
      "    def _repr_markdown_(self): return '*r*'",
      "    def _repr_svg_(self): return '<svg/>'",
      "    def _repr_latex_(self): return '$r$'",
      "    def _repr_json_(self): return {'a': [1, 2]}",
      "    def _repr_png_(self): return b'\\x89PNG-bytes'",
      "    def _repr_jpeg_(self): return (b'\\xff\\xd8jpeg', {'width': 1})",
      "class Broken:",
      "    def _repr_html_(self): raise RuntimeError('no')",
      "display(Broken())",
      "Rich()",
    ].join("\n"));
    assert.strictEqual(r.stderr, "");
    const [broken, rich] = r.results;
    assert.deepStrictEqual(broken.formats(), ["text/plain"]);
    assert.match(broken.text, /^<__main__\.Broken object at 0x[0-9a-f]+>$/);
    assert.deepStrictEqual(rich.formats(), ["text/plain", "text/html", "text/markdown",
      "image/svg+xml", "image/png", "image/jpeg", "text/latex", "application/json"]);
    assert.deepStrictEqual(rich.formatNames(), ["text", "html", "markdown", "svg", "png", "jpeg",
      "latex", "json"]);
    assert.strictEqual(rich.text, "Rich()");
    assert.strictEqual(rich.html, "<i>r</i>");
    assert.strictEqual(rich.markdown, "*r*");
    assert.strictEqual(rich.svg, "<svg/>");
    assert.strictEqual(rich.latex, "$r$");
    assert.deepStrictEqual(JSON.parse(rich.json), { a: [1, 2] });
    assert.ok(rich.png.equals(Buffer.from("\x89PNG-bytes", "latin1")));
    assert.ok(rich.jpeg.equals(Buffer.from("\xff\xd8jpeg", "latin1")));
    assert.strictEqual(rich.data["image/png"], Buffer.from("\x89PNG-bytes", "latin1").toString("base64"));
  });

  it("open matplotlib figures become PNG results at the end, and are closed", async function () {
    await withSandbox(async (s) => {
      await s.writeFile("matplotlib/__init__.py", "");
      await s.writeFile("matplotlib/pyplot.py", FAKE_PYPLOT);
      const r = await s.runCode("import matplotlib.pyplot as plt\nplt.figure()\nplt.figure()\n" +
        "print(plt.get_fignums())");
      assert.strictEqual(r.stdout, "[1, 2]\n");
      assert.deepStrictEqual(r.results.map((x) => x.text), ["<Figure 1>", "<Figure 2>"]);
      assert.strictEqual(r.results[1].png.toString("latin1"), "\x89PNG\r\n\x1a\nfigure 2");
      // Also after an exception; never with results: false.
      const err = await s.runCode("import matplotlib.pyplot as plt\nplt.figure()\n1/0");
      assert.strictEqual(err.exitCode, 1);
      assert.strictEqual(err.results.length, 1);
      const off = await s.runCode("import matplotlib.pyplot as plt\nplt.figure()", { results: false });
      assert.deepStrictEqual(off.results, []);
    });
  });

  it("results are bounded by maxOutputBytes: one that does not fit is dropped whole and the " +
    "result says truncated; the output itself is untouched", async function () {
    const r = await runCode("display('a' * 300)\ndisplay('b' * 3000)\ndisplay('c' * 300)\nprint('ok')",
      { maxOutputBytes: 1000 });
    assert.strictEqual(r.stdout, "ok\n");
    assert.deepStrictEqual(r.results.map((x) => x.text[1]), ["a", "c"]);
    assert.strictEqual(r.results[0].text.length, 302);
    assert.strictEqual(r.truncated, true);
  });

  it("everything else stays python3 -c: argv, __file__, tracebacks, sys.exit('msg'), exit codes " +
    "(test/41 compares the whole table)", async function () {
    const r = await runCode("import sys\nprint(sys.argv, repr(sys.path[0]), __name__)\n" +
      "print('__file__' in globals())\ndef f():\n    raise KeyError('k')\nf()");
    assert.strictEqual(r.stdout, "['-c'] '' __main__\nFalse\n");
    assert.strictEqual(r.stderr, "Traceback (most recent call last):\n  File \"<string>\", line 6, " +
      "in <module>\n  File \"<string>\", line 5, in f\nKeyError: 'k'\n");
    assert.strictEqual(r.exitCode, 1);
    const m = await runCode("import sys; sys.exit('msg')");
    assert.deepStrictEqual([m.stderr, m.exitCode, m.results], ["msg\n", 1, []]);
  });

  it("results: false (per call or per session) runs 0.1.1's argv, python3 -c CODE", async function () {
    await withSandbox({ prewarm: 0, results: false }, async (s) => {
      const r = await s.runCode("1 + 1");
      assert.deepStrictEqual(r.results, []);
      assert.deepStrictEqual(h.boxCommand(h.recordedArgv()), ["python3", "-c", "1 + 1"]);
      s.results = true;
      assert.strictEqual((await s.runCode("1 + 1")).results[0].text, "2");
      const off = await s.runCode("2 + 2", { results: false });
      assert.deepStrictEqual(off.results, []);
      assert.deepStrictEqual(h.boxCommand(h.recordedArgv()), ["python3", "-c", "2 + 2"]);
      await assert.rejects(s.runCode("1", { results: "no" }), /options\.results must be a boolean/);
    });
    assert.throws(() => new Sandbox({ results: 1 }), /options\.results must be/);
  });

  it("no helper file ever appears in the workspace or in files, for any size of code, with " +
    "concurrent calls", async function () {
    await withSandbox(async (s) => {
      const big = `${"x = 1\n".repeat(30000)}print(len(open('/proc/self/cmdline', 'rb').read()) > 0)\nx + 41`;
      assert.ok(Buffer.byteLength(big) > 128 * 1024);
      const rs = await Promise.all([big, "1 + 1", big, "import os\nsorted(os.listdir('.'))"]
        .map((c) => s.runCode(c)));
      assert.deepStrictEqual(rs.map((r) => r.results.at(-1).text), ["42", "2", "42", "[]"]);
      assert.ok(rs.every((r) => r.files.length === 0 && r.exitCode === 0), JSON.stringify(rs.map((r) => r.stderr)));
      assert.deepStrictEqual(await s.listFiles(), []);
    });
  });

  it("code of one line, or whose last statement is no expression, in a cold box runs from its " +
    "text with no compile() (its first call builds the AST's types, ~0.6 ms): output, errors, " +
    "warnings and results as in a prewarmed box, which compiles, and as python3 -c", async function () {
    // Statements (exec of the text), expressions (checked by the parser,
    // then eval of the text), expressions only the compiler refuses (*a),
    // compile-time warnings, errors the code raises itself (a SyntaxError
    // among them), and lines that take the long way (docstring, `;`).
    const codes = ["print(1)", "1 is 1", "*a", "print(*[1, 2])", "await x", "(yield)",
      "[x for x in range(3)]", "__name__", "raise SystemExit(3)", "eval('x y')",
      "compile('x y', '<string>', 'exec')", "'\\d'", "x", "1/0", "import os", "x = (1 is 1)",
      "y: int = 3", "f'{1 is 1}'", "print('\\d')", "x := 1", "else:", "return 5",
      "__import__('sys').stdout.write('x')", "None", "exit(4)", "0x", "1 +", "del x",
      "assert (1, 'msg')", "nonlocal x", "len([1,\n 2])\n# c\n", "import os; os.sep",
      "sorted(k for k in __import__('sys').modules if k in ('_ast', '_symtable'))",
      // Several lines whose last statement is no expression: run from their
      // text too; and lines that only look like it (the line continues a
      // string, brackets, a backslash or a decorator; an else:), which
      // compile as before.
      "import math\nx = math.sqrt(2)\ny = x * 2", "x = 1\nfor i in range(2):\n    x += i\n",
      "def f():\n    return 1\nx = f()", "x = (1 is 1)\ny = 2 \\\n  + 3", "x = 1\nreturn 5",
      "print('\\d')\nx = 1", "x = 1\nif x:\n    pass\nelse:\n    y = 2",
      "len('''\nx = 1''')", "x = 1\nimport os; os.sep", "class A:\n    pass\n@staticmethod\ndef g(): pass",
      "y = [1,\nz = 2]", "x = 1\n  y = 2", "# only a comment\n", "x = 1\nimport nosuchmodule",
      "x = 1\ndel x\nx",
      // Several lines whose last statement is an expression: the head's text
      // runs, then the expression's, checked first where it stands (in dead
      // code) for the compiler's errors and warnings; or the long way.
      "import math\nx = math.sqrt(2)\nprint(x)", "x = 41\nx + 1", "x = 1\nx is 1",
      "print('a')\nawait x", "print('a')\n(yield)", "print('a')\n*b", "print('a')\n(1, 2)(3)",
      "from __future__ import annotations\nx = 1\nx", "from __future__ import barry_as_FLUFL\n1 != 2",
      "def f():\n    return 1\nf()",
      "x = [1,\n2]\nx", "import sys\nprint('e', file=sys.stderr)\nlen('ab')",
      "'''doc'''\n__doc__", "x = 1\n'''s'''", "y = 2\n(lambda: (yield))", "x = 3\nx\n# c\n\n",
      "print(1)\nprint(2)", "import os\nos.sep", "x = 5\nf'{x!r:>4}'", "x = 1\n1 +",
      "x = 1\nprint('\\d')", "s = '''\nx\n'''\nlen(s)"];
    // -c has no display() and a few frames fewer before a RecursionError;
    // these lines use neither.
    const shape = (r) => [r.stdout, r.stderr.replace(/0x[0-9a-f]+/g, "0x"), r.exitCode,
      r.results.map((x) => x.text.replace(/0x[0-9a-f]+/g, "0x"))];
    const cold = await new Sandbox({ prewarm: 0 }).open();
    const warm = await new Sandbox({ prewarm: 1 }).open();
    try {
      for (const code of codes) {
        assert.ok(await h.waitFor(() => warm[POOL_STATS]().ready === 1, 10000), code);
        const before = warm[POOL_STATS]().prewarmedRuns;
        const w = await warm.runCode(code);
        assert.strictEqual(warm[POOL_STATS]().prewarmedRuns, before + 1, code); // a warm box ran it
        const c = await cold.runCode(code);
        const plain = await cold.runCode(code, { results: false });
        assert.deepStrictEqual(shape(c), shape(w), code);
        assert.deepStrictEqual(shape(c).slice(0, 3), shape(plain).slice(0, 3), code);
      }
      // Neither module shows: the parser's check leaves no trace.
      const mods = await cold.runCode("sorted(k for k in __import__('sys').modules " +
        "if k in ('_ast', '_symtable'))");
      assert.deepStrictEqual(mods.results.map((x) => x.text), ["[]"]);
    } finally {
      await cold.close();
      await warm.close();
    }
  });

  it("a prewarmed Python box gives the same results", async function () {
    await withSandbox({ prewarm: 1 }, async (s) => {
      await h.poolReady(s);
      const r = await s.runCode("display('shown')\n6 * 7");
      assert.deepStrictEqual(r.results.map((x) => x.text), ["'shown'", "42"]);
    });
  });
});
