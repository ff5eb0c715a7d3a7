# The Python side of a box started with `ks-init --interp`, run as
# `python3 -c <this file>`: the interpreter boots ahead of the call, then
# takes its work from the interpreter socket on fd 3 (csrc/core/box/interp.h,
# whose records this file reads and writes):
#   RUN     the call's code, run exactly as `python3 -c CODE` would run it:
#           sys.argv == ["-c"], sys.path[0] == "", __name__ "__main__", no
#           __file__, tracebacks naming File "<string>" with only the code's
#           own frames, SystemExit, atexit and output flushing as at exit;
#           plus, when asked, rich results (display(), the value of a
#           trailing expression, open matplotlib figures) sent as RESULTs.
#   KERNEL  this process becomes a kernel: the kernel driver
#           (lib/inbox/python-kernel.py, whose text the host put in this
#           file as _KS_KERNEL_SOURCE) runs, handed what it needs from here.
# Nothing of this file stays visible to the code: no name in __main__ (the
# functions below move to a namespace of their own before anything runs, so
# a name the code rebinds, say `str = ""`, cannot change them either), no
# frame in a traceback, fd 3 closed, sys.orig_argv naming the code, and
# nothing printed on stdout or stderr but what the code itself prints.
import gc
import os
import sys

_KS_INTERP_FD = 3  # KS_INIT_INTERP_FD
_KS_MAGIC = 0x3149534B
_KS_RECORD_MAX = 65536
_KS_BODY_MAX = _KS_RECORD_MAX - 16
_KS_MORE = 1
_KS_RUN, _KS_KERNEL = 1, 2
_KS_TAKEN, _KS_RESULT, _KS_DONE = 16, 17, 18
_KS_RESULTS = 1  # ks_ip_run.flags
_KS_OK, _KS_EXCEPTION, _KS_EXIT, _KS_INTERRUPTED = 0, 1, 2, 3
_KS_RESULTS_DROPPED = 1  # ks_ip_done.flags
_KS_FINAL = 2  # ks_ip_done.flags: nothing follows but this exit (KS_IP_DONE_FINAL)
_KS_PYCF_ONLY_AST = 0x400  # _ast.PyCF_ONLY_AST, without importing _ast to name it
_KS_FUTURE = 0x1FE0000  # the CO_FUTURE_* flags a code object passes on
# python-rich.py's text, set by the host (lib/init.js) when it makes this
# file the -c argument: compiled only once a call has a result to render
# (a constant costs the start-up nothing; the code would cost ~2 ms).
_KS_RICH_SOURCE = None
# python-kernel.py's text likewise: compiled while a box waits (a prewarmed
# box can become a kernel in a millisecond), or at KERNEL.
_KS_KERNEL_SOURCE = None
# eval()'s value before it has one (no object the code can reach).
_KS_NOTHING = object()
# Modules imported only once a result needs them (their imports cost 0.3-9 ms).
_KS_LAZY = {}
# What the boot compiled ahead (the kernel driver's code).
_KS_STATE = {}


def _ks_lazy(name, hidden=False):
    """The interpreter's own module name, imported once, never a module of
    the code's directory: sys.path[0] ('', the workspace) is left out while
    it loads, so a workspace's json.py or resource.py runs only where
    `python3 -c` would run it (the code imports it). hidden: out of
    sys.modules afterwards (a single module, loaded while a box waits)."""
    module = _KS_LAZY.get(name)
    if module is None:
        path = sys.path[:]
        if path[:1] == [""]:
            del sys.path[0]
        try:
            module = _KS_LAZY[name] = __import__(name)
        finally:
            sys.path[:] = path
        if hidden:
            del sys.modules[name]
    return module


