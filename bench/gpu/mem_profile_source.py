"""Reads `ncu --page source --csv --print-source sass` output (mem_profile.sh writes it) and
prints, per profiled kernel, the instructions executed, the warp-stall samples, and the SASS
lines holding most samples with their main stall reasons.
Usage: mem_profile_source.py FILE.csv [top=12] [kernel substring]"""
import csv
import sys


def sections(path):
    name, header, rows = None, None, []
    for rec in csv.reader(open(path, newline="")):
        if not rec:
            continue
        if rec[0] == "Kernel Name":
            if name and rows:
                yield name, header, rows
            name, header, rows = rec[1], None, []
        elif rec[0] == "Address":
            header = rec
        elif header:
            rows.append(dict(zip(header, rec)))
    if name and rows:
        yield name, header, rows


def num(v):
    try:
        return float(v.replace(",", ""))
    except (ValueError, AttributeError):
        return 0.0


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    want = sys.argv[3] if len(sys.argv) > 3 else ""
    seen = set()
    for i, (name, header, rows) in enumerate(sections(path)):
        if want not in name:
            continue
        stalls = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
        samples = sum(num(r["Warp Stall Sampling (All Samples)"]) for r in rows)
        inst = sum(num(r["Instructions Executed"]) for r in rows)
        short = name.split("(")[0].replace("void ", "")[:70]
        key = (short, inst, samples)
        if key in seen:  # the same launch listed twice
            continue
        seen.add(key)
        by = {s: sum(num(r[s]) for r in rows) for s in stalls}
        main_st = ", ".join(f"{s[6:]} {v / max(samples, 1):.0%}"
                            for s, v in sorted(by.items(), key=lambda kv: -kv[1])[:5] if v)
        print(f"== [{i}] {short}: {len(rows)} SASS lines, {inst:.0f} warp-instructions executed, "
              f"{samples:.0f} samples ({main_st})")
        for r in sorted(rows, key=lambda r: -num(r["Warp Stall Sampling (All Samples)"]))[:top]:
            s = num(r["Warp Stall Sampling (All Samples)"])
            if not s:
                break
            why = ", ".join(f"{h[6:]} {num(r[h]):.0f}" for h in stalls if num(r[h]) >= max(1, s / 5))
            print(f"  {r['Address']:>6} {s:5.0f}  {r['Source'][:60]:60} {why}")


if __name__ == "__main__":
    main()
