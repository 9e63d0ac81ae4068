"""Make PyPI's torch wheel import on a machine without its nvidia-* wheels (CPU-only CI).

PyPI's Linux torch links the CUDA libraries (cudart, cublas, cudnn, ...) that its nvidia-*
dependency wheels ship, several GB that CPU tests never call. This writes a small stub for
each missing library into torch/lib (on torch's RUNPATH): every symbol torch imports from it,
versioned as the real library versions it, as a function that returns 100 (cudaErrorNoDevice,
CUDA_ERROR_NO_DEVICE), so the loader is satisfied and torch.cuda.is_available() is False.
Usage: python cuda_stubs.py TORCH_LIB_DIR"""
import os
import re
import subprocess
import sys
import tempfile


def readelf(*args):
    return subprocess.run(["readelf", "-W", *args], capture_output=True, text=True,
                          check=True).stdout


def needed(lib):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", readelf("-d", lib))


def symbols(lib):
    """(name, version or None, type, bind, defined) of lib's dynamic symbols."""
    out = []
    for line in readelf("--dyn-syms", lib).splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].rstrip(":").isdigit():
            continue
        name, _, version = f[7].partition("@")
        out.append((name, version.lstrip("@") or None, f[3], f[4], f[6] != "UND"))
    return out


def version_files(lib):
    """version name -> the file (soname) that must define it, from lib's verneed section."""
    files, current = {}, None
    for line in readelf("-V", lib).splitlines():
        m = re.search(r"File: (\S+)", line)
        if m:
            current = m.group(1)
        m = re.search(r"Name: (\S+)\s+Flags", line)
        if m and current:
            files[m.group(1)] = current
    return files


def main(libdir):
    libs = [os.path.join(libdir, f) for f in os.listdir(libdir) if ".so" in f]
    libs += [os.path.join(libdir, "..", f) for f in os.listdir(os.path.join(libdir, ".."))
             if f.startswith("_C") and f.endswith(".so")]
    present = set(os.listdir(libdir))
    system = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    # Every CUDA library the wheel does not carry, even where the host has a CUDA toolkit:
    # the same stubs everywhere, and a real libcudart would look for a driver.
    missing = sorted({n for lib in libs for n in needed(lib)
                      if n not in present and re.match(r"lib(cu|nv|nccl)", n)})
    if not missing:
        return 0
    defined, wanted, vfiles = set(), {}, {}
    for lib in libs:
        vfiles.update(version_files(lib))
        for name, version, kind, bind, is_def in symbols(lib):
            if is_def:
                defined.add(name)
            elif bind == "GLOBAL":
                wanted.setdefault((name, version), kind)
    per_lib = {m: [] for m in missing}
    loose = []  # unversioned: any loaded stub may define them
    for (name, version), kind in sorted(wanted.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        if name in defined:
            continue
        f = vfiles.get(version) if version else None
        if f in per_lib:
            per_lib[f].append((name, version, kind))
        elif version is None and not name.startswith(("Py", "_Py")):
            loose.append((name, None, kind))
    host = {l.split()[0] for l in system.splitlines() if "=>" in l}
    loose = [s for s in loose if not provided_by_host(s[0], host)]
    for soname in missing:
        per_lib[soname] += loose
    with tempfile.TemporaryDirectory() as tmp:
        for soname in missing:
            write_stub(tmp, libdir, soname, per_lib[soname])
    print("cuda_stubs: stubbed", ", ".join(missing))
    return 0


_HOST_SYMS = None


def provided_by_host(name, host):
    global _HOST_SYMS
    if _HOST_SYMS is None:
        _HOST_SYMS = set()
        for so in ("libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libz.so.1"):
            path = subprocess.run(["sh", "-c", f"ldconfig -p | grep -m1 '{so} ' | sed 's/.*=> //'"],
                                  capture_output=True, text=True).stdout.strip()
            if path:
                _HOST_SYMS.update(s[0] for s in symbols(path) if s[4])
    return name in _HOST_SYMS


def write_stub(tmp, libdir, soname, syms):
    asm = [".text"]
    versions = {}
    for name, version, kind in syms:
        versions.setdefault(version, []).append(name)
        if kind == "OBJECT" or kind == "TLS":
            asm += [".data", f".globl {name}", f".type {name},@object", f".size {name},64",
                    f"{name}: .zero 64", ".text"]
        else:
            asm += [f".globl {name}", f".type {name},@function", f"{name}:",
                    "  mov $100, %eax", "  ret"]
    src = os.path.join(tmp, soname + ".s")
    with open(src, "w") as f:
        f.write("\n".join(asm) + "\n.section .note.GNU-stack,\"\",@progbits\n")
    script = os.path.join(tmp, soname + ".map")
    with open(script, "w") as f:
        for version, names in versions.items():
            body = " ".join(n + ";" for n in names)
            if version:  # unversioned symbols stay global without a node
                f.write(f"{version} {{ global: {body} }};\n")
    vscript = [f"-Wl,--version-script={script}"] if os.path.getsize(script) else []
    subprocess.run(["cc", "-shared", "-nostdlib", "-o", os.path.join(libdir, soname),
                    f"-Wl,-soname,{soname}", *vscript, src], check=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