class _KsChannel:
    """This end of the interpreter socket, read and written as a file: a RUN
    passes no descriptors, and the `_socket` module costs 0.1-0.5 ms to
    import (loaded only to send without SIGPIPE once the code has stopped
    ignoring it). The kernel driver's channel, which passes descriptors, is
    this one with _record and _write on sendmsg and recvmsg."""

    def __init__(self, fd):
        self.fd = fd
        self.sock = None
        self.pending = None  # a record read ahead

    def recv(self):
        """The next message as (type, id, body, fds), or None at EOF. Raises
        ValueError on a record that is not the protocol."""
        rec, fds = self._record()
        if rec is None:
            return None
        type_, flags, id_, body = _ks_parse(rec)
        parts = [body]
        while flags & _KS_MORE:
            rec, extra = self._record()
            for fd in extra:
                os.close(fd)
            if rec is None:
                return None
            more = _ks_parse(rec)
            if more[0] != type_ or more[2] != id_:
                raise ValueError("interleaved message")
            flags = more[1]
            parts.append(more[3])
        return type_, id_, parts[0] if len(parts) == 1 else b"".join(parts), fds

    def _record(self):
        rec, self.pending = self.pending, None
        if rec is None:
            rec = os.read(self.fd, _KS_RECORD_MAX)
        return rec or None, ()

    def ready(self):
        """Whether a record is there already (read ahead, without waiting)."""
        os.set_blocking(self.fd, False)
        try:
            self.pending = os.read(self.fd, _KS_RECORD_MAX)
        except BlockingIOError:
            pass
        finally:
            os.set_blocking(self.fd, True)
        return self.pending is not None

    def send(self, type_, id_, body=b"", fds=None):
        """Sends one message, in records of at most KS_IP_RECORD_MAX bytes;
        fds ride on the first. Raises OSError when the host is gone."""
        total, off = len(body), 0
        while True:
            chunk = body[off:off + _KS_BODY_MAX]
            off += len(chunk)
            more = _KS_MORE if off < total else 0
            self._write(_KS_HEADER.pack(_KS_MAGIC, type_, more, id_, len(chunk)) + chunk, fds)
            fds = None
            if not more:
                return

    def send_quiet(self, type_, id_, body=b""):
        """send() for a RUN: a host that is gone changes nothing the code does."""
        try:
            self.send(type_, id_, body)
        except OSError:
            pass

    def _write(self, rec, _fds):
        if self.sock is None and _ks_sigpipe_ignored():
            os.write(self.fd, rec)  # one write, one record (SOCK_SEQPACKET)
            return
        if self.sock is None:
            _socket = _ks_lazy("_socket")
            self.sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET, 0, self.fd)
        self.sock.send(rec, _KS_LAZY["_socket"].MSG_NOSIGNAL)


def _ks_sigpipe_ignored():
    # Python ignores SIGPIPE from start-up on; code that restores the default
    # (as command-line tools do) must not die of a host that went away.
    _signal = _KS_LAZY["_signal"]
    return _signal.getsignal(_signal.SIGPIPE) == _signal.SIG_IGN


def _ks_parse(rec):
    if len(rec) < 16:
        raise ValueError("short record")
    magic, type_, flags, id_, n = _KS_HEADER.unpack_from(rec)
    if magic != _KS_MAGIC or n != len(rec) - 16:
        raise ValueError("bad record")
    return type_, flags, id_, rec[16:]


