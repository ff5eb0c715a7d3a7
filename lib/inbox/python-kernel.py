# The kernel driver: what a box's Python runs once its boot
# (lib/inbox/python-boot.py) got KERNEL. The boot carries this file's text
# (lib/init.js puts it there; it is never a file in the box), runs it in a
# namespace of its own and calls kernel(kit) with the interpreter socket's descriptor
# and the boot's framing of it (csrc/core/box/interp.h), its rich-result
# machinery and its helpers.
#
# Cells run in __main__'s namespace, so state persists from one to the
# next. Each cell's stdout and stderr are pipes of its own, passed with the
# CELL: fds 1 and 2 point at them while it runs, so raw writes and
# subprocesses go to that cell. Its tracebacks name File "<cell-N>", with
# source lines, and none of this file's frames.
#
# Shared mode: one interpreter runs every cell; the host interrupts a cell
# past its deadline with SIGINT (KeyboardInterrupt in the cell).
#
# Fork mode: each cell runs in a fork() of the current state (made ahead,
# between cells, and waiting for the next message); when the cell ends
# (even by an exception or SystemExit) its process is the new current state
# and its parent a checkpoint, waiting for it. A cell process that dies
# (killed at its deadline, a crash, os._exit(), the OOM killer) makes no
# state: its parent wakes, says so (ENDED) and is the current state again.
# ROLLBACK n ends the current state and the n-1 newest checkpoints, which
# wakes the one before them. Memory only: files and processes outside the
# interpreter are not rolled back.
import builtins
import os
import sys
import _signal
import _socket
import _struct
import resource

# interp.h
RECORD_MAX = 65536
CELL, ROLLBACK = 3, 4
DONE, READY, FORKED, ENDED = 18, 19, 20, 21
SHARED, FORK = 1, 2
RESULTS = 1
OK, EXCEPTION, EXIT, INTERRUPTED = 0, 1, 2, 3
RESULTS_DROPPED = 1
PAIR = _struct.Struct("=II")  # ks_ip_cell, ks_ip_ready, ks_ip_rollback
DONE_BODY = _struct.Struct("=iiIIQQQ")
ENDED_BODY = _struct.Struct("=iIQQQ")
# Fork after native threads is fork's known limit: a child has only the
# thread that forked, and a pool (OpenBLAS, OpenMP, MKL) whose threads it
# expects finds them gone, and can hang. With one thread each, numpy and
# friends start no pool: set before any cell can import them, and only
# where a cell's own settings do not say otherwise.
SINGLE_THREADED = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
# Fork mode: how long a state lets the host have the CPU before it makes its
# copy, unless the next message comes first (see settle).
SETTLE_MS = 2
# Fork mode's shared page: [OLDEST] the number of the oldest checkpoint kept,
# [HEAD] the pid of the process at the head of the line of states (the one
# that took the last cell: it runs it, or is the current state; 0 during a
# rollback), then the cell each process number took (see slot).
OLDEST, HEAD, SLOTS = 0, 1, 2
PR_SET_PDEATHSIG = 1
# What a fork-mode copy runs while it waits (see warm_up): no builtin in it.
WARM_UP = "x = [i * 2 for i in (1, 2, 3)]\n{'k': x[1], 'n': x}\n"


def kernel(kit):
    Kernel(kit).start()


def socket_channel(Channel, fd):
    """The boot's channel on the socket's own calls: a CELL brings its
    descriptors (SCM_RIGHTS), READY and FORKED send one."""

    class SocketChannel(Channel):
        def __init__(self):
            super().__init__(fd)
            self.sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET, 0, fd)

        def close(self):
            self.sock.close()

        def _record(self):
            rec, anc, _flags, _addr = self.sock.recvmsg(
                RECORD_MAX, _socket.CMSG_SPACE(16), _socket.MSG_CMSG_CLOEXEC)
            fds = []
            for level, kind, data in anc:
                if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                    fds.extend(memoryview(data)[:len(data) - len(data) % 4].cast("i"))
            return rec or None, fds

        def _write(self, rec, fds):
            if fds:
                anc = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _struct.pack("=%di" % len(fds), *fds))]
                self.sock.sendmsg([rec], anc, _socket.MSG_NOSIGNAL)
            else:
                self.sock.send(rec, _socket.MSG_NOSIGNAL)

    return SocketChannel()


