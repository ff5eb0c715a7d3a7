# The bench's baseline kernel (bench/run.js, figure `kernel`): the simplest
# long-lived Python a host can drive, as a stdin/stdout code interpreter in a
# box does (0.1.23's kernel worked this way): one line of JSON code in, one
# line of JSON out. Cells share one namespace; a trailing expression's repr
# comes back. No isolation of a cell's output, no interrupts: the floor.
import json
import sys

ns = {}
for line in sys.stdin:
    code = json.loads(line)
    value = None
    try:
        *body, last = code.split("\n")
        exec("\n".join(body), ns)
        value = repr(eval(last, ns))
    except Exception as e:  # noqa: BLE001 - a baseline reports, never dies
        value = "error: %r" % e
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()