def _ks_compile(src, filename, text=False):
    """(code, tail): src compiled to run with exec (None: nothing to run
    before the tail), and its trailing expression statement (if any)
    compiled alone, to eval after it for the value a notebook shows (None
    without one). text: code may come back as its text, or as the texts
    of its parts, which exec() and eval() then compile as they run them
    (see _ks_one_line, _ks_ends_in_statement and _ks_split_text). src is
    compiled whole first: the SyntaxErrors and
    warnings are exactly those compiling src gives, once. Then, when its
    last top-level line starts an expression, src is split there (the
    parts' warnings are the whole's, already shown: off), with the lines
    and columns it had; else the tree decides (the AST's first use costs
    ~0.6 ms, once a process). A module that is only a docstring is left as
    it is (it sets __doc__). Code of one top-level line, what a notebook
    cell often is, takes one compile where it can (see _ks_one_line)."""
    lines = src.splitlines(True)
    k = _ks_last_line(lines)
    if k == 0:
        made = _ks_one_line(src, lines[0], filename, text)
        if made is not None:
            return made
    elif text and (k < 0 or _ks_ends_in_statement(lines, k)):
        return src, None  # no value to show: the code as -c runs it
    elif text:
        made = _ks_split_text(src, lines, k)
        if made is not None:
            return made
    whole = compile(src, filename, "exec", dont_inherit=True)
    quiet = _ks_warnings("ignore")
    try:
        return (_ks_split(lines, k, filename, whole) or
                _ks_compile_ast(src, filename, whole))
    finally:
        _ks_warnings_undo(quiet)


def _ks_last_line(lines):
    # The last line at column 0 that is code: where the last top-level
    # statement starts, unless it continues an earlier one. -1: none.
    k = len(lines) - 1
    while k >= 0 and (not lines[k].strip() or lines[k].lstrip().startswith("#") or
                      lines[k][0] in " \t\f"):
        k -= 1
    return k


def _ks_one_line(src, line, filename, text):
    """Code whose only top-level line is its first (nothing before it for
    that line to continue), in one compile: a line that starts with a
    statement's keyword, or assigns to a name, is a statement (no value);
    otherwise src is compiled as an expression with every warning an error,
    and if that compiles, src is an expression that compiles without a
    warning (its own code: nothing to run before it). None: decide as for
    any code.

    text (a cold box, filename "<string>"): no compile() at all. The first
    compile() of a process builds the AST's Python types (PyAST_Check, ~0.6
    ms here), which `python3 -c` never does; exec() and eval() of a str
    compile as -c does (filename "<string>", nothing inherited) without
    them. A statement comes back as its text, for exec(); an expression is
    checked by the parser alone (_symtable, every warning an error) and
    comes back as its text, for eval() (see _ks_boot for its compile
    errors, which only the compiler finds)."""
    if _ks_string_first(line) or ";" in line:
        return None  # a docstring (it sets __doc__), or several statements
    if _ks_starts_statement(line):
        return (src if text else compile(src, filename, "exec", dont_inherit=True)), None
    strict = _ks_warnings("error")
    try:
        if text:
            _ks_lazy("_symtable", hidden=True).symtable(src, filename, "eval")
            return None, src
        return None, compile(src, filename, "eval", dont_inherit=True)
    except Exception:
        return None  # not an expression, or one with warnings: the long way
    finally:
        _ks_warnings_undo(strict)


def _ks_starts_statement(line):
    # A statement's keyword, a decorator, or an assignment to a name: a
    # statement, which has no value (soft keywords such as match and type
    # can start an expression too: not these).
    word = line.split(None, 1)[0].split("(", 1)[0].rstrip(":")
    return word in _KS_STATEMENT_WORDS or word[:1] == "@" or _ks_assigns(line)


def _ks_ends_in_statement(lines, k):
    """Whether the last top-level statement starts at line k (column 0) and
    is no expression, decided without compile() (text, a cold box): the
    line starts a statement (_ks_starts_statement), and the code before it
    and the code from it each parse alone, which a line that continues an
    earlier statement never lets both do (the code before it is then left
    inside brackets or a string, or after a backslash; and an else:,
    except: or finally: does not parse alone). Parsed only, by _symtable,
    with every warning off: exec() of the whole shows them, once."""
    line = lines[k]
    if _ks_string_first(line) or ";" in line or not _ks_starts_statement(line):
        return False
    quiet = _ks_warnings("ignore")
    try:
        symtable = _ks_lazy("_symtable", hidden=True).symtable
        symtable("".join(lines[:k]), "<string>", "exec")
        symtable("".join(lines[k:]), "<string>", "exec")
        return True
    except Exception:
        return False
    finally:
        _ks_warnings_undo(quiet)


