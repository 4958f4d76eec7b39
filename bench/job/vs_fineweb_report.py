"""Scoring and tables of bench/job/vs_fineweb.py (ours against the FineWeb recipe)."""
from __future__ import annotations

import datetime as dt
import os
import platform
import statistics

from bench.extraction.pages import count_item
from bench.extraction.real_articles import as_normalized

GROUPS = ("read+extract", "filters", "dedup", "tokenize")


def score(kept: list[tuple[str, str]], urls: dict[str, str], by_name: dict[str, dict]) -> dict:
    """What a side kept, against the set: documents, distinct pages, and on the set's English
    pages (evaldata ``lang``) the snippet counts.  A page's text is its first kept copy's (by URL);
    a page with no copy kept scores as empty text.  Text and snippets go through the same
    normalisation (``curation.normalize``: ftfy), so ours' straightened quotes and FineWeb's raw
    ones both match their snippets."""
    from curation.normalize import normalize_text

    text_of: dict[str, str] = {}
    for url, text in sorted(kept):
        if url not in urls:
            raise SystemExit(f"kept document with a URL not in the set: {url}")
        text_of.setdefault(urls[url], text)
    english = sorted(n for n in set(urls.values()) if by_name[n]["lang"] == "English")
    every, on_kept = [0, 0, 0, 0], [0, 0, 0, 0]
    for name in english:
        c = count_item(as_normalized(by_name[name]), normalize_text(text_of.get(name, "")))
        every = [a + b for a, b in zip(every, c)]
        if name in text_of:
            on_kept = [a + b for a, b in zip(on_kept, c)]
    tp, fp, fn, tn = on_kept
    return {"docs_kept": len(kept), "pages_kept": len(text_of), "en_pages": len(english),
            "en_kept": sum(1 for n in english if n in text_of),
            "with_found": every[0] / max(1, every[0] + every[2]),
            "with_found_kept": tp / max(1, tp + fn),
            "without_absent_kept": tn / max(1, fp + tn),
            "snippet_precision_kept": tp / max(1, tp + fp)}


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def side_table(res: dict, records: int, nbytes: int, tb: float) -> list[str]:
    o, f = res["median"]["ours"], res["median"]["fineweb"]
    so, sf = o["score"], f["score"]
    per = {s: 1e3 * r["cpu"] / records for s, r in (("ours", o), ("fineweb", f))}
    per_tb = {s: tb / nbytes * records * per[s] / 1e3 / 3600 for s in per}
    rows = [("| | project (`--config mtnlg`) | FineWeb recipe | FineWeb / ours |", ""),
            ("|---|---|---|---|", "")]
    out = [r for r, _ in rows]
    out.append(f"| wall, whole run | {o['wall']:.1f} s | {f['wall']:.1f} s | {_ratio(f['wall'], o['wall'])} |")
    out.append(f"| CPU, every process of the tree | {o['cpu']:.1f} s | {f['cpu']:.1f} s | "
               f"{_ratio(f['cpu'], o['cpu'])} |")
    out.append(f"| **CPU per page** | **{per['ours']:.1f} ms** | **{per['fineweb']:.1f} ms** | "
               f"**{_ratio(per['fineweb'], per['ours'])}** |")
    tot = {s: max(1e-9, sum(r["stages"].values())) for s, r in (("ours", o), ("fineweb", f))}
    for g in GROUPS:
        a, b = o["stages"].get(g, 0), f["stages"].get(g, 0)
        out.append(f"| stage seconds (share): {g} | {a:.1f} ({100 * a / tot['ours']:.0f}%) | "
                   f"{b:.1f} ({100 * b / tot['fineweb']:.0f}%) | {_ratio(b, a)} |")
    walls_f = ", ".join(f"{k} {v:.1f}" for k, v in f["walls"].items())
    out.append(f"| wall per job / executor, s | job {o['walls']['job']:.1f} | {walls_f} | |")
    po, pf = o["processes"][0], f["processes"][0]
    out.append(f"| peak RSS, largest process | {po['peak_gb']:.2f} GB ({po['name'][:30]}) | "
               f"{pf['peak_gb']:.2f} GB ({pf['name'][:30]}) | |")
    out.append(f"| processes seen / sum of their peak RSS | {len(o['processes'])} / "
               f"{sum(p['peak_gb'] for p in o['processes']):.2f} GB | {len(f['processes'])} / "
               f"{sum(p['peak_gb'] for p in f['processes']):.2f} GB | |")
    out.append(f"| documents kept / distinct pages kept | {so['docs_kept']} / {so['pages_kept']} | "
               f"{sf['docs_kept']} / {sf['pages_kept']} | |")
    out.append(f"| tokens kept (GPT-2) | {o['tokens']:,} | {f['tokens']:,} | |")
    out.append(f"| English pages with a copy kept (of {so['en_pages']}) | {so['en_kept']} | {sf['en_kept']} | |")
    out.append(f"| \"with\" snippets found, all English pages | {100 * so['with_found']:.1f}% | "
               f"{100 * sf['with_found']:.1f}% | |")
    out.append(f"| \"with\" snippets found, kept English pages | {100 * so['with_found_kept']:.1f}% | "
               f"{100 * sf['with_found_kept']:.1f}% | |")
    out.append(f"| \"without\" snippets absent, kept English pages (precision side) | "
               f"{100 * so['without_absent_kept']:.1f}% | {100 * sf['without_absent_kept']:.1f}% | |")
    out.append(f"| CPU-hours per TB of compressed WARC | {per_tb['ours']:,.0f} | {per_tb['fineweb']:,.0f} | "
               f"{_ratio(per_tb['fineweb'], per_tb['ours'])} |")
    return out


