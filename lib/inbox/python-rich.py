# The rich results of a box's Python (a RUN's, or a kernel cell's), as
# Jupyter's display data. Not a module: the boot (python-boot.py) carries
# this file's text, set by the host (lib/init.js), and runs it in its own
# private namespace the first time a call has something to render (an
# object displayed, a trailing expression's value, an open matplotlib
# figure), so a call that renders nothing never compiles it. Its names use
# the boot's (_ks_lazy, _KS_RESULT, sys, ...), and the boot's use its.


# The representations a bundle may carry besides text/plain, as Jupyter's.
_KS_REPRS = (("_repr_html_", "text/html"), ("_repr_markdown_", "text/markdown"),
             ("_repr_svg_", "image/svg+xml"), ("_repr_latex_", "text/latex"),
             ("_repr_json_", "application/json"), ("_repr_png_", "image/png"),
             ("_repr_jpeg_", "image/jpeg"))


class _KsResults:
    """Rich results, as Jupyter's display data: each a {MIME type: str}
    bundle sent at once as a RESULT of the current cell (id 0 for a RUN),
    within a budget of bytes for all of a cell's RESULT bodies. A result
    that does not fit is not sent at all, and the cell says so (DONE's
    KS_IP_RESULTS_DROPPED)."""

    # A kernel's results wait for the end of their cell (held), up to this
    # many bytes: then they go with its DONE, back to back, and the host
    # takes them in one wakeup instead of one for each (~30-50 us each).
    HELD_MAX = 256 << 10

    def __init__(self, channel, hold=False):
        self.channel = channel
        self.hold = hold
        self.held = []
        self.held_bytes = 0
        self.on = False
        self.id = 0
        self.left = 0
        self.dropped = False

    def start(self, id_, result_max, on):
        self.on, self.id, self.left, self.dropped = on, id_, result_max, False

    def stop(self):
        # A display() after its cell's DONE (from a thread) would be a
        # RESULT of a finished cell: it is dropped instead.
        self.on = False

    def flush(self):
        """Sends the results held back (a kernel's, before its cell's DONE)."""
        held, self.held, self.held_bytes = self.held, [], 0
        for body in held:
            self._send(body)

    def display(self, *objs, raw=False, **_ignored):
        """Shows each object as a rich result (Jupyter's display()): its
        text/plain repr, and whatever _repr_html_, _repr_png_, ... it has.
        raw=True: each object is already a {MIME type: str} dict. Jupyter's
        other keywords are accepted and ignored."""
        for obj in objs:
            if not self.on:
                return
            self.publish(_ks_raw_bundle(obj) if raw else _ks_bundle(obj))

    def bundle(self, obj):
        """obj's bundle as display() would send it (JSON bytes), unsent."""
        return _ks_json_object(_ks_bundle(obj))

    def show(self, value):
        # The value of a trailing expression, as Jupyter's Out[]: never None.
        if value is not None:
            self.display(value)

    def publish(self, data):
        if not data or not self.on:
            return
        body = _ks_json_object(data)
        if len(body) > self.left:
            self.dropped = True
            return
        self.left -= len(body)
        if self.hold and self.held_bytes + len(body) <= self.HELD_MAX:
            self.held.append(body)
            self.held_bytes += len(body)
            return
        self.flush()
        self._send(body)

    def _send(self, body):
        try:
            self.channel.send(_KS_RESULT, self.id, body)
        except OSError:
            pass  # the host is gone: the code goes on as if it were not

    def figures(self):
        """Every open matplotlib figure as a PNG result, then all closed: the
        charts a notebook shows at the end of a cell."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None or not self.on:
            return
        try:
            nums = list(plt.get_fignums())
        except Exception:
            return
        for num in nums:
            self._figure(plt, num)
        try:
            plt.close("all")
        except Exception:
            pass

    def _figure(self, plt, num):
        try:
            fig = plt.figure(num)
            buf = _ks_lazy("io").BytesIO()
            fig.savefig(buf, format="png")
            self.publish({"text/plain": _ks_text(fig), "image/png": _ks_base64(buf.getvalue())})
        except Exception:
            pass


def _ks_bundle(obj):
    data = {"text/plain": _ks_text(obj)}
    # A class has the _repr_ methods of its instances, unbound; an object
    # that answers every attribute (a mock, a proxy) has none of them.
    if isinstance(obj, type) or _ks_attr(obj, "_ks_no_such_repr_") is not None:
        return data
    for method, mime in _KS_REPRS:
        value = _ks_call_repr(obj, method)
        if value is not None:
            value = _ks_mime_value(mime, value)
            if value is not None:
                data[mime] = value
    return data


def _ks_text(obj):
    try:
        text = repr(obj)
        if type(text) is str:
            return text
    except Exception:
        pass
    return object.__repr__(obj)


def _ks_attr(obj, name):
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _ks_call_repr(obj, method):
    # A _repr_ method that raises is skipped; (data, metadata) means data.
    fn = _ks_attr(obj, method)
    if fn is None or not callable(fn):
        return None
    try:
        value = fn()
    except Exception:
        return None
    if type(value) is tuple and len(value) == 2:
        value = value[0]
    return value


def _ks_mime_value(mime, value):
    if mime == "application/json":
        try:
            return _ks_lazy("json").dumps(value)
        except Exception:
            return None
    return _ks_data(value)


def _ks_data(value):
    # A str as it is (images: already base64), bytes in base64.
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _ks_base64(value)
    return None


def _ks_raw_bundle(obj):
    # display(..., raw=True): a {MIME type: str or bytes} dict as it is.
    if not isinstance(obj, dict):
        return None
    data = {}
    for mime, value in obj.items():
        value = _ks_data(value) if isinstance(mime, str) else None
        if value is not None:
            data[mime] = value
    return data


def _ks_base64(data):
    return _ks_lazy("binascii").b2a_base64(data, newline=False).decode("ascii")


def _ks_json_object(data):
    """A {str: str} dict as UTF-8 JSON, by _json's C string encoder alone:
    the json package costs 1.5-9 ms to import, on the first result's path."""
    try:
        encode = _ks_lazy("_json").encode_basestring
    except ImportError:
        return _ks_lazy("json").dumps(data).encode("ascii")
    text = "{" + ",".join(encode(k) + ":" + encode(v) for k, v in data.items()) + "}"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: escaped, as json.dumps does
        encode = _KS_LAZY["_json"].encode_basestring_ascii
        return ("{" + ",".join(encode(k) + ":" + encode(v) for k, v in data.items()) + "}").encode()