def _ks_split_text(src, lines, k):
    """(head, tail) as texts, for exec() then eval(), decided without
    compile() (text, a cold box): code whose last top-level statement, from
    line k, is an expression that compiles with no error or warning, after
    code that parses alone. The expression is compiled where it stands,
    in dead code (`if 0:` at its line, in a module of its own: the
    compiler's errors and warnings, which the parser's check cannot see,
    come from dead code too, Python 3.8-3.13), every warning an error; so
    nothing of it can fail or warn once the head has run. exec() of the
    head compiles it as -c compiled it: its warnings once, its errors before
    any of it runs. None: compile as before (a __future__ import, whose
    flags the parts would not share, among the reasons)."""
    line = lines[k]
    if "__future__" in src or _ks_string_first(line) or ";" in line:
        return None
    head, tail = "".join(lines[:k]), "".join(lines[k:])
    strict = _ks_warnings("error")
    try:
        symtable = _ks_lazy("_symtable", hidden=True).symtable
        symtable(head, "<string>", "exec")
        symtable(tail, "<string>", "eval")
        exec("\n" * k + "if 0: " + tail, {"__builtins__": __builtins__})
    except Exception:
        return None
    finally:
        _ks_warnings_undo(strict)
    return head, "\n" * k + tail


def _ks_string_first(line):
    # A line that starts with a string (r"", u"" too): perhaps a docstring,
    # which the tree tells.
    return line.lstrip("rRuU")[:1] in ("\"", "'")


# The keywords that start a statement and never an expression (soft keywords
# such as match and type can start either).
_KS_STATEMENT_WORDS = frozenset((
    "pass", "import", "from", "def", "class", "if", "elif", "else", "for", "while", "with",
    "try", "except", "finally", "return", "raise", "del", "global", "nonlocal", "assert",
    "break", "continue", "async"))


def _ks_assigns(line):
    # name = ..., name += ... (not ==): an assignment statement.
    i, n = 0, len(line)
    while i < n and (line[i].isalnum() or line[i] == "_" or ord(line[i]) > 127):
        i += 1
    if i == 0 or line[0].isdigit():
        return False
    while i < n and line[i] in " \t":
        i += 1
    for op in ("=", "+=", "-=", "*=", "/=", "//=", "%=", "@=", "&=", "|=", "^=", ">>=", "<<=", "**="):
        if line.startswith(op, i):
            return not line.startswith("==", i)
    return False


def _ks_split(lines, k, filename, whole):
    # Split at line k, unless its statement continues an earlier one (then
    # the head alone does not compile, and the tree decides).
    if k < 0 or _ks_string_first(lines[k]) or ";" in lines[k]:
        return None  # a docstring, a string, or a line of several statements
    head, tail = "".join(lines[:k]), "".join(lines[k:])
    try:
        value = compile("\n" * k + tail, filename, "eval", whole.co_flags & _KS_FUTURE,
                        dont_inherit=True)
    except SyntaxError:
        try:
            compile(tail, filename, "exec", dont_inherit=True)
        except SyntaxError:
            return None  # not a statement of its own: the tree knows
        return whole, None  # a statement, not an expression: no value
    try:
        return compile(head, filename, "exec", dont_inherit=True), value
    except SyntaxError:
        return None


def _ks_dash_c_code(src):
    """src compiled as python3 -c compiles it, once eval() of it failed to
    compile: that raises the SyntaxError -c gives (eval's said it of an
    expression). Its warnings were shown then, once: off now."""
    quiet = _ks_warnings("ignore")
    try:
        return compile(src, "<string>", "exec", dont_inherit=True)
    finally:
        _ks_warnings_undo(quiet)


