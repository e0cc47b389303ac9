#!/usr/bin/env python3
"""tar_fixtures.py OUTDIR: writes the tar archives test_tar.c parses.

For each NAME.tar it writes NAME.expect: "ok" or "error" on the first line,
then one line per regular member as Python's tarfile sees it:
name<TAB>offset_data<TAB>size<TAB>mode<TAB>mtime<TAB>offset (name as UTF-8;
offset: of its first header, pax or GNU long name included).
"""
import io
import os
import sys
import tarfile


def add(tf, name, data, mtime=1700000000, mode=0o644):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mtime = mtime
    ti.mode = mode
    tf.addfile(ti, io.BytesIO(data))


def add_special(tf, name, kind, target=""):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.linkname = target
    ti.mode = 0o755
    tf.addfile(ti)


def write(outdir, name, fmt, fill, expect_ok=True):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        fill(tf)
    data = buf.getvalue()
    with open(os.path.join(outdir, name + ".tar"), "wb") as f:
        f.write(data)
    lines = ["ok" if expect_ok else "error"]
    if expect_ok:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tf:
            for m in tf.getmembers():
                if m.isreg():
                    lines.append("%s\t%d\t%d\t%d\t%d\t%d" % (m.name, m.offset_data, m.size,
                                                             m.mode, int(m.mtime), m.offset))
    with open(os.path.join(outdir, name + ".expect"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def fill_common(tf):
    add(tf, "000000.jpg", b"\xff\xd8" + os.urandom(3000))
    add(tf, "000000.cls", b"7")
    add(tf, "000001.jpg", os.urandom(512), mode=0o600)
    add(tf, "000001.cls", b"")  # empty member
    add_special(tf, "dir", tarfile.DIRTYPE)
    add_special(tf, "link", tarfile.SYMTYPE, "000000.jpg")
    add_special(tf, "hard", tarfile.LNKTYPE, "000000.jpg")
    add(tf, "sub/dir/000002.json", b'{"a": 1}' * 100, mtime=0)


def fill_ustar(tf):
    fill_common(tf)
    # 150 bytes: stored split into the ustar prefix and name fields.
    add(tf, "p" * 60 + "/" + "q" * 60 + "/" + "r" * 28, b"prefixed")


def fill_pax(tf):
    fill_common(tf)
    add(tf, "long/" + "n" * 300 + ".txt", b"long name")
    add(tf, "ünïcødé/名前.txt", "utf-8".encode())
    add(tf, "x" * 4000, b"near the cap")


def fill_gnu(tf):
    fill_common(tf)
    add(tf, "gnu/" + "g" * 200 + ".npy", b"gnu long name")
    add(tf, "future.bin", b"base-256 mtime", mtime=2 ** 34)


def fill_too_long(tf):
    add(tf, "y" * 5000, b"past the cap")


def main():
    outdir = sys.argv[1]
    write(outdir, "ustar", tarfile.USTAR_FORMAT, fill_ustar)
    write(outdir, "pax", tarfile.PAX_FORMAT, fill_pax)
    write(outdir, "gnu", tarfile.GNU_FORMAT, fill_gnu)
    write(outdir, "gnu_too_long", tarfile.GNU_FORMAT, fill_too_long, expect_ok=False)
    write(outdir, "pax_too_long", tarfile.PAX_FORMAT, fill_too_long, expect_ok=False)


if __name__ == "__main__":
    main()