class Kernel:
    def __init__(self, kit):
        self.channel = socket_channel(kit["Channel"], kit["fd"])
        self.results = kit["Results"](self.channel, hold=True)
        self.main = kit["main"]
        self.mode = kit["mode"]
        self.checkpoints = kit["checkpoints"]
        self.compile = kit["compile"]
        self.strip = kit["strip"]
        self.high_fd = kit["high_fd"]
        self.lazy = kit["lazy"]  # the interpreter's own modules, never the workspace's
        self.ours = (globals(), kit["boot"])
        self.armed = False  # user code runs: SIGINT may interrupt it
        # Never interrupted: this file's frames, and the boot's sending (a
        # message cut between records).
        Channel = kit["Channel"]
        self.uninterrupted = {Channel.send.__code__, Channel.send_quiet.__code__, Channel._write.__code__}
        self.pid = os.getpid()  # of the process that runs cells now
        # Fork mode: the checkpoints' pids, oldest first, and this process's
        # number in the line of states (a copy's is its parent's + 1).
        self.ancestors = []
        self.seq = 0
        self.slots = 0
        self.shared = None
        self.poller = None
        self.pidfd = -1
        self.stdout = self.stderr = -1

    def start(self):
        builtins.display = self.results.display
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.reconfigure(line_buffering=True)  # a cell's output streams live
            except Exception:
                pass
        # The kernel's own stdout and stderr, put back after each cell.
        self.stdout, self.stderr = self.high_fd(1), self.high_fd(2)
        _signal.signal(_signal.SIGINT, self.on_sigint)
        if self.mode == FORK:
            self.fork_start()
        else:
            self.shared_start()

    def on_sigint(self, signum, frame):
        # Only a cell is interrupted (its code, or the boot rendering its
        # results): between cells, or while this file or the boot's sending
        # is on top (framing, switching descriptors), a SIGINT is ignored;
        # the host kills a kernel that will not stop.
        if (self.armed and frame is not None and frame.f_globals is not self.ours[0]
                and frame.f_code not in self.uninterrupted):
            raise KeyboardInterrupt

    # ---- the channel
    def receive(self, line=()):
        """The next message. At EOF (the host closed the socket, or broke
        the protocol) the kernel ends: this process, and in fork mode the
        line of states it was taken for (line: their pids)."""
        try:
            msg = self.channel.recv()
        except (OSError, ValueError):
            msg = None
        if msg is None:
            for pid in line:
                kill(pid)
            os._exit(0)
        return msg

    def send(self, type_, id_, body=b"", fds=None):
        try:
            self.channel.send(type_, id_, body, fds)
        except OSError:
            os._exit(0)  # the host is gone

    # ---- shared mode
    def shared_start(self):
        pidfd = os.pidfd_open(os.getpid())  # the host's target for SIGINT
        self.send(READY, 0, PAIR.pack(SHARED, os.getpid()), [pidfd])
        os.close(pidfd)
        while True:
            type_, id_, body, fds = self.receive()
            if type_ == CELL and id_ >= 1:
                end, value, usage = self.cell(id_, body, fds)
                self.done(id_, end, value, 0, usage)
            else:
                self.close_all(fds)

    # ---- a cell
    def cell(self, id_, body, fds):
        """Runs one cell with its own stdout and stderr; returns how it
        ended, its value and its usage."""
        result_max, flags = PAIR.unpack_from(body)
        src = body[8:].decode("utf-8", "surrogateescape")
        rich = bool(flags & RESULTS)
        self.redirect(fds)
        before = rusage()
        self.results.start(id_, result_max, rich)
        end, value = self.execute("<cell-%d>" % id_, src, rich)
        self.stray(end, value)
        if rich and end != INTERRUPTED:
            self.results.figures()
        self.results.stop()
        # Its descriptors closed before its DONE: the host finds its pipes at
        # their end then, unless something the cell started holds them.
        self.restore()
        return end, value, usage_since(before)

    def execute(self, name, src, rich):
        # The cell's source, for its tracebacks' lines (and inspect).
        remember(name, src)
        try:
            if rich:
                code, tail = self.compile(src, name)
            else:
                code, tail = compile(src, name, "exec", dont_inherit=True), None
            self.run_user(code, tail)
        except SystemExit as e:
            self.armed = False
            return EXIT, self.exit_status(e.code)
        except KeyboardInterrupt as e:
            self.armed = False
            self.report(e)
            return INTERRUPTED, 1
        except BaseException as e:
            self.armed = False
            self.report(e)
            return EXCEPTION, 1
        return OK, 0

    def run_user(self, code, tail):
        try:
            self.armed = True
            if code is not None:
                exec(code, self.main)
            if tail is not None:
                self.results.show(eval(tail, self.main))
        finally:
            self.armed = False

    def stray(self, end, value):
        # A cell that forked and did not end its child: the child came out
        # of the cell here. It must not go on as a kernel (two readers of
        # the socket): it ends as a -c program would have.
        if os.getpid() != self.pid:
            flush()
            os._exit(value if end == EXIT else 0 if end == OK else 1)

    def exit_status(self, code):
        # As -c would exit: None 0, an int truncated to 8 bits, anything
        # else printed to stderr and 1.
        if code is None:
            return 0
        if isinstance(code, int):
            return code & 0xFF
        try:
            sys.stderr.write(str(code) + "\n")
        except BaseException:
            pass
        return 1

    def report(self, e):
        tb = e.__traceback__ = self.strip(e.__traceback__, self.ours)
        sys.last_type, sys.last_value, sys.last_traceback = type(e), e, tb
        if hasattr(sys, "last_exc"):
            sys.last_exc = e
        try:
            sources()  # the cells' lines, for the traceback to show
            hook = sys.excepthook
            if hook is sys.__excepthook__:
                # Before 3.13 the built-in hook reads source lines from
                # files alone; traceback's reads linecache: the cell's.
                import traceback

                traceback.print_exception(type(e), e, tb)
            else:
                hook(type(e), e, tb)
        except BaseException:
            pass

    def redirect(self, fds):
        flush()
        if len(fds) >= 2:
            os.dup2(fds[0], 1)
            os.dup2(fds[1], 2)
        self.close_all(fds)

    def restore(self):
        flush()
        os.dup2(self.stdout, 1)
        os.dup2(self.stderr, 2)

    def done(self, id_, end, value, depth, usage):
        self.results.flush()  # the results held back, right before DONE
        flags = RESULTS_DROPPED if self.results.dropped else 0
        self.send(DONE, id_, DONE_BODY.pack(end, value, depth, flags, *usage))

    @staticmethod
    def close_all(fds):
        for fd in fds:
            os.close(fd)

    # ---- fork mode
    def fork_start(self):
        for name in SINGLE_THREADED:
            os.environ.setdefault(name, "1")
        # A page every state shares (OLDEST, HEAD, then the slots): the
        # number of the oldest checkpoint kept (those before it were
        # dropped, by whichever state), the head of the line, then by a
        # process's number the cell it took (0: none), for its parent's
        # ENDED. The live line is at most checkpoints + 2 long, so numbers
        # modulo its size never meet.
        self.poller = self.lazy("select").poll()
        self.poller.register(self.channel.fd, 1)  # POLLIN (and HUP at EOF)
        self.slots = min(self.checkpoints, 1 << 16) + 3
        self.shared = memoryview(self.lazy("mmap").mmap(-1, 8 * (SLOTS + self.slots))).cast("q")
        self.prctl = self.lazy("ctypes").CDLL(None, use_errno=True).prctl
        # The process that got KERNEL stays the box's workload (the init
        # ends the box when it exits) until every state is gone: each holds
        # the write end of this pipe, close-on-exec so that no subprocess of
        # a cell keeps it.
        life_r, life_w = os.pipe()
        _signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)  # reaps the first state
        flush()
        if os.fork() == 0:
            _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
            os.close(life_r)
            self.pid = os.getpid()
            self.send(READY, 0, PAIR.pack(FORK, self.pid))
            self.serve()
        os.close(life_w)
        self.channel.close()
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        while os.read(life_r, 512):
            pass
        os._exit(0)

    def serve(self):
        """The current state: it keeps a copy of itself waiting for the next
        message (forked between cells, off the next cell's path), and waits
        for that copy. The copy runs a cell and becomes the current state
        (this one a checkpoint, still waiting), or dies, leaving this one
        current again."""
        while True:
            self.settle()
            self.shared[self.slot(self.seq + 1)] = 0
            parent = os.getpid()
            flush()
            pid = os.fork()
            if pid == 0:
                self.copy(parent)  # returns as the current state
            else:
                self.wait(pid)

    def settle(self):
        # A fork and its warm-up take ~1 ms of CPU: right after a DONE or
        # an ENDED they would take it from the host handling that message
        # (measured: 2.4 ms round trips instead of 1.0 on 2 CPUs). So the
        # copy is made once the next message is there, or the host has had
        # SETTLE_MS to itself; this process never reads the socket here.
        self.poller.poll(SETTLE_MS)

    def slot(self, seq):
        return SLOTS + seq % self.slots

    def copy(self, parent):
        # Until it takes a cell, a copy is only its parent's spare: it dies
        # with it (a current state killed from outside must not leave its
        # copy reading the socket beside the state that takes over).
        self.prctl(PR_SET_PDEATHSIG, _signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(0)
        self.seq += 1
        self.pid = os.getpid()
        self.pidfd = os.pidfd_open(self.pid)  # FORKED's, the host's target for a kill
        if not self.poller.poll(0):  # with a cell waiting, a warm-up would only delay it
            self.warm_up()
        while True:
            type_, id_, body, fds = self.receive(self.ancestors + [parent])
            if type_ == CELL and id_ >= 1:
                self.forked_cell(id_, body, fds, parent)
                return
            if type_ == ROLLBACK and len(body) >= 8:
                self.rollback(PAIR.unpack_from(body)[0], parent)
            self.close_all(fds)

    def warm_up(self):
        # A fork shares its pages with its parent until it writes them, and
        # then copies each on its first write (~0.5 ms of faults for a small
        # cell, measured): while it waits, the copy takes those of a cell's
        # own path (the compiler's, the interpreter's, a result's, the
        # rusage's), off the next cell's time. Nothing of the user's is
        # touched, and no builtin called (a cell may have replaced some).
        try:
            code, tail = self.compile(WARM_UP, "<warm-up>")
            scope = {}
            exec(code, scope)
            eval(tail, scope)
            self.results.bundle(rusage())
        except Exception:
            pass

    def forked_cell(self, id_, body, fds, parent):
        # Named first: if this process dies from here on, its parent's ENDED
        # says which cell it was running.
        self.shared[self.slot(self.seq)] = id_
        self.shared[HEAD] = self.pid
        # A state outlives its parent, which may be dropped as the oldest
        # checkpoint.
        self.prctl(PR_SET_PDEATHSIG, 0)
        self.send(FORKED, id_, b"", [self.pidfd])
        os.close(self.pidfd)
        self.pidfd = -1
        end, value, usage = self.cell(id_, body, fds)
        self.ancestors.append(parent)
        self.trim()
        self.done(id_, end, value, len(self.ancestors), usage)

    def trim(self):
        # Checkpoints past the limit go, oldest first. Their children are
        # the init's to reap then.
        while len(self.ancestors) > self.checkpoints:
            kill(self.ancestors.pop(0))
        self.shared[OLDEST] = max(self.shared[OLDEST], self.seq - len(self.ancestors))

    def wait(self, pid):
        # Until the copy dies: at once if its cell crashed or was killed,
        # or much later, as a state, at a rollback. A copy that took no cell
        # (killed while it waited) changed nothing: it is simply replaced.
        try:
            _, status, ru = os.wait4(pid, 0)
            usage = micros(ru.ru_utime), micros(ru.ru_stime), ru.ru_maxrss
        except ChildProcessError:
            # A cell set SIGCHLD to SIG_IGN: the copy was reaped on its own
            # (wait4 still returned once it had died), how is not known.
            status, usage = 0, (0, 0, 0)
        if not self.heads_line(pid):
            # A process of a line that goes on without it died (a checkpoint
            # the OOM killer took, say): this state is no longer in the
            # line, and must not become a second reader of the socket.
            os._exit(0)
        id_ = self.shared[self.slot(self.seq + 1)]
        if id_:
            self.resync()
            self.send(ENDED, id_, ENDED_BODY.pack(status, len(self.ancestors), *usage))

    def heads_line(self, child):
        """Whether this state is to be the current one now that child died:
        the head of the line was this state, the child, or is gone (or a
        rollback is ending the states after this one)."""
        head = self.shared[HEAD]
        if head in (0, child, os.getpid()):
            return True
        try:
            os.kill(head, 0)
        except ProcessLookupError:
            return True
        return False

    def resync(self):
        # The states that ran after this one may have dropped some of its
        # checkpoints (the oldest): those are not ours to count or kill.
        dropped = self.shared[OLDEST] - (self.seq - len(self.ancestors))
        if dropped > 0:
            del self.ancestors[:dropped]

    def rollback(self, n, current):
        """Ends the current state (this copy's parent) and its n-1 newest
        checkpoints, the oldest of them first: only the state before them
        wakes (every other's parent is dead by then) and sends ENDED."""
        # The host sends 1 <= n <= depth; anything else is left alone.
        if not 1 <= n <= len(self.ancestors):
            return
        self.shared[HEAD] = 0  # the state that wakes takes over
        for pid in self.ancestors[len(self.ancestors) - (n - 1):] + [current]:
            kill(pid)
        os._exit(0)


# The cells' sources by name, for linecache (tracebacks' source lines,
# inspect): linecache (with tokenize and re, ~7 ms of imports) is loaded only
# once something needs it, a traceback to print or a cell's own import; until
# then the sources wait here.
PENDING = {}


def remember(name, src):
    entry = (len(src), None, src.splitlines(True), name)
    linecache = sys.modules.get("linecache")
    if linecache is None:
        PENDING[name] = entry
        return
    if PENDING:
        sources()
    linecache.cache[name] = entry


def sources():
    """linecache, loaded, with every cell's source in it."""
    import linecache

    linecache.cache.update(PENDING)
    PENDING.clear()
    return linecache


def flush():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:
            pass


def kill(pid):
    try:
        os.kill(pid, _signal.SIGKILL)
    except ProcessLookupError:
        pass


def micros(seconds):
    return round(seconds * 1e6)


def rusage():
    return resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)


def usage_since(before):
    """The cell's CPU (its own and its children's) in microseconds, and the
    process's peak RSS."""
    (s0, c0), (s1, c1) = before, rusage()
    return (micros(s1.ru_utime - s0.ru_utime + c1.ru_utime - c0.ru_utime),
            micros(s1.ru_stime - s0.ru_stime + c1.ru_stime - c0.ru_stime), s1.ru_maxrss)
