#!/usr/bin/env python3
"""Regenerates the seed corpora under fuzz/corpus/ (and nothing else).

usage: python3 fuzz/make-seeds.py [TARGET...]     (default: every target)

Deterministic: fixed names, modes, owners and times, gzip mtime 0, level 9.
(The gzip bytes depend on the zlib Python links; with the same zlib, the
same files.) Every file in fuzz/corpus/<target>/ is rewritten: stale seeds
are removed first.

Valid archives come from Python's tarfile; hostile ones from a raw USTAR
header writer below, so each field is exactly what the case needs. The
hostile classes are those of /work/shared/SECURITY-CASES.md A1-A13 (the
file name starts with the case id).

fuzz_restore seeds that start with the gzip magic (1f 8b) reach the gzip
layer as they are; any other seed is plain tar, which the target gzips
itself, so mutations reach the tar parser with valid CRCs (see
fuzz/fuzz_restore.c).
"""
import gzip
import io
import os
import struct
import sys
import tarfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
TARGETS = ("fuzz_tar_header", "fuzz_vet_path", "fuzz_restore", "fuzz_open_beneath",
           "fuzz_chan_report", "fuzz_interp_reader", "fuzz_init_frame")

POSIX = b"ustar\x0000"
GNU = b"ustar  \x00"
ABS_CANARY = "/tmp/ks-fuzz-abs-canary"  # fuzz_restore checks it stays empty

# ---- raw USTAR headers --------------------------------------------------------


def put(buf, off, length, value):
    if isinstance(value, str):
        value = value.encode()
    value = value[:length]
    buf[off:off + len(value)] = value


def octal(n, length):
    return ("%0*o" % (length - 1, n)).encode() + b"\0"


def header(name, typeflag=b"0", size=0, *, prefix=b"", mode=0o644, linkname=b"",
           magic=POSIX, size_field=None, uid=0, gid=0, mtime=0, mtime_field=None,
           chksum=None, signed=False):
    """One 512-byte header. size_field/mtime_field override the encoding;
    chksum(correct_sum) -> bytes overrides the checksum field."""
    b = bytearray(512)
    put(b, 0, 100, name)
    put(b, 100, 8, octal(mode, 8))
    put(b, 108, 8, octal(uid, 8))
    put(b, 116, 8, octal(gid, 8))
    put(b, 124, 12, size_field if size_field is not None else octal(size, 12))
    put(b, 136, 12, mtime_field if mtime_field is not None else octal(mtime, 12))
    b[156:157] = typeflag
    put(b, 157, 100, linkname)
    put(b, 257, 8, magic)
    put(b, 345, 155, prefix)
    b[148:156] = b" " * 8
    if signed:
        s = sum(x - 256 if x >= 128 else x for x in b)
    else:
        s = sum(b)
    b[148:156] = chksum(s) if chksum else (b"%06o\0 " % (s & 0o777777))
    assert len(b) == 512
    return bytes(b)


def pad(data):
    return data + b"\0" * ((512 - len(data) % 512) % 512)


def member(name, data=b"", typeflag=b"0", **kw):
    size = kw.pop("size", len(data))
    return header(name, typeflag, size, **kw) + pad(data)


END = b"\0" * 1024


def raw_tar(*members, end=True):
    return b"".join(members) + (END if end else b"")


OK = member("ok/a.txt", b"A" * 10)

# ---- tarfile-made archives ---------------------------------------------------------


