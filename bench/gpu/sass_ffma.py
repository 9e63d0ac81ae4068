#!/usr/bin/env python3
"""What ptxas made of the FP8 kernels' promotion, without cuobjdump or nvdisasm (this machine's
CUDA toolkit has neither): reads a cubin (nvcc -cubin) as ELF, walks each kernel's .text section
as 16-byte sm_90 instructions, and prints per kernel its instruction count, FFMAs, local-memory
loads and stores (spills), the highest register an FFMA names, and, for each run of 8 or more
consecutive FFMAs (a promotion), its yield and register-reuse bits.

Encoding read (Volta and later; the counts below check it against what the source must give):
the low 12 bits of the first 64-bit word are the opcode with its operand form (FFMA with four
registers 0x223, LDL 0x983, STL 0x387); Rd, Ra, Rb sit in bits 16-23, 24-31, 32-39 of that
word, Rc in bits 0-7 of the second; in the second word's control bits, bit 45 is the yield bit
and bits 58-61 the operand reuse flags. DeepGEMM's post-pass (2025) flipped bit 45 and reuse bit
59 on alternate promotion FFMAs; this shows whether ptxas already does it.

Usage: nvcc -std=c++17 -O3 -I kernels/radeonflow/gemm/include -I include \
         -DKBPKG_TARGET='"cuda13-sm_90a-x86_64-linux"' -cubin -gencode arch=compute_90a,code=sm_90a \
         kernels/radeonflow/gemm/src/gemm_fp8.cu -o fp8.cubin
       python3 bench/gpu/sass_ffma.py fp8.cubin [name-filter]
"""
import struct
import sys

FFMA, LDL, STL = 0x223, 0x983, 0x387
RZ = 255


def elf_sections(data):
    """(name, file offset, size) of each section of a 64-bit little-endian ELF."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        sys.exit("not a 64-bit ELF (give the cubin from nvcc -cubin)")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = heads[shstrndx][4]
    for name, _type, _flags, _addr, off, size in heads:
        end = data.index(b"\0", names_at + name)
        yield data[names_at + name:end].decode(), off, size


def ffma_runs(code):
    """Runs of consecutive FFMAs: lists of (index, low word, high word)."""
    run = []
    for i, (lo, hi) in enumerate(code):
        if lo & 0xFFF == FFMA:
            run.append((i, lo, hi))
            continue
        if len(run) >= 8:
            yield run
        run = []
    if len(run) >= 8:
        yield run


def report(name, code):
    ops = [lo & 0xFFF for lo, _ in code]
    regs = [r for lo, hi in code if lo & 0xFFF == FFMA
            for r in ((lo >> 16) & 255, (lo >> 24) & 255, (lo >> 32) & 255, hi & 255) if r != RZ]
    print(f"{name}: {len(code)} instructions, {ops.count(FFMA)} FFMA, {ops.count(LDL)} LDL, "
          f"{ops.count(STL)} STL, highest FFMA register R{max(regs) if regs else '-'}")
    for run in ffma_runs(code):
        yields = "".join("Y" if (hi >> 45) & 1 else "." for _, _, hi in run)
        reuse = "".join("%x" % ((hi >> 58) & 0xF) for _, _, hi in run)
        flipped = sum(a != b for a, b in zip(yields, yields[1:]))
        print(f"  FFMA run at {run[0][0]}, {len(run)} long: yield {yields}")
        print(f"  {' ' * len(str(run[0][0]))}           reuse {reuse}  "
              f"({flipped} of {len(run) - 1} neighbours differ in yield)")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    data = open(sys.argv[1], "rb").read()
    want = sys.argv[2] if len(sys.argv) > 2 else ""
    for name, off, size in elf_sections(data):
        if not name.startswith(".text.") or want not in name:
            continue
        code = [struct.unpack_from("<QQ", data, off + 16 * i) for i in range(size // 16)]
        report(name[len(".text."):], code)


if __name__ == "__main__":
    main()
