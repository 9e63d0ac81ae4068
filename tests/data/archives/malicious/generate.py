#!/usr/bin/env python3
"""Regenerate the malicious archive corpus (README.md lists each file and its expected error).

Run from this folder: python3 generate.py. Needs the zstd command. Output is deterministic."""
import io
import subprocess
import tarfile

EPOCH = 1700000000


def info(name, kind=tarfile.REGTYPE, size=0, mode=0o644, link="", **kw):
    t = tarfile.TarInfo(name)
    t.type, t.size, t.mode, t.linkname, t.mtime = kind, size, mode, link, EPOCH
    for k, v in kw.items():
        setattr(t, k, v)
    return t


def build(name, members, fmt=tarfile.PAX_FORMAT):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt) as tar:
        for member, data in members:
            tar.addfile(member, io.BytesIO(data) if data is not None else None)
    packed = subprocess.run(["zstd", "-19", "-q", "-c"], input=raw.getvalue(),
                            stdout=subprocess.PIPE, check=True).stdout
    with open(name + ".tar.zst", "wb") as f:
        f.write(packed)


def file(name, data=b"x\n", mode=0o644):
    return info(name, size=len(data), mode=mode), data


def zeros(name, n):
    return info(name, size=n), bytes(n)


def main():
    ok = file("kbpkg.json", b"{}\n")
    build("absolute_path", [ok, file("/tmp/kbpkg-evil")])
    build("dotdot", [ok, file("../kbpkg-evil")])
    build("nested_dotdot", [ok, file("lib/../../kbpkg-evil")])
    build("symlink_out", [ok, (info("lib/libx.so", tarfile.SYMTYPE, link="/etc/passwd"), None)])
    build("symlink_write_through", [(info("lib/d", tarfile.SYMTYPE, link="/tmp"), None),
                                    file("lib/d/kbpkg-evil")])
    build("hardlink", [ok, (info("lib/libx.so", tarfile.LNKTYPE, link="/etc/passwd"), None)])
    build("char_device", [(info("lib/null", tarfile.CHRTYPE, devmajor=1, devminor=3), None)])
    build("block_device", [(info("lib/sda", tarfile.BLKTYPE, devmajor=8, devminor=0), None)])
    build("fifo", [(info("lib/pipe", tarfile.FIFOTYPE), None)])
    build("setuid", [file("lib/libx.so", b"\x7fELF\n", 0o4755)])
    build("setgid_dir", [(info("lib", tarfile.DIRTYPE, mode=0o2755), None)])
    build("duplicate", [ok, file("kbpkg.json", b'{"evil":1}\n')])
    build("not_allowed", [ok, file("bin/run.sh", b"#!/bin/sh\n", 0o755)])
    build("file_as_folder", [file("lib"), file("lib/libx.so")])
    build("bomb_total", [zeros("lib/a", 600 << 10), zeros("lib/b", 600 << 10),
                         zeros("lib/c", 600 << 10)])
    build("bomb_entries", [file("include/h%03d.h" % i, b"") for i in range(150)])
    build("bomb_ratio", [zeros("lib/libx.so", 8 << 20)])
    build("nul_in_name", [file("kbpkg.json\0/../../kbpkg-evil")])
    build("control_char", [file("include/a\x1b[31mb.h")])
    build("long_name", [file("include/" + "a" * 200 + "/" + "b" * 2000 + ".h")])
    build("long_component", [file("include/" + "c" * 300 + ".h")])
    build("dot_component", [file("include/./x.h")])
    raw = subprocess.run(["zstd", "-19", "-q", "-c"], input=b"not a tar file at all" * 40,
                         stdout=subprocess.PIPE, check=True).stdout
    with open("not_a_tar.tar.zst", "wb") as f:
        f.write(raw)
    with open("truncated.tar.zst", "wb") as f:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            member, data = file("kbpkg.json", bytes((i * 7919) % 251 for i in range(8192)))
            tar.addfile(member, io.BytesIO(data))
        packed = subprocess.run(["zstd", "-19", "-q", "-c"], input=buf.getvalue(),
                                stdout=subprocess.PIPE, check=True).stdout
        f.write(packed[: len(packed) // 2])


if __name__ == "__main__":
    main()
