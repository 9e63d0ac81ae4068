#!/usr/bin/env python3
"""contrib/github/kbpkg-farm.yml: parses as YAML, fans out with fromJSON over every chunk the
plan step can write, and its plan step, dry-run here against a layout folder, writes the outputs
the build and merge jobs read."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

src = os.environ["KB_SOURCE_DIR"]
kbpkg = os.environ["KBPKG_BIN"]
wf = yaml.safe_load(open(os.path.join(src, "contrib/github/kbpkg-farm.yml")))
jobs = wf["jobs"]
plan_outputs = jobs["plan"]["outputs"]
builds = sorted(j for j in jobs if j.startswith("build"))
assert builds == [f"build{i}" for i in range(len(builds))], builds
for i, name in enumerate(builds):
    assert f"chunk{i}" in plan_outputs, f"plan does not export chunk{i}"
    assert jobs[name]["strategy"]["matrix"] == f"${{{{ fromJSON(needs.plan.outputs.chunk{i}) }}}}"
    assert jobs[name]["if"] == f"needs.plan.outputs.chunks > {i}", jobs[name]["if"]
merge = jobs["merge"]
assert set(builds) <= set(merge["needs"]), merge["needs"]
assert merge["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.merges) }}"
assert "matrix.ref" in merge["concurrency"]["group"]

# Dry-run the plan step: its command, with a layout folder for the hub and two packages.
step = next(s for s in jobs["plan"]["steps"] if s.get("id") == "plan")
tmp = tempfile.mkdtemp()
try:
    pkgs = os.path.join(tmp, "kernels")
    shutil.copytree(os.path.join(src, "tests/data/publish/cpu-add"), os.path.join(pkgs, "one"))
    os.makedirs(os.path.join(tmp, ".github"))
    json.dump({"pools": [{"name": "cpu", "backend": "cpu"}]},
              open(os.path.join(tmp, ".github/kbpkg-pools.json"), "w"))
    out = os.path.join(tmp, "github_output")
    env = dict(os.environ, GITHUB_OUTPUT=out, KBPKG_REGISTRY=os.path.join(tmp, "hub"),
               KBPKG_PACKAGES="kernels", KBPKG_CACHE=os.path.join(tmp, "cache"),
               XDG_CONFIG_HOME=os.path.join(tmp, "config"), KBPKG_DEVICES="none",
               KBPKG_CPU="x86_64_v3", PATH=os.path.dirname(kbpkg) + ":" + os.environ["PATH"])
    subprocess.run(["bash", "-euo", "pipefail", "-c", step["run"]], cwd=tmp, env=env, check=True)
    lines = dict(l.split("=", 1) for l in open(out).read().splitlines())
    assert lines["chunks"] == "1", lines
    chunk = json.loads(lines["chunk0"])
    targets = sorted(i["target"] for i in chunk["include"])
    assert targets == ["cpu-x86_64_v2-x86_64-linux", "cpu-x86_64_v3-x86_64-linux"], targets
    for item in chunk["include"]:  # what the build jobs' expressions read
        assert {"dir", "target", "pool", "labels"} <= set(item), item
    merges = json.loads(lines["merges"])["include"]
    assert [m["ref"] for m in merges] == ["kbtest/cpu-add@0.1.0"], merges
    # The build step's command, as the matrix fills it in, stages a target.
    build_run = jobs["build0"]["steps"][-1]["run"]
    item = chunk["include"][0]
    cmd = re.sub(r"\$\{\{ matrix\.(\w+) \}\}", lambda m: item[m.group(1)], build_run)
    r = subprocess.run(["bash", "-c", cmd], cwd=tmp, env=env, capture_output=True, text=True)
    assert r.returncode == 0 and " staged" in r.stdout, r.stdout + r.stderr
finally:
    shutil.rmtree(tmp)
print("PASS")
