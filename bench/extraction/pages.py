"""The annotated page sets the extraction benchmarks score against: where they are, how a page is
read, and how one extractor output is scored (upstream's tests/eval_common.py)."""
from __future__ import annotations

import gzip
import json
import os
import re

from bench.common import REPO

ROOT = str(REPO)
# The evaluation pages live next to the checkout (../shared/data/extract_eval; a worktree
# one level deeper also finds them); $EXTRACT_EVAL_DIR or --eval-dir override.
DEFAULT_EVAL = os.environ.get("EXTRACT_EVAL_DIR") or next(
    (p for p in (os.path.join(os.path.dirname(ROOT), "shared", "data", "extract_eval"),
                 os.path.join(os.path.dirname(os.path.dirname(ROOT)), "shared", "data", "extract_eval"))
     if os.path.isdir(p)), os.path.join(os.path.dirname(ROOT), "shared", "data", "extract_eval"))


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def count_item(item: dict, result: str | None) -> tuple[int, int, int, int]:
    """(tp, fp, fn, tn) of one page, as upstream's eval_common.count_item."""
    if isinstance(result, str):
        out = norm(result)
        tp = sum(1 for w in item["with"] if norm(w) in out)
        fp = sum(1 for w in item["without"] if norm(w) in out)
    else:
        tp = fp = 0
    return tp, fp, len(item["with"]) - tp, len(item["without"]) - fp


def load_pages(eval_dir: str) -> list[tuple[str, dict, bytes]]:
    with open(os.path.join(eval_dir, "evaldata.json"), encoding="utf-8") as f:
        pages = json.load(f)["pages"]
    out = []
    for name, item in sorted(pages.items()):
        with gzip.open(os.path.join(eval_dir, "html", name), "rb") as f:
            out.append((name, item, f.read()))
    return out