def tarfile_archive(entries, fmt=tarfile.USTAR_FORMAT):
    """entries: (name, data or None for a directory[, extra TarInfo attrs])."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt) as tf:
        for e in entries:
            name, data = e[0], e[1]
            info = tarfile.TarInfo(name)
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if data is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tf.addfile(info)
            else:
                info.mode = 0o644
                info.size = len(data)
                for k, v in (e[2] if len(e) > 2 else {}).items():
                    setattr(info, k, v)
                tf.addfile(info, io.BytesIO(data) if info.size else None)
    raw = out.getvalue()
    # tarfile pads to a 10 KiB record; keep one end marker (1024 zero bytes).
    body = raw.rstrip(b"\0")
    body = pad(body) if body else b""
    return body + END


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


# ---- gzip framing, by hand -------------------------------------------------------------


def gz_member(raw, flags=0, extra=b""):
    """A gzip member with the given FLG bits; extra is inserted as-is after
    the fixed header (FEXTRA/FNAME/FCOMMENT fields, possibly malformed)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = comp.compress(raw) + comp.flush()
    head = b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0" + b"\x02\xff"
    tail = struct.pack("<II", zlib.crc32(raw) & 0xffffffff, len(raw) & 0xffffffff)
    return head + extra + body + tail


# ---- the seeds -----------------------------------------------------------------------------