def spread_table(res: dict) -> list[str]:
    """Every run's CPU per page per side: min / median / max, and the ratio of the medians."""
    n = res["facts"]["records"]
    per = {s: sorted(1e3 * r["cpu"] / n for r in res["runs"][s]) for s in ("ours", "fineweb")}
    med = {s: statistics.median(v) for s, v in per.items()}
    out = ["| CPU ms per page | runs | min | median | max |", "|---|---|---|---|---|"]
    for s, name in (("ours", "project"), ("fineweb", "FineWeb recipe")):
        out.append(f"| {name} | {len(per[s])} | {per[s][0]:.2f} | {med[s]:.2f} | {per[s][-1]:.2f} |")
    out.append(f"| **FineWeb / project, ratio of medians** | | | **{med['fineweb'] / med['ours']:.2f}x** | |")
    return out


def print_report(results: list[dict], args, differences: list[str], tb: float) -> None:
    first = results[0]["median"]
    print(f"\n# ours vs the FineWeb recipe: {dt.date.today().isoformat()}, {os.cpu_count()} CPUs "
          f"({platform.processor() or platform.machine()}), load1 now {os.getloadavg()[0]:.1f}; "
          f"{args.workers} workers per side, {args.repeats} run(s) per side, alternating (the table: the "
          f"median run by CPU, the lower middle one of an even count)"
          f"{'; VARIANT ' + ', '.join(args.variant) + ' (not the published defaults)' if args.variant else ''}"
          f"{'; dedup OFF on both' if args.no_dedup else ''}")
    print(f"ours: {first['ours']['version']}; FineWeb: {first['fineweb']['version']}")
    for res in results:
        f = res["facts"]
        print(f"\n## {res['pages']} pages: {f['records']:,} records of {f['pages']} pages "
              f"({f['english_records']:,} English records), {f['bytes'] / 1e6:.1f} MB of compressed WARC\n")
        print("\n".join(side_table(res, f["records"], f["bytes"], tb)))
        print("\n" + "\n".join(spread_table(res)))
        print("largest processes (peak RSS GB, CPU s seen):")
        for side in ("ours", "fineweb"):
            procs = res["median"][side]["processes"][:5]
            print(f"  {side:<8} " + "; ".join(f"{p['peak_gb']:.2f} GB {p['cpu']:.0f} s {p['name'][:40]}"
                                              for p in procs))
        for side in ("ours", "fineweb"):
            runs = res["runs"][side]
            for r in runs:  # each run's end and the load then: sides may come from different invocations
                print(f"  {side} run ended {r.get('finished', '?')}, load1 {r.get('load1', float('nan')):.1f}"
                      + (f", reused from {r['reused']}" if r.get("reused") else ""))
            if len(runs) > 1:
                print(f"  {side} runs, CPU s: " + ", ".join(f"{r['cpu']:.1f}" for r in runs))
    if len(results) > 1:
        print("\n## How the ratio moves with the language mix\n")
        print("| set | English share of records | ours CPU ms/page (median) | FineWeb CPU ms/page (median) | FineWeb / ours | "
              "ours read+extract share of stage s | FineWeb read+extract share |")
        print("|---|---|---|---|---|---|---|")
        for res in results:
            f, m = res["facts"], res["median"]
            per = {s: 1e3 * res["cpu_median"][s] / f["records"] for s in ("ours", "fineweb")}
            share = {s: m[s]["stages"]["read+extract"] / max(1e-9, sum(m[s]["stages"].values()))
                     for s in per}
            print(f"| {res['pages']} | {100 * f['english_records'] / f['records']:.0f}% | {per['ours']:.1f} | "
                  f"{per['fineweb']:.1f} | {per['fineweb'] / per['ours']:.2f}x | {100 * share['ours']:.0f}% | "
                  f"{100 * share['fineweb']:.0f}% |")
    print("\nSettings that differ, and why:")
    for d in differences:
        print(f"- {d}")
    print("\nStage seconds: ours = run.json stage_seconds (worker seconds in each stage's DoFns, summed "
          "over workers); FineWeb = each step's time in its executors' stats.json (same meaning). "
          "Both are wall time inside the steps, so other load on the machine inflates them: read their shares. "
          "CPU = user + sys of every process of the side's tree (reaped by the meter as subreaper; "
          "'sampled' in the run lines is the /proc sampling check). CPU-hours per TB = pages per TB of "
          "this set's compressed WARC x CPU per page (bench.job.cost_per_tb's projection).")