def _ks_compile_ast(src, filename, whole):
    _ast = _ks_lazy("_ast")
    tree = compile(src, filename, "exec", _KS_PYCF_ONLY_AST, dont_inherit=True)
    body = tree.body
    if not body or type(body[-1]) is not _ast.Expr or _ks_docstring_only(body, _ast):
        return whole, None
    last = tree.body.pop()
    value = _ast.Expression(last.value)
    return (compile(tree, filename, "exec", dont_inherit=True),
            compile(value, filename, "eval", whole.co_flags & _KS_FUTURE, dont_inherit=True))


def _ks_warnings(action):
    """Every warning handled by action ("ignore", "error") until
    _ks_warnings_undo(what this returns): through _warnings' own filter
    list, which the warnings module shares (importing it costs ~0.7 ms)."""
    _warnings = _ks_lazy("_warnings")
    entry = (action, None, Warning, None, 0)
    _warnings.filters.insert(0, entry)
    _warnings._filters_mutated()
    return _warnings, entry


def _ks_warnings_undo(pushed):
    _warnings, entry = pushed
    try:
        _warnings.filters.remove(entry)
    except ValueError:
        pass
    _warnings._filters_mutated()


def _ks_docstring_only(body, _ast):
    value = body[0].value if len(body) == 1 else None
    return type(value) is _ast.Constant and type(value.value) is str


