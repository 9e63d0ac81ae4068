"""Per shape of rms_plans.txt: the export, the best checked candidate, the best of each kind."""
import re
import sys

rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)\s+(\d+) x\s+(\d+)\s+(.*?)\s+([\d.]+) us\s+\d+ GB/s\s+x[\d.]+ vs export\s*(\S*)",
                 line)
    if m:
        key = (m.group(1), int(m.group(2)), int(m.group(3)))
        rows.setdefault(key, []).append((m.group(4), float(m.group(5)), m.group(6)))
for key, cs in rows.items():
    exp = next((c for c in cs if c[0].startswith("export ")), None)
    cp = min((c[1] for c in cs if c[2] == ""), default=float("nan"))
    ok = sorted((c for c in cs if c[2] == "ok"), key=lambda c: c[1])
    fails = [c[0] for c in cs if c[2] == "FAIL"]
    best = ok[0] if ok else None
    pipe = next((c for c in ok if c[0].startswith("pipe")), None)
    print(f"{key[0]:4} {key[1]:6}x{key[2]:<6} export {exp[1] if exp else 0:8.2f} | best "
          f"{best[1]:8.2f} {best[0]:30} | pipe {pipe[1] if pipe else 0:8.2f} "
          f"{pipe[0] if pipe else '':30} | copy {cp:7.2f}" + (f" FAIL {fails}" if fails else ""))