def restore_seeds():
    s = {}
    # Valid, from tarfile.
    s["v01-files-dirs.tar"] = tarfile_archive([
        ("README.md", b"# hello\n"),
        ("src", None),
        ("src/lib", None),
        ("src/main.c", b"int main(void) { return 0; }\n"),
        ("src/lib/util.h", b"#pragma once\n"),
        ("empty.txt", b""),
        ("block512.bin", b"\x5a" * 512),
        ("block513.bin", b"\xa5" * 513),
    ])
    long_dir = "/".join(["d" * 49, "e" * 49, "f" * 49])  # 149 bytes
    s["v02-prefix-150.tar"] = tarfile_archive([(long_dir + "/" + "n" * 60, b"prefix\n")])
    s["v03-empty.tar"] = END
    s["v03-empty.tar.gz"] = gz(END)
    s["v04-gnu-magic.tar"] = tarfile_archive([("g/one.txt", b"1\n"), ("g/two", None)],
                                             fmt=tarfile.GNU_FORMAT)
    s["v05-dirs-only.tar"] = tarfile_archive([("a", None), ("a/b", None), ("a/b/c", None)])
    s["a06-contiguous-7.tar"] = raw_tar(member("c.bin", b"contiguous", b"7"))
    s["v07-snapshot-like.tar.gz"] = gz(raw_tar(
        member("a.txt", b"a\n"), member("dir/b.txt", b"b\n"), member("dir/sub/c.txt", b"c\n")))
    s["v08-dot-slash-names.tar"] = raw_tar(member("./x/./y.txt", b"y"), member("x//z", b"z"),
                                           member("x/", typeflag=b"5", mode=0o755))
    s["v09-name-100-no-nul.tar"] = raw_tar(member("n" * 100, b"hundred"))
    s["v10-two-gzip-members.tar.gz"] = gz(OK) + gz(member("ok/b.txt", b"B") + END)
    s["v11-space-octal.tar"] = raw_tar(member("sp.txt", b"abc", size_field=b"         3 "))

    # A1 absolute paths.
    for i, p in enumerate([ABS_CANARY + "/x", "/" + ABS_CANARY + "/x",
                           "///" + ABS_CANARY + "/x", "/", "/."]):
        s["a01-absolute-%d.tar" % i] = raw_tar(OK, member(p, b"evil"))
    # A2 traversal.
    for i, p in enumerate(["../x", "a/../../x", "./../x", "a/./../../x", "a/..", "..",
                           "tmp/../../moo", "../outside/x", "a/b/../../../outside/x"]):
        s["a02-dotdot-%d.tar" % i] = raw_tar(OK, member(p, b"evil"))
    s["a02-prefix-dotdot.tar"] = raw_tar(member("x", b"evil", prefix=b".."))
    # A3 symlink members.
    s["a03-symlink-dir-then-file.tar"] = raw_tar(
        member("d", typeflag=b"5", mode=0o755),
        member("d", typeflag=b"2", linkname=b"../outside"),
        member("d/x", b"evil"))
    s["a03-symlink-chain.tar"] = raw_tar(
        member("current", typeflag=b"2", linkname=b"."),
        member("parent", typeflag=b"2", linkname=b"current/.."),
        member("parent/evil", b"evil"))
    s["a03-symlink-up.tar"] = raw_tar(
        member("a/b/c/up", typeflag=b"2", linkname=b"../.."),
        member("a/b/escape", typeflag=b"2", linkname=b"c/up/../.."),
        member("a/b/escape/evil", b"evil"))
    s["a03-symlink-empty-name.tar"] = raw_tar(member("", typeflag=b"2", linkname=b"/"))
    s["a03-symlink-abs.tar"] = raw_tar(member("l", typeflag=b"2", linkname=ABS_CANARY))
    # A4 hardlink members.
    for i, target in enumerate([b"/etc/passwd", b"../outside/f", b"C:../f", b"ok/a.txt"]):
        s["a04-hardlink-%d.tar" % i] = raw_tar(OK, member("h%d" % i, typeflag=b"1",
                                                          linkname=target))
    s["a04-hardlink-via-symlink.tar"] = raw_tar(
        member("a", typeflag=b"2", linkname=b"/etc"),
        member("b", typeflag=b"1", linkname=b"a/passwd"))
    # A5 Windows-isms ("./C:../x" and ".//C:x" are Findings F2 in fuzz/README.md).
    for i, p in enumerate(["C:../x", "C:x", "..\\x", "a\\..\\..\\x", "c:/x", "./C:../x",
                           ".//C:x"]):
        s["a05-windows-%d.tar" % i] = raw_tar(OK, member(p, b"evil"))
    s["a05-prefix-dot-drive.tar"] = raw_tar(member("C:x", b"evil", prefix=b"."))
    # A6 special types and extension headers.
    for t in b"3467SMVLKxgZDN":
        tb = bytes([t])
        name = "t-%s" % ("%02x" % t)
        data = b"" if tb in b"3465" else b"payload"
        s["a06-type-%s.tar" % name[2:]] = raw_tar(OK, member(name, data, tb))
    pax = b"30 path=../../outside/paxevil\n"
    s["a06-pax-path.tar"] = raw_tar(member("././@PaxHeader", pax, b"x"),
                                    member("innocent", b"evil"))
    pax_g = b"24 path=/tmp/paxglobal\n"
    s["a06-pax-global.tar"] = raw_tar(member("pax_global_header", pax_g, b"g"), OK)
    s["a06-pax-tarfile.tar"] = tarfile_archive([("p" * 120, b"x")], fmt=tarfile.PAX_FORMAT)
    s["a06-gnu-longname.tar"] = raw_tar(
        member("././@LongLink", b"../../outside/longevil\0", b"L", magic=GNU),
        member("short", b"evil", magic=GNU))
    s["a06-gnu-longlink.tar"] = raw_tar(
        member("././@LongLink", b"/etc/shadow\0", b"K", magic=GNU),
        member("l", typeflag=b"2", linkname=b"x", magic=GNU))
    s["a06-gnu-tarfile-long.tar"] = tarfile_archive([("g" * 120, b"x")], fmt=tarfile.GNU_FORMAT)
    s["a06-double-path-source.tar"] = raw_tar(
        member("././@PaxHeader", b"14 path=pax\n", b"x"),
        member("././@LongLink", b"gnu\0", b"L", magic=GNU),
        member("plain", b"evil"))
    # A7 header desync and parser differentials.
    hidden = header("esc", b"2", linkname=b"/etc/shadow")
    s["a07-dir-with-size.tar"] = raw_tar(
        header("d", b"5", size=512, mode=0o755) + hidden, member("esc/x", b"evil"))
    s["a07-symlink-with-size.tar"] = raw_tar(
        header("l", b"2", size=512, linkname=b"x") + member("../evil", b"evil"))
    s["a07-after-zero-block.tar"] = OK + b"\0" * 512 + member("../../evil", b"evil") + END
    s["a07-after-end-marker.tar"] = OK + END + member("later.txt", b"later") + END
    s["a07-nul-in-name.tar"] = raw_tar(member(b"safe\0../../evil", b"evil"))
    s["a07-prefix.tar"] = raw_tar(member("name.txt", b"p", prefix=b"pre/fix"))
    s["a07-gnu-magic-prefix-bytes.tar"] = raw_tar(
        member("gname.txt", b"g", magic=GNU, prefix=b"../../ignored"))
    # A8 numeric fields.
    s["a08-size-negative.tar"] = raw_tar(member("n", b"", size_field=b"-1000\0"))
    s["a08-size-base256.tar"] = raw_tar(member("b", b"x", size_field=b"\x80" + b"\0" * 10 + b"\x01"))
    s["a08-size-base256-neg.tar"] = raw_tar(member("b", b"", size_field=b"\xff" * 12))
    s["a08-size-nonoctal.tar"] = raw_tar(member("o", b"", size_field=b"0000000012x\0"))
    s["a08-size-89.tar"] = raw_tar(member("o", b"", size_field=b"00000000089\0"))
    s["a08-size-beyond-data.tar"] = OK + header("big", b"0", size=4096) + b"short"
    s["a08-size-1gib.tar"] = OK + header("huge", b"0", size=0o7777777777) + b"x" * 512
    s["a08-size-11-digits-8g.tar"] = raw_tar(member("eight", b"", size_field=b"77777777777\0"))
    s["a08-size-12-digits.tar"] = raw_tar(member("twelve", b"", size_field=b"777777777777"))
    s["a08-chksum-off-by-one.tar"] = raw_tar(
        member("c", b"c", chksum=lambda v: b"%06o\0 " % ((v + 1) & 0o777777)))
    s["a08-chksum-signed.tar"] = raw_tar(member("\xe9t\xe9.txt".encode("latin-1"), b"s",
                                                signed=True))
    s["a08-chksum-8-digits.tar"] = raw_tar(member("c8", b"c", chksum=lambda v: b"%07o\0" % v))
    s["a08-chksum-empty.tar"] = raw_tar(member("c0", b"c", chksum=lambda v: b"\0" * 8))
    # A9 gzip layer (these pass through as they are).
    good = raw_tar(OK, member("ok/b.txt", b"B" * 700))
    g = gz(good)
    s["a09-concatenated.tar.gz"] = gz(good[:600]) + gz(good[600:])
    s["a09-ten-members.tar.gz"] = b"".join(gz(good[i * 300:(i + 1) * 300])
                                           for i in range((len(good) + 299) // 300))
    s["a09-truncated.tar.gz"] = g[:len(g) // 2]
    s["a09-truncated-trailer.tar.gz"] = g[:-4]
    s["a09-trailing-garbage.tar.gz"] = g + b"garbage!"
    s["a09-trailing-zeros.tar.gz"] = g + b"\0" * 64
    bad_crc = bytearray(g)
    bad_crc[-8] ^= 0xff
    s["a09-bad-crc.tar.gz"] = bytes(bad_crc)
    lying = bytearray(g)
    lying[-4:] = struct.pack("<I", 10)
    s["a09-lying-isize.tar.gz"] = bytes(lying)
    s["a09-fextra-unterminated.tar.gz"] = gz_member(good, 0x04, b"\xff\x7f" + b"ab")[:40]
    s["a09-fname.tar.gz"] = gz_member(good, 0x08, b"snapshot.tar\0")
    s["a09-fname-unterminated.tar.gz"] = (b"\x1f\x8b\x08\x08\0\0\0\0\x02\xff" + b"n" * 200)
    s["a09-fcomment.tar.gz"] = gz_member(good, 0x10, b"comment\0")
    s["a09-fhcrc-bad.tar.gz"] = gz_member(good, 0x02, b"\x00\x00")
    s["a09-not-gzip.tar.gz"] = b"\x1f\x8b" + b"not really gzip"
    s["a09-deflate-raw-zlib.tar.gz"] = b"\x1f\x8b\x08\0\0\0\0\0\0\xff" + zlib.compress(good)
    s["a09-bomb-8mib.tar.gz"] = gz(raw_tar(member("zeros", size=8 << 20, data=b"")[:512])
                                   + b"\0" * (8 << 20) + END)
    # A10 structural bombs.
    s["a10-2000-empty-members.tar.gz"] = gz(b"".join(member("m/%05d" % i) for i in range(2000))
                                            + END)
    s["a10-deep-path.tar"] = raw_tar(member("/".join(["a"] * 50), b"deep",
                                            prefix="/".join(["p"] * 77).encode()))
    s["a10-long-component.tar"] = raw_tar(member("n" * 100, b"x", prefix=b"c" * 155))
    s["a10-5000-zero-blocks.tar.gz"] = gz(OK + b"\0" * (512 * 5000))
    # A11 vet everything before writing anything.
    s["a11-200-then-evil.tar.gz"] = gz(b"".join(member("ok/f%03d" % i, b"x") for i in range(200))
                                       + member("../evil", b"evil") + END)
    s["a11-valid-then-symlink.tar"] = raw_tar(OK, member("ok/b", b"b"),
                                              member("s", typeflag=b"2", linkname=b"/"))
    # A13 modes and owners.
    for i, m in enumerate([0o7777, 0o4755, 0o2755, 0o1777]):
        s["a13-mode-%o.tar" % m] = raw_tar(member("m%d" % i, b"mode", mode=m),
                                           member("md%d" % i, typeflag=b"5", mode=m))
    s["a13-mtime-negative.tar"] = raw_tar(member("t", b"t", mtime_field=b"-1\0"))
    s["a13-mtime-huge.tar"] = raw_tar(member("t", b"t", mtime_field=b"77777777777\0"))
    # Names private to the binding, and collisions inside one archive.
    s["p01-private-top.tar"] = raw_tar(member(".ks-restore-0000000000000000/0", b"x"))
    s["p02-private-dot.tar"] = raw_tar(member("./.ks-tmp-1", b"x"))
    s["p03-private-deep.tar"] = raw_tar(member("a/.ks-tmp-1", b"x"))
    s["c01-file-then-under.tar"] = raw_tar(member("a", b"f"), member("a/b", b"g"))
    s["c02-dir-and-file.tar"] = raw_tar(member("a", typeflag=b"5", mode=0o755), member("a", b"f"))
    s["c03-file-twice.tar"] = raw_tar(member("a", b"first"), member("a", b"second"))
    s["c04-file-then-dir.tar"] = raw_tar(member("a", b"f"), member("a/", typeflag=b"5"))
    s["c05-under-later-file.tar"] = raw_tar(member("a/b", b"g"), member("a", b"f"))
    return s


def header_seeds(restore):
    """First headers of the restore seeds (plain tar ones), one block each,
    plus a few multi-block sequences."""
    s = {}
    for name, data in sorted(restore.items()):
        if data[:2] == b"\x1f\x8b" or len(data) < 512:
            continue
        base = name.rsplit(".tar", 1)[0]
        blocks = [data[i:i + 512] for i in range(0, min(len(data), 512 * 16), 512)]
        heads = [b for b in blocks if b[257:262] == b"ustar"]
        if heads:
            s[base + ".hdr"] = heads[-1]
            if heads[0] != heads[-1]:
                s[base + "-first.hdr"] = heads[0]
        if base in ("v01-files-dirs", "a07-dir-with-size", "a06-gnu-longname"):
            s[base + "-blocks.hdr"] = b"".join(blocks[:6])
    s["zero.hdr"] = b"\0" * 512
    return s


VET_PATHS = [
    "", ".", "./", "/", "/.", "//x", "////x", "a", "a/b/c", "a//b", "./a", "a/./b", "a/", "a/.",
    "..", "../x", "a/..", "a/../b", "a/../../x", "./../x", "tmp/../../moo", "...", "..a", "a..",
    "C:x", "C:../x", "c:/x", "./C:../x", ".//C:x", "a/C:x", "..\\x", "a\\..\\..\\x", "a\\b",
    ".ks-tmp-1", "./.ks-x", "a/.ks-x", ".ks", ".kern-env", ".deps/x",
    "n" * 255, "n" * 256, "a/" + "n" * 255, "/".join(["a"] * 128), "/".join(["b" * 200] * 2),
    "/".join(["c" * 200] * 20), b"a\nb", b"a\x01b", b"caf\xc3\xa9", b"\xff\xfe", b"a\0../x",
    "x" * 4095, "x" * 4096, "a/" * 2047 + "a",
]

OPEN_PATHS = [
    "", ".", "./", "file", "file/", "file/.", "empty", "empty/", "empty/.", "d", "d/", "d/file",
    "d/e", "d/e/f.txt", "d//e/./f.txt", "d/e/f.txt/", "d/link_up", "d/link_up/file",
    "d/link_file", "d/link_file/", "dirlink", "dirlink/file", "dirlink/", "link_out",
    "link_out/secret", "link_abs/secret", "link_root/etc/passwd", "proc_root/etc/hostname",
    "loop1", "loop1/x", "loop2/", "self", "self/x", "dangling", "dangling/", "fifo", "fifo/",
    "d/fifo2", "sock", "sock/", "nope", "nope/x", "file/x", "../root/file", "/etc/passwd",
    "d/../file", "a\\b", "n" * 256, "x" * 4096,
]


# ---- the init's channel (csrc/init/protocol.h) ---------------------------------

FRAME_MAGIC = 0x3246534B
EXITED, SIGNALED = 1, 2


def frame(ftype, body=b"", magic=FRAME_MAGIC, length=None):
    return struct.pack("=III", magic, ftype, len(body) if length is None else length) + body


def report(end, value, flags=0, reserved=0, utime=1500, stime=700, maxrss=9000):
    return frame(4, struct.pack("=IiIIQQQ", end, value, flags, reserved, utime, stime, maxrss))


def channel_seeds():
    # The first byte of each seed picks the chunk size the target feeds in.
    taken, attach, started = frame(2), frame(3), frame(6)
    return {
        "exit0": b"\x00" + report(EXITED, 0),
        "exit3-chunked": b"\x02" + report(EXITED, 3),
        "taken-then-exit": b"\x05" + taken + report(EXITED, 0),
        "attach-then-sigkill": b"\x00" + attach + report(SIGNALED, 9),
        "started-then-exit": b"\x04" + started + report(EXITED, 0),
        "taken-started-exit": b"\x07" + taken + started + report(EXITED, 2),
        "started-bad-len": b"\x00" + frame(6, length=1) + b"x",
        "segv-core": b"\x03" + report(SIGNALED, 11, flags=1),
        "bad-magic": b"\x00" + frame(4, b"\0" * 40, magic=0x3152534B),
        "bad-type": b"\x00" + frame(9),
        "bad-len": b"\x00" + frame(2, length=4) + b"abcd",
        "bad-end": b"\x00" + report(7, 0),
        "bad-reserved": b"\x00" + report(EXITED, 0, reserved=1),
        "short": b"\x00" + report(EXITED, 0)[:20],
        "trailing": b"\x01" + report(EXITED, 1) + taken + b"junk",
    }


def init_frame_seeds():
    # Byte 0: bit 0 wants STDIN (else SPEC), bit 1 sends a descriptor on the
    # first byte, bit 2 splits the send at byte 1's offset.
    spec = frame(1, b"cat\0-\0")
    return {
        "spec": b"\x00\x00" + spec,
        "spec-with-fd": b"\x02\x00" + spec,
        "spec-split-fd": b"\x06\x05" + spec,
        "stdin-fd": b"\x03\x00" + frame(5),
        "signal-term": b"\x00\x00" + frame(7, struct.pack("=iI", 15, 0)),
        "signal-bad-signo": b"\x00\x00" + frame(7, struct.pack("=iI", 65, 0)),
        "stdin-no-fd": b"\x01\x00" + frame(5),
        "stdin-wrong-type": b"\x03\x00" + frame(1, b"x\0"),
        "spec-short-body": b"\x00\x00" + frame(1, length=40) + b"abc",
        "spec-over-cap": b"\x00\x00" + frame(1, length=5000),
        "bad-magic": b"\x02\x00" + frame(1, b"a\0", magic=0x3152534B),
        "short-header": b"\x06\x03" + spec[:7],
    }


# ---- the interpreter protocol (csrc/core/box/interp.h) ------------------------

IP_MAGIC = 0x3149534B
MORE = 1


def record(rtype, rid=0, body=b"", flags=0, magic=IP_MAGIC, length=None):
    rec = struct.pack("=IHHII", magic, rtype, flags, rid, len(body) if length is None else length)
    return rec + body


def records(*recs, budget=4096):
    # What fuzz_interp_reader reads: a 2-byte budget, then length-prefixed records.
    out = struct.pack("<H", budget)
    for r in recs:
        out += struct.pack("<H", len(r)) + r
    return out


def interp_seeds():
    done = struct.pack("=iiIIQQQ", 0, 0, 2, 0, 120, 40, 11000)
    ended = struct.pack("=iIQQQ", 9, 1, 10, 5, 12000)
    ready = struct.pack("=II", 2, 7)
    res = b'{"text/plain": "499500"}'
    return {
        "taken-result-done": records(record(16), record(17, 0, res), record(18, 0, done)),
        "cell-done": records(record(17, 3, res), record(18, 3, done)),
        "result-in-parts": records(record(17, 4, res[:9], MORE), record(17, 4, res[9:])),
        "forked-between-parts": records(record(17, 5, b'{"a"', MORE), record(20, 5),
                                        record(17, 5, b': "b"}')),
        "sender-died-mid-result": records(record(17, 6, b"{", MORE), record(17, 7, res)),
        "over-budget": records(record(17, 8, b"x" * 60, MORE), record(17, 8, b"y" * 60), budget=100),
        "ready-ended": records(record(19, 0, ready), record(21, 9, ended)),
        "bad-magic": records(record(18, 1, done, magic=0x3246534B)),
        "bad-fixed-len": records(record(18, 1, done[:10])),
        "bad-more-on-done": records(record(18, 1, done, MORE)),
        "bad-type": records(record(1, 0, b"print(1)")),
        "bad-len-field": records(record(17, 1, res, length=3)),
        "short-record": records(record(16)[:10]),
    }


def write_all(target, files):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    for old in os.listdir(d):
        os.unlink(os.path.join(d, old))
    total = 0
    for name, data in sorted(files.items()):
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        total += len(data)
    return len(files), total


def main(argv):
    restore = restore_seeds()
    sets = {
        "fuzz_restore": restore,
        "fuzz_tar_header": header_seeds(restore),
        "fuzz_vet_path": {"p%03d.txt" % i: p for i, p in enumerate(VET_PATHS)},
        "fuzz_open_beneath": {"p%03d.txt" % i: p for i, p in enumerate(OPEN_PATHS)},
        "fuzz_chan_report": channel_seeds(),
        "fuzz_interp_reader": interp_seeds(),
        "fuzz_init_frame": init_frame_seeds(),
    }
    unknown = [t for t in argv if t not in TARGETS]
    if unknown:
        print("make-seeds.py: unknown target(s) %s; one of %s" % (unknown, TARGETS), file=sys.stderr)
        return 2
    grand = 0
    for t in argv or TARGETS:
        n, total = write_all(t, sets[t])
        grand += total
        print("%-18s %4d files %8d bytes" % (t, n, total))
    print("%-18s %4s       %8d bytes" % ("total", "", grand))
    big = [(n, len(d)) for n, d in restore.items() if len(d) > 16384]
    if big:
        print("seeds over 16 KiB:", big, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