def _ks_strip(tb, ours):
    """The traceback without the frames of the namespaces in ours: those
    before the code's first frame (the function that ran it) and after its
    last (a signal handler that raised KeyboardInterrupt)."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    theirs = [t for t in entries if not any(t.tb_frame.f_globals is g for g in ours)]
    if not theirs:
        return None
    if theirs[-1] is not entries[-1]:
        theirs[-1].tb_next = None
    return theirs[0]


def _ks_high_fd(fd):
    """A close-on-exec copy of fd at 100 or above, out of the way of the
    descriptors code opens itself: F_DUPFD_CLOEXEC without fcntl (an
    extension module to load on some builds). Only while one thread runs."""
    new = 100
    while True:
        try:
            os.fstat(new)
        except OSError:
            break
        new += 1
    os.dup2(fd, new, inheritable=False)
    return new


def _ks_warm_up():
    # Fault in the parser and compiler now: the first compile() in a box
    # costs ~1 ms of page faults, which would otherwise land on the call;
    # the AST's types too (what a call with results parses first).
    compile("def f(a, *b, k=1, **c):\n    return [x for x in a if x] if b else {k: c}\n"
            "class C(object):\n    x: int = 1\n", "<boot>", "exec", dont_inherit=True)
    compile("f(x)[1]\n", "<boot>", "exec", _KS_PYCF_ONLY_AST, dont_inherit=True)
    # And settle the boot's own garbage now, so that the collection at exit
    # looks at what the code made alone.
    gc.collect()


def _ks_boot():
    # The code runs in this frame, which the module's own calls: as deep in
    # the stack as the old boot ran it (RecursionError comes where it did).
    main = sys.modules["__main__"].__dict__
    channel, src, results, lines, cold = _ks_take(main)
    # What the start-up and the boot made goes to the oldest generation
    # (freeze then unfreeze: two list splices, no traversal), so that the
    # young collection at the end looks at the code's objects alone. A cold
    # box has not collected since its start: that collection walked the
    # start-up's objects, 0.3-0.6 ms in a box here.
    gc.freeze()
    gc.unfreeze()
    # Whether anything the code allocates reaches the oldest generation.
    oldest = (gc.get_count()[2], gc.get_stats()[2]["collections"])
    try:
        if results is None:
            compiled, tail = compile(src, "<string>", "exec", dont_inherit=True), None
        else:
            # (Python 3.13's linecache wants the source registered between
            # compile and run: code objects, then.)
            compiled, tail = _ks_compile(src, "<string>", cold and not lines)
        if lines:
            _ks_lines(src)
        if compiled is not None:
            exec(compiled, main)
        if tail is not None:
            value = _KS_NOTHING
            try:
                value = eval(tail, main)
            except SyntaxError as e:
                # An expression's text that did not compile (the compiler's
                # own errors, which the parser let through) raises here with
                # no frame of the code's; one the code raised has its frames.
                if type(tail) is not str or e.__traceback__.tb_next is not None:
                    raise
            if value is _KS_NOTHING:
                exec(_ks_dash_c_code(tail), main)  # raises -c's SyntaxError
            else:
                results.show(value)
        end, code = _KS_OK, None
    except SystemExit as e:
        end, code = _KS_EXIT, e.code
    except BaseException as e:
        end, code = _ks_uncaught(e), 1
    if results is not None and end != _KS_INTERRUPTED:
        results.figures()
    _ks_exit(main, end, code, oldest,
             lambda status, final: _ks_done(channel, results, end, status, final))


def _ks_take(main):
    """Boots, then waits for the first message. Returns the code of a RUN,
    with the channel, the results to collect (None: results off), whether
    its lines go to linecache, and whether the box is cold (its call came
    with its start: nothing was warmed up); a KERNEL never returns."""
    fd = _ks_high_fd(_KS_INTERP_FD)
    os.close(_KS_INTERP_FD)
    _KS_LAZY["_signal"] = __import__("_signal")
    channel = _KsChannel(fd)
    # The warm-up moves costs off the call's path while a box waits for it;
    # on a cold box, whose call came with its start, it would only delay it.
    cold = channel.ready()
    if not cold:
        _ks_warm_up()
        # Compiled while the box waits, not on a call's path.
        _ks_results_class()
        _ks_kernel_code()
        # The final DONE's usage (see _ks_done); kept here, not in
        # sys.modules, where `python3 -c` would not have it.
        try:
            _ks_lazy("resource", hidden=True)
        except ImportError:
            pass
    try:
        msg = channel.recv()
    except (OSError, ValueError):
        os._exit(1)  # not the protocol: nothing to run, nothing to print
    if msg is None:
        os._exit(0)  # the host went away before it sent anything
    type_, _id, body, fds = msg
    for extra in fds:
        os.close(extra)
    if type_ == _KS_KERNEL and len(body) >= 8:
        _ks_kernel(channel, main, body)
    if type_ != _KS_RUN or len(body) < 8:
        os._exit(1)
    result_max, flags = _KS_PAIR.unpack_from(body)
    # As the interpreter decodes a -c argument (UTF-8, surrogateescape).
    src = body[8:].decode("utf-8", "surrogateescape")
    channel.send_quiet(_KS_TAKEN, 0)
    results = None
    if flags & _KS_RESULTS:
        results = _KsRunResults(channel, result_max)
        __builtins__.display = results.display  # as in a notebook; not without results
    return channel, src, results, _ks_as_dash_c(src, cold), cold


def _ks_results_class():
    """python-rich.py's _KsResults, its text compiled into this namespace on
    first use."""
    if "_KsResults" not in _KS_OWN:
        exec(compile(_KS_RICH_SOURCE, "<ks-rich>", "exec", dont_inherit=True), _KS_OWN)
    return _KS_OWN["_KsResults"]


class _KsRunResults:
    """A RUN's results, rendered by python-rich.py only once there is
    something to render: print(1) never compiles it."""

    def __init__(self, channel, result_max):
        self.channel = channel
        self.result_max = result_max
        self.real = None

    def _get(self):
        if self.real is None:
            self.real = _ks_results_class()(self.channel)
            self.real.start(0, self.result_max, True)
        return self.real

    def display(self, *objs, **kw):
        """Shows each object as a rich result (Jupyter's display())."""
        if objs:
            self._get().display(*objs, **kw)

    def show(self, value):
        if value is not None:
            self._get().show(value)

    def figures(self):
        if "matplotlib.pyplot" in sys.modules:
            self._get().figures()

    @property
    def dropped(self):
        return self.real is not None and self.real.dropped


def _ks_as_dash_c(src, cold):
    """Makes the interpreter's state the one -c with src would have; returns
    whether the code's lines go to linecache once compiled."""
    if hasattr(sys, "orig_argv") and sys.orig_argv:
        sys.orig_argv[-1] = src
    # Python 3.13 keeps the -c source in linecache, for the lines its
    # tracebacks show (this file's, now), registered once compiled: the
    # compiler's warnings show none.
    linecache = sys.modules.get("linecache")
    lines = linecache is not None and linecache.cache.pop("<string>", None) is not None
    # Directory listings cached while a box waited must not hide files
    # written since (a module the host wrote into the workspace just before
    # the call). A cold box listed them after.
    for finder in [] if cold else list(sys.path_importer_cache.values()):
        invalidate = getattr(finder, "invalidate_caches", None)
        if invalidate is not None:
            invalidate()
    return lines


def _ks_lines(src):
    sys.modules["linecache"].cache["<string>"] = (
        len(src), None, [line + "\n" for line in src.splitlines()], "<string>")


def _ks_uncaught(e):
    """Prints e as -c does; returns how the code ended."""
    # Without this file's frames the traceback is the one -c prints (none
    # at all for a SyntaxError).
    tb = e.__traceback__ = _ks_strip(e.__traceback__, (_KS_OWN,))
    sys.last_type, sys.last_value, sys.last_traceback = type(e), e, tb
    if hasattr(sys, "last_exc"):
        sys.last_exc = e
    sys.excepthook(type(e), e, tb)
    # -c exits 1 after an uncaught exception, and dies of SIGINT after a
    # KeyboardInterrupt.
    return _KS_INTERRUPTED if isinstance(e, KeyboardInterrupt) else _KS_EXCEPTION


def _ks_done(channel, results, end, status, final):
    # A final DONE (final: nothing is left to run but os._exit(status)) is
    # where the host settles the call: the interpreter's exit (~1.2 ms of
    # unmapping here) is not the call's. Its usage is then the call's:
    # getrusage's, self and children, as the init would have reported.
    # (A DONE is the code's to forge: the host kills this process the
    # moment it settles on one, and the init kills what is left.)
    flags = _KS_RESULTS_DROPPED if results is not None and results.dropped else 0
    utime = stime = maxrss = 0
    if final and not _ks_alone():
        final = False  # what the code left runs on: the init kills it, then reports
    if final:
        flags |= _KS_FINAL
        try:
            resource = _ks_lazy("resource")
            me = resource.getrusage(resource.RUSAGE_SELF)
            kids = resource.getrusage(resource.RUSAGE_CHILDREN)
            utime = round((me.ru_utime + kids.ru_utime) * 1e6)
            stime = round((me.ru_stime + kids.ru_stime) * 1e6)
            maxrss = max(me.ru_maxrss, kids.ru_maxrss)
        except BaseException:
            flags &= ~_KS_FINAL  # no usage to give: the init reports it
    channel.send_quiet(_KS_DONE, 0, _KS_DONE_BODY.pack(
        end, status, 0, flags, utime, stime, maxrss))


def _ks_alone():
    """Whether nothing but the init and this process is left in the box:
    the call may settle before the init has killed what the code left (a
    daemon, a child never waited for) only when the code left nothing. As
    PID 1's child in the box's PID namespace, /proc lists the box alone;
    elsewhere (kern's test double: no namespace, the workload dies with the
    init's process group) there is no box to look at."""
    if os.getppid() != 1:
        return True
    try:
        names = os.listdir("/proc")
    except OSError:
        return False
    me = str(os.getpid())
    return all(n == "1" or n == me for n in names if n.isdigit())


def _ks_exit(main, end, code, oldest, done):
    # What Py_FinalizeEx does that a program can see, in its order, then
    # _exit: the interpreter's own teardown (~4 ms of freeing modules) is
    # the only part skipped. Anything unusual takes the interpreter's path.
    # done(status, final) sends DONE: last, but before any way out; final
    # when os._exit(status) is all that follows.
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
            done(1, False)
            raise SystemExit(code)  # the interpreter's own account of it
        status = 1
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()  # non-daemon threads first, as at exit
    import atexit

    atexit._run_exitfuncs()  # runs and forgets them: never twice
    _ks_clear(main, oldest)
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BaseException:
        done(status, False)
        raise SystemExit(status)  # the interpreter reports it and exits 120
    done(status, end != _KS_INTERRUPTED)
    if end == _KS_INTERRUPTED:
        _signal = _KS_LAZY["_signal"]
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
        os.kill(os.getpid(), _signal.SIGINT)
    os._exit(status)


def _ks_clear(main, oldest):
    # Module teardown: __main__'s names set to None (those with a single
    # leading underscore first, then all but __builtins__, as CPython's
    # _PyModule_ClearDict does), which closes and flushes what they held (an open()
    # never closed, objects with __del__), and a collection for the cycles
    # among them: of the young generations only, while nothing the code
    # made was promoted to the oldest (a full one costs ~0.3-2 ms and finds
    # nothing more then).
    for names in ([k for k in main if k[:1] == "_" and k[1:2] != "_"],
                  [k for k in main if k != "__builtins__"]):
        for k in names:
            main[k] = None
    young = (gc.get_count()[2], gc.get_stats()[2]["collections"]) == oldest
    gc.collect(1 if young else 2)


def _ks_kernel_code():
    code = _KS_STATE.get("kernel")
    if code is None:
        code = _KS_STATE["kernel"] = compile(_KS_KERNEL_SOURCE, "<ks-kernel>", "exec",
                                             dont_inherit=True)
    return code


def _ks_kernel(channel, main, body):
    """Becomes a kernel: runs the driver in a namespace of its own, with what
    it needs from here. It returns only by exiting."""
    mode, checkpoints = _KS_PAIR.unpack_from(body)
    driver = {"__builtins__": __builtins__, "__name__": "ks_kernel"}
    exec(_ks_kernel_code(), driver)
    driver["kernel"]({
        "fd": channel.fd, "Channel": _KsChannel, "Results": _ks_results_class(), "main": main,
        "mode": mode, "checkpoints": checkpoints, "compile": _ks_compile,
        "strip": _ks_strip, "high_fd": _ks_high_fd, "boot": _KS_OWN, "lazy": _ks_lazy,
    })
    os._exit(0)


def _ks_private():
    """Moves every name of this file out of __main__ into a namespace of its
    own, which the code cannot see or rebind; returns the boot from there."""
    main = globals()
    own = {"__builtins__": sys.modules["builtins"], "__name__": "ks_boot"}
    function = type(_ks_private)
    names = [k for k in main if k.startswith(("_ks_", "_KS_", "_Ks"))]
    for name in names:
        own[name] = _ks_rebind(main[name], own, function)
    for name in names:
        del main[name]
    for name in ("gc", "os", "sys"):
        own[name] = main.pop(name)
    own["_KS_OWN"] = own
    _struct = __import__("_struct")  # preloaded on most builds
    own["_KS_HEADER"] = _struct.Struct("=IHHII")
    own["_KS_PAIR"] = _struct.Struct("=II")  # ks_ip_run, ks_ip_kernel
    own["_KS_DONE_BODY"] = _struct.Struct("=iiIIQQQ")
    return own["_ks_boot"]


def _ks_rebind(value, own, function):
    # A function's globals are fixed when it is made: the same code, made
    # again with own as its globals. A class's methods likewise.
    if type(value) is function:
        made = function(value.__code__, own, value.__name__, value.__defaults__, value.__closure__)
        made.__kwdefaults__ = value.__kwdefaults__
        made.__doc__ = value.__doc__
        return made
    if isinstance(value, type):
        for name, attr in list(vars(value).items()):
            if type(attr) is function:
                setattr(value, name, _ks_rebind(attr, own, function))
    return value


_ks_private()()
