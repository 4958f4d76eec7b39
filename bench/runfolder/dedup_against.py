"""A new snapshot deduped against an existing run (``curate --dedup-against``) vs one joint run.

    .venv/bin/python -m bench.runfolder.dedup_against --docs 100000 [--repeats 3] [--workers 2] [--keep DIR]

Writes two synthetic snapshots of ``--docs`` English-like documents each (RealNews JSONL: the old
one as source ``realnews``, the new one as ``cc_2021_04``, which ranks below it).  The new
snapshot plants 10% exact copies of old documents (whitespace changed), 10% near copies of
old documents (3 words replaced: word-5-gram Jaccard ~0.85), 5% near copies of other new
documents; the rest is new text.  Curates the old snapshot once (the existing run), then, in
alternating order, ``--repeats`` times each:

  against   mtnlg curate (new snapshot) --dedup-against OLD_RUN
  joint     mtnlg curate (old + new snapshots)

both ``--staged`` with the demo config (decontamination off: no task files), ``--workers``
local worker processes, each a subprocess timed for wall clock.  Prints medians, the ratio
against/joint for the whole job and for the dedup stage, and whether the kept documents of
(old run + against run) equal the joint run's.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow.parquet as pq
import yaml
from bench.common import REPO, children_cpu

WORDS = ("the a of and to in is was for on with as by at from that this it he she they we you "
         "river town library people age read talk history science music weather season year "
         "children played near old bridge farmers sold bread cheese apples market morning evening "
         "council school teacher garden road winter summer spring autumn storm rain light house "
         "family friend letter story book paper news city country village field forest hill lake "
         "boat train station doctor nurse student work money price bank shop street window door "
         "table chair kitchen dinner breakfast walk run write build open close begin end small "
         "large long short early late new good great little").split()


def prose(rnd: random.Random, words: int = 200) -> str:
    out, n = [], 0
    while n < words:
        k = rnd.randint(8, 16)
        out.append(" ".join(rnd.choice(WORDS) for _ in range(k)).capitalize() + ".")
        n += k
    return " ".join(out)


def near(text: str, rnd: random.Random, n: int = 3) -> str:
    words = text.split(" ")
    for i in rnd.sample(range(5, len(words) - 5), n):
        words[i] = f"zq{rnd.randrange(10**9)}"
    return " ".join(words)


def respaced(text: str) -> str:
    """The same text with other whitespace: an exact duplicate to the dedup hash (which lowercases
    and collapses whitespace), other bytes on disk.  Not upper-cased: the language filter would
    remove most of those before dedup sees them."""
    return "  " + text.replace(". ", ".\n\n") + "\n"


def write_snapshots(root: str, docs: int, seed: int = 0) -> None:
    rnd = random.Random(seed)
    # (title, text): the RealNews reader puts the title in front of the text, so an exact copy
    # keeps the old title (a re-crawl of the same article); every other document has its own.
    old = [(f"old {i}", prose(rnd)) for i in range(docs)]
    new: list[tuple[str, str]] = []
    for i in range(docs):
        r, title = rnd.random(), f"new {i}"
        if r < 0.10:
            t, text = rnd.choice(old)
            new.append((t, respaced(text)))
        elif r < 0.20:
            new.append((title, near(rnd.choice(old)[1], rnd)))
        elif r < 0.25 and new:
            new.append((title, near(rnd.choice(new)[1], rnd)))
        else:
            new.append((title, prose(rnd)))
    for name, items in (("old", old), ("new", new)):
        os.makedirs(os.path.join(root, name), exist_ok=True)
        per = 10_000
        for k in range(0, len(items), per):
            with open(os.path.join(root, name, f"part-{k // per:05d}.jsonl"), "w") as f:
                for j, (title, text) in enumerate(items[k:k + per]):
                    f.write(json.dumps({"title": title, "text": text,
                                        "url_used": f"https://{name}.example/{k + j}"}) + "\n")


def write_config(path: str, root: str, which: list[str]) -> str:
    with open(os.path.join(REPO, "data_manifests", "sources", "demo.yaml")) as f:
        cfg = yaml.safe_load(f)
    source = {"old": "realnews", "new": "cc_2021_04"}
    cfg["inputs"] = [{"reader": "realnews", "source": source[w], "paths": [f"{w}/*.jsonl"]} for w in which]
    cfg["input_root"] = root
    cfg["decontamination"] = {"enabled": False}
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return path


def curate(cfg: str, out: str, workers: int, *extra: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one curate subprocess (CPU: user + sys of it and its waited-for
    worker processes)."""
    cmd = [sys.executable, "-m", "pipelines.curate", "--config", cfg, "--output", out, "--staged",
           "--direct_running_mode=multi_processing", f"--direct_num_workers={workers}", *extra]
    t0, c0 = time.perf_counter(), children_cpu()
    subprocess.run(cmd, check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0, children_cpu() - c0


def kept(run: str) -> set[str]:
    ids: set[str] = set()
    for p in glob.glob(os.path.join(run, "documents", "*", "*.parquet")):
        ids.update(pq.read_table(p, columns=["id"]).column("id").to_pylist())
    return ids


def dedup_wall(run: str) -> float:
    return json.load(open(os.path.join(run, "run.json")))["stage_wall_seconds"]["dedup"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=10_000, help="documents per snapshot")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", default=None, help="work folder to keep (default: a temp dir, deleted)")
    a = ap.parse_args()
    tmp = a.keep or tempfile.mkdtemp(prefix="bench_against_")
    try:
        t0 = time.perf_counter()
        write_snapshots(os.path.join(tmp, "raw"), a.docs)
        print(f"snapshots: 2 x {a.docs} documents in {time.perf_counter() - t0:.1f}s", flush=True)
        cfgs = {w: write_config(os.path.join(tmp, f"{w}.yaml"), os.path.join(tmp, "raw"), ws)
                for w, ws in (("old", ["old"]), ("new", ["new"]), ("joint", ["old", "new"]))}
        old_run = os.path.join(tmp, "old_run")
        print(f"old run: {curate(cfgs['old'], old_run, a.workers)[0]:.1f}s", flush=True)
        times: dict[str, list[float]] = {"against": [], "joint": []}
        cpu: dict[str, list[float]] = {"against": [], "joint": []}
        dedup: dict[str, list[float]] = {"against": [], "joint": []}
        same = []
        for r in range(a.repeats):
            order = ["against", "joint"] if r % 2 == 0 else ["joint", "against"]
            for side in order:
                out = os.path.join(tmp, f"{side}_run")
                extra = ["--dedup-against", old_run] if side == "against" else []
                t, c = curate(cfgs["new" if side == "against" else "joint"], out, a.workers, *extra)
                times[side].append(t)
                cpu[side].append(c)
                dedup[side].append(dedup_wall(out))
                print(f"repeat {r} {side}: wall {t:.1f}s, CPU {c:.1f}s (dedup stage wall "
                      f"{dedup[side][-1]:.1f}s)", flush=True)
            o, n = kept(old_run), kept(os.path.join(tmp, "against_run"))
            j = kept(os.path.join(tmp, "joint_run"))
            same.append(o | n == j)
            # Per repeat, so a run cut short by a time limit still says what it measured.
            print(f"repeat {r} kept: old {len(o)} + against {len(n)} = {len(o | n)}; joint {len(j)}; "
                  f"same kept set: {same[-1]}", flush=True)
        med = {k: statistics.median(v) for k, v in times.items()}
        dmed = {k: statistics.median(v) for k, v in dedup.items()}
        cmed = {k: statistics.median(v) for k, v in cpu.items()}
        print(f"\nmedian wall: against {med['against']:.1f}s, joint {med['joint']:.1f}s, "
              f"ratio against/joint {med['against'] / med['joint']:.2f}")
        print(f"median CPU: against {cmed['against']:.1f}s, joint {cmed['joint']:.1f}s, "
              f"ratio against/joint {cmed['against'] / cmed['joint']:.2f}")
        print(f"median dedup stage: against {dmed['against']:.1f}s, joint {dmed['joint']:.1f}s, "
              f"ratio {dmed['against'] / dmed['joint']:.2f}")
        j = kept(os.path.join(tmp, "joint_run"))
        o, n = kept(old_run), kept(os.path.join(tmp, "against_run"))
        print(f"kept: old {len(o)} + against {len(n)} = {len(o | n)}; joint {len(j)}; "
              f"same kept set in every repeat: {all(same)}")
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
