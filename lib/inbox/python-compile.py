# Compiles the boot for python-load.py, in a box of its own started by
# lib/bootcache.js as `python3 -I -S -c <this file> /.ks/boot.py`: isolated
# (no PYTHON* variable, no user site, no script directory on sys.path) and
# without site, so nothing but the image's interpreter and this file takes
# part. Prints one line naming the interpreter (python-load.py checks it)
# and the code object, marshalled, in hex.
import marshal
import sys

with open(sys.argv[1], encoding="utf-8") as source:
    code = compile(source.read(), "<string>", "exec", dont_inherit=True)
sys.stdout.write(repr((sys.hexversion, sys.version)) + "\n" + marshal.dumps(code).hex())
