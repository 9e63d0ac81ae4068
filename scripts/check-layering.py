#!/usr/bin/env python3
"""Checks every #include "folder/..." of libkbpkg's modules, the CLI and the tools against
cmake/modules.txt (the table the build links by): a module may include its own headers, the
public ones (kbpkg/...) and those of the modules it may use, directly or through them.
cli/ sees the public API only; so does each tool under tools/ (tools/hub: programs' libraries
over the public API, not in libkbpkg), besides its own headers, quoted or <...>.
Exit 1 naming file:line for each wrong-way include.

  check-layering.py [--as MODULE FILE]...   # also check FILE as if it were in MODULE
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
ANY_INCLUDE = re.compile(r'^\s*#\s*include\s+["<]([^">]+)[">]')


def load_table():
    deps = {}
    with open(os.path.join(ROOT, "cmake", "modules.txt")) as f:
        for line in f:
            m = re.match(r"^([a-z/]+):(.*)$", line.strip())
            if m:
                deps[m.group(1)] = m.group(2).split()
    closure = {}
    for module in deps:  # listed in order: every use is already closed
        seen = set()
        for d in deps[module]:
            seen.add(d)
            seen |= closure[d]
        closure[module] = seen
    return closure


def include_module(path, modules):
    """The module a quoted include names, or None for a file-local or public header."""
    for m in sorted(modules, key=len, reverse=True):
        if path.startswith(m + "/"):
            return m
    return None


def tools_of():
    """Each folder under tools/: one tool, checked like cli/ (public headers and its own)."""
    folder = os.path.join(ROOT, "tools")
    if not os.path.isdir(folder):
        return []
    return ["tools/" + name for name in sorted(os.listdir(folder))
            if os.path.isdir(os.path.join(folder, name))]


def check_file(path, module, allowed, modules, problems):
    # A tool has libkbpkg's modules off its include path: <registry/x.h> is as wrong as "...".
    pattern = ANY_INCLUDE if module.startswith("tools/") else INCLUDE
    with open(path, errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = pattern.match(line)
            if not m:
                continue
            target = include_module(m.group(1), modules)
            if target is None or target == module or target in allowed:
                continue
            rel = os.path.relpath(path, ROOT)
            why = ("it sees the public API only" if not allowed
                   else f"{module} does not use {target}: cmake/modules.txt")
            problems.append(f'{rel}:{n}: {module}/ may not include "{m.group(1)}" ({why})')


def main(argv):
    closure = load_table()
    tools = tools_of()
    modules = list(closure) + ["cli"] + tools
    for front in ["cli"] + tools:
        closure[front] = set()  # the public API only
    planted = []
    while argv[:1] == ["--as"]:
        planted.append((argv[1], argv[2]))
        argv = argv[3:]
    problems = []
    for module in modules:
        folder = os.path.join(ROOT, module)
        for name in sorted(os.listdir(folder)):
            if name.endswith((".c", ".h")):
                check_file(os.path.join(folder, name), module, closure[module], modules,
                           problems)
    for module, path in planted:
        check_file(path, module, closure[module], modules, problems)
    for p in problems:
        print(p)
    print(f"check-layering: {len(problems)} wrong-way include(s)" if problems
          else "check-layering: every include follows cmake/modules.txt")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
