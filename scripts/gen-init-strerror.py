#!/usr/bin/env python3
"""Prints csrc/init/strerror-table.h: glibc's strerror() words for errno
0..133, as the in-box init without a libc (csrc/init/nolibc.c) needs them
to print kern's own messages word for word. Python's os.strerror() is the C
library's strerror(), so run this on a glibc host:

    python3 scripts/gen-init-strerror.py > csrc/init/strerror-table.h
"""
import os

print("/* glibc's strerror() words for errno 0..133, from scripts/gen-init-strerror.py")
print(" * (generated: do not edit). */")
print("static const char *const ks_strerror_table[] = {")
for n in range(134):
    print("    %s," % ('"' + os.strerror(n).replace("\\", "\\\\").replace('"', '\\"') + '"'))
print("};")
