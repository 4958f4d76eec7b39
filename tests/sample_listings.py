"""The sample corpus's Common Crawl files named as Common Crawl names a crawl's files (a gzip
path listing per crawl), and the demo config that reads them: shared by the https tests on the
local runner and on the external worker pool."""
from __future__ import annotations

import glob
import gzip
import hashlib
import os
from pathlib import Path

import pyarrow.parquet as pq
import yaml

REPO = Path(__file__).resolve().parent.parent
CRAWLS = {"cc_2020_50": "CC-2020-50", "cc_2021_04": "CC-2021-04"}


def write_listings(root: Path) -> None:
    """One listing per crawl (gzip, paths relative to ``root``)."""
    for crawl in CRAWLS.values():
        lines = sorted(os.path.relpath(p, root)
                       for p in glob.glob(str(root / "common_crawl" / crawl / "*.warc.gz")))
        (root / "common_crawl" / f"{crawl}.paths.gz").write_bytes(
            gzip.compress(("\n".join(lines) + "\n").encode()))


def source_config(root: str, tasks: str, listing: bool, http: dict | None = None,
                  name: str = "https") -> dict:
    """The demo config on the sample's Common Crawl files (by listing, or by glob) and RealNews."""
    cfg = yaml.safe_load((REPO / "data_manifests" / "sources" / "demo.yaml").read_text())
    if listing:
        cc = [{"reader": "warc", "source": s, "listing": f"common_crawl/{c}.paths.gz"}
              for s, c in CRAWLS.items()]
        realnews = ["realnews/realnews-00000.jsonl", "realnews/realnews-00001.jsonl"]
    else:
        cc = [{"reader": "warc", "source": s, "paths": [f"common_crawl/{c}/*.warc.gz"]}
              for s, c in CRAWLS.items()]
        realnews = ["realnews/*.jsonl"]
    cfg.update(name=name, input_root=root,
               inputs=cc + [{"reader": "realnews", "source": "realnews", "paths": realnews}])
    cfg["decontamination"]["tasks"] = [tasks]
    if http:
        cfg["http"] = http
    return cfg


def kept_ids(run: Path) -> list[str]:
    files = sorted(glob.glob(str(run / "stats" / "documents" / "**" / "*.parquet"), recursive=True))
    return sorted(r["id"] for f in files for r in pq.read_table(f, columns=["id", "outcome"]).to_pylist()
                  if r["outcome"] == "kept")


def tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}
