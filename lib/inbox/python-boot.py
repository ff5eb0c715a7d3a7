# The bootstrap of a prewarmed Python box, run as `python3 -c <this file>`
# by ks-init --pre before any call: the interpreter boots ahead, then waits
# on fd 3 for the call's code, which then runs exactly as `python3 -c CODE`
# would run it: sys.argv == ["-c"], sys.path[0] == "", __name__ "__main__",
# no __file__, tracebacks naming File "<string>" with only the code's own
# frames, SystemExit, atexit and output flushing left to the interpreter.
# Nothing of this file stays visible to the code: no name in __main__, no
# frame in a traceback, fd 3 closed, sys.orig_argv naming the code.
def _ks_boot():
    import os
    import sys

    # Fault in the parser and compiler now: the first compile() in a box
    # costs ~1 ms of page faults, which would otherwise land on the call.
    compile("def f(a, *b, k=1, **c):\n    return [x for x in a if x] if b else {k: c}\n"
            "class C(object):\n    x: int = 1\n", "<boot>", "exec", dont_inherit=True)
    # And settle the boot's own garbage now, so that the collection at exit
    # looks at what the code made alone.
    import gc

    gc.collect()
    chunks = []
    while True:
        chunk = os.read(3, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(3)
    # As the interpreter decodes a -c argument (UTF-8, surrogateescape).
    src = b"".join(chunks).decode("utf-8", "surrogateescape")
    del chunks
    main = globals()
    del main["_ks_boot"]
    finish = main.pop("_ks_exit")
    if hasattr(sys, "orig_argv") and sys.orig_argv:
        sys.orig_argv[-1] = src
    # Directory listings cached while booting must not hide files written
    # since (a module the host wrote into the workspace just before the call).
    for finder in list(sys.path_importer_cache.values()):
        invalidate = getattr(finder, "invalidate_caches", None)
        if invalidate is not None:
            invalidate()
    # Whether anything the code allocates reaches the oldest generation.
    oldest = (gc.get_count()[2], gc.get_stats()[2]["collections"])
    try:
        exec(compile(src, "<string>", "exec", dont_inherit=True), main)
        code, interrupted = 0, False
    except SystemExit as e:
        code, interrupted = e.code, False
    except BaseException as e:
        # The first frame is this function's: without it the traceback is
        # the one -c prints (none at all for a SyntaxError).
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
        e.__traceback__ = tb
        sys.last_type, sys.last_value, sys.last_traceback = type(e), e, tb
        if hasattr(sys, "last_exc"):
            sys.last_exc = e
        sys.excepthook(type(e), e, tb)
        interrupted = isinstance(e, KeyboardInterrupt)
        del e, tb
        # -c exits 1 after an uncaught exception, and dies of SIGINT after
        # a KeyboardInterrupt.
        code = 1
    finish(main, code, interrupted, oldest)


def _ks_exit(main, code, interrupted, oldest):
    # What Py_FinalizeEx does that a program can see, in its order, then
    # _exit: the interpreter's own teardown (~4 ms of freeing modules) is
    # the only part skipped. Anything unusual takes the interpreter's path.
    import os
    import sys

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code & 0xFF  # as exit(3) truncates it
    else:
        # sys.exit("msg"): printed before the atexit handlers run, exit 1.
        try:
            sys.stderr.write(str(code))
            sys.stderr.write("\n")
        except BaseException:
            raise SystemExit(code)  # the interpreter's own account of it
        status = 1
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # non-daemon threads first, as at exit
    import atexit

    atexit._run_exitfuncs()  # runs and forgets them: never twice
    # Then module teardown: __main__'s names set to None (underscored ones
    # first, as CPython does), which closes and flushes what they held (an
    # open() never closed, objects with __del__), and a collection for the
    # cycles among them: of the young generations only, while nothing the
    # code made was promoted to the oldest (a full one costs ~0.3-2 ms and
    # finds nothing more then).
    for names in ([k for k in main if k.startswith("_") and k != "__builtins__"],
                  [k for k in main if not k.startswith("_")]):
        for k in names:
            main[k] = None
    import gc

    young = (gc.get_count()[2], gc.get_stats()[2]["collections"]) == oldest
    gc.collect(1 if young else 2)
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BaseException:
        raise SystemExit(status)  # the interpreter reports it and exits 120
    if interrupted:
        import signal

        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status)


_ks_boot()
