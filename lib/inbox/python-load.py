# The first code of every interpreter box, run as
# `python3 -c <this file> /.ks/boot.py /.ks/boot-KEY.bin`: it runs the boot
# (python-boot.py, whose text the host wrote to /.ks/boot.py) from the
# bytecode in /.ks/boot-KEY.bin when that file is there and was compiled by
# this very interpreter, else from its text, compiled here as `python3 -c`
# compiled it before. Compiling the boot costs 4-6 ms a box; loading its
# bytecode ~0.1 ms.
#
# Both files are on the init directory's read-only mount (lib/init.js): no
# box can write them. The bytecode comes from a box of its own that ran
# nothing but python-compile.py under `python3 -I -S`, with no environment,
# mounts or workspace of a session (lib/bootcache.js): no session's code or
# settings can have shaped it.
#
# Nothing of this stays visible: the two paths leave sys.argv and
# sys.orig_argv here (python3 -c's sys.argv is ["-c"]), and every _ks_ name
# leaves __main__ with the boot's own (python-boot.py, _ks_private).
import sys

_ks_paths = sys.argv[1:]
del sys.argv[1:]
if hasattr(sys, "orig_argv"):
    del sys.orig_argv[len(sys.orig_argv) - len(_ks_paths):]
try:
    with open(_ks_paths[1], "rb") as _ks_file:
        _ks_head, _ks_nl, _ks_code = _ks_file.read().partition(b"\n")
    # Bytecode is only good for the interpreter that made it (python-compile.py
    # wrote the same line).
    if _ks_head != repr((sys.hexversion, sys.version)).encode():
        raise ValueError("compiled by another interpreter")
    _ks_code = __import__("marshal").loads(_ks_code)
except Exception:
    with open(_ks_paths[0], encoding="utf-8") as _ks_file:
        _ks_code = compile(_ks_file.read(), "<string>", "exec", dont_inherit=True)
exec(_ks_code)
