"""Place the planned documents into files in the real raw formats and write the ground truth.

See the package docstring (``mtnlg/sample_data/__init__.py``) and README.md for the layout
and the ground-truth schema.  Document ids are fixed here and must match the readers':
``<slug>/<file>:<line>`` (Pile, RealNews; 0-based line in the decompressed file),
``<slug>/<file>#<k>`` (WARC; 0-based index over ALL records), ``cc_stories/<file>``.
"""
from __future__ import annotations

import json
import os
import random
from datetime import datetime
from typing import Any

from . import html_page, low_quality, pii_planted, planting
from .plan import Plan, PlannedDoc, make_plan
from .sources import CC_SLUGS, PILE_SLUGS, SLUG_TO_NAME, SOURCE_SLUGS, UNUSED_PILE_SLUG
from .writers import WarcBuilder, truncated_zstd, write_bytes, zstd_bytes

DEFAULT_DOCS = 800
MIN_DOCS = 100  # every planted category needs room
PII_SHARE = 0.3
"""Share of the clean RealNews articles that end with a contact line (e-mail, phone, IP)."""
SITE_NOTE_DOMAIN = "citybeat.example.com"
SITE_NOTE = ("City Beat is published by the City Beat Media Cooperative; "
             "letters to the editor may be edited for length.")
"""A site's standing notice at the end of its clean RealNews articles: the same line on every
page of its hosts, which the ``site_boilerplate`` stage (on in the demo config) removes."""
PAGES_PER_HOST = 1000
"""A news site's pages per host in one source (a CC snapshot, RealNews) at most, about: a larger
sample spreads each site over more hosts (``editions``), as a crawl of more pages meets more
sites.  With a fixed handful of hosts a 1M sample put ~30,000 pages on each, whose text (dealt
from the assets in cycles, so reused at that size) shared whole paragraphs across more than
three pages of a host, and the ``site_boilerplate`` stage emptied 180,147 of its documents
(18 at 100k).  Samples up to ~40,000 documents (where RealNews reaches 3,000 articles over its
3 sites) keep one host per site, byte for byte (checked at 25,000)."""
FORMAT_VERSION = 1
UNATTRIBUTED_PILE = "pile"  # bucket for Pile lines whose subset cannot be read (malformed)
SNAPSHOT_START = {"cc_2020_50": datetime(2020, 11, 23, 15, 0, 0), "cc_2021_04": datetime(2021, 1, 15, 9, 0, 0)}
SNAPSHOT_FILE_STAMP = {"cc_2020_50": "20201123153826-20201123183826", "cc_2021_04": "20210115090412-20210115120412"}


def _editions(pages: int, sites: int) -> int:
    """Hosts per site for ``pages`` pages over ``sites`` sites: at most ~``PAGES_PER_HOST`` each."""
    return max(1, -(-pages // (sites * PAGES_PER_HOST)))


def _chunks(items: list, n_files: int) -> list[list]:
    size = -(-len(items) // n_files)
    return [items[i * size : (i + 1) * size] for i in range(n_files)]


class _Writer:
    """Accumulates files, ids and malformed records for one corpus."""

    def __init__(self, out_dir: str, seed: int) -> None:
        self.out = out_dir
        self.seed = seed
        self.malformed: list[dict[str, Any]] = []
        self.pii: list[dict[str, Any]] = []
        self.site_notes: list[PlannedDoc] = []
        self.site_note_hosts: set[str] = set()

    def rng(self, name: str) -> random.Random:
        return random.Random(f"{self.seed}/{name}")

    def _malformed(self, doc_id: str, location: str, kind: str, source: str, **extra: Any) -> None:
        self.malformed.append({"id": doc_id, "location": location, "kind": kind, "source": source, **extra})

    def pile(self, docs: list[PlannedDoc]) -> None:
        self.rng("pile").shuffle(docs)
        files = _chunks(docs, max(3, len(docs) // 20000))
        for f, part in enumerate(files):
            name = f"{f:02d}.jsonl.zst"
            lines: list[bytes] = []
            for i, d in enumerate(part):
                if i == len(part) // 2 and f < 2:  # one malformed line in each of the first two files
                    loc = f"pile/{name}:{len(lines)}"
                    if f == 0:
                        lines.append(b'{"text": "An unterminated record, cut off by a failed upload, "meta": {"pile_set_')
                        self._malformed(f"{UNATTRIBUTED_PILE}/pile/{name}:{len(lines) - 1}", loc, "bad_json", UNATTRIBUTED_PILE)
                    else:
                        lines.append(b'{"text": "Caf\xe9 cr\xe8me \xff\xfe invalid UTF-8 bytes", "meta": {"pile_set_name": "Pile-CC"}}')
                        self._malformed(f"{UNATTRIBUTED_PILE}/pile/{name}:{len(lines) - 1}", loc, "invalid_utf8",
                                        UNATTRIBUTED_PILE, intended_source="pile_cc")
                d.id = f"{d.source}/pile/{name}:{len(lines)}"
                rec = {"text": d.text, "meta": {"pile_set_name": SLUG_TO_NAME[d.source]}}
                lines.append(json.dumps(rec, ensure_ascii=False).encode())
            write_bytes(os.path.join(self.out, "pile", name), zstd_bytes(b"\n".join(lines) + b"\n"))
        # An extra Pile file whose zstd stream is cut short: a reader gets an error, no lines.
        # Numbered after every data file (29 while there are fewer: the small samples' bytes stay
        # the same); a fixed 29 overwrote a data file from 30 files (~600k documents) on.
        name = f"{max(29, len(files)):02d}.jsonl.zst"
        filler = "\n".join(json.dumps({"text": planting.spam("repeated_lines", self.rng("trunc")),
                                       "meta": {"pile_set_name": "Pile-CC"}}) for _ in range(8))
        write_bytes(os.path.join(self.out, "pile", name), truncated_zstd(filler.encode()))
        self._malformed(f"{UNATTRIBUTED_PILE}/pile/{name}", f"pile/{name}", "truncated_zstd", UNATTRIBUTED_PILE)

    def realnews(self, docs: list[PlannedDoc]) -> None:
        rng = self.rng("realnews")
        rng.shuffle(docs)
        contact = self.rng("pii")  # its own stream: the other files do not change
        domains = ["dailyledger.example.com", "northwind-times.example.com", "citybeat.example.com"]
        editions = _editions(len(docs), len(domains))
        placed = 0  # articles written so far: their host edition (no rng draw)
        for d in docs:
            if d.category == "clean" and contact.random() < PII_SHARE:
                line, kinds = pii_planted.contact_line(contact)
                d.text += "\n\n" + line
                self.pii.append({"id": None, "doc": d, "kinds": kinds})
        for f, part in enumerate(_chunks(docs, max(2, len(docs) // 20000))):
            name = f"realnews-{f:05d}.jsonl"
            lines: list[bytes] = []
            for i, d in enumerate(part):
                if f == 0 and i == len(part) // 2:
                    lines.append(b'{"title": "Markets rally", "text": "Shares rose sharply on')
                    self._malformed(f"realnews/realnews/{name}:{len(lines) - 1}", f"realnews/{name}:{len(lines) - 1}",
                                    "bad_json", "realnews")
                d.id = f"realnews/realnews/{name}:{len(lines)}"
                site = rng.choice(domains)
                edition, placed = placed % editions, placed + 1
                domain = site.replace(".", f"-{edition}.", 1) if edition else site
                if d.category == "clean" and site == SITE_NOTE_DOMAIN:  # no rng: other bytes unchanged
                    d.text += "\n\n" + SITE_NOTE
                    self.site_notes.append(d)
                    self.site_note_hosts.add(domain)
                month, day, year = rng.randint(1, 12), rng.randint(1, 28), rng.randint(2016, 2019)
                rec = {"title": d.title, "text": d.text, "summary": None,
                       "authors": rng.sample(["Jane Smith", "Omar Haddad", "Li Wei", "Ana Costa"], rng.randint(0, 2)),
                       "publish_date": f"{month:02d}-{day:02d}-{year}", "status": "success",
                       "url_used": f"https://{domain}/news/{year}/{month:02d}/{rng.getrandbits(40):x}.html",
                       "domain": domain, "warc_date": f"{year}{month:02d}{day:02d}{rng.randint(0, 235959):06d}",
                       "split": "val" if rng.random() < 0.05 else "train"}
                lines.append(json.dumps(rec, ensure_ascii=False).encode())
            write_bytes(os.path.join(self.out, "realnews", name), b"\n".join(lines) + b"\n")

    def cc_stories(self, docs: list[PlannedDoc]) -> None:
        self.rng("cc_stories").shuffle(docs)
        for i, d in enumerate(docs):
            name = f"story-{i:05d}.txt"
            d.id = f"cc_stories/cc_stories/{name}"
            write_bytes(os.path.join(self.out, "cc_stories", name), d.text.encode() + b"\n")

    def common_crawl(self, slug: str, docs: list[PlannedDoc]) -> None:
        rng = self.rng(slug)
        rng.shuffle(docs)
        snapshot = SLUG_TO_NAME[slug]
        files = _chunks(docs, max(2, len(docs) // 5000))
        editions = _editions(len(docs), len(html_page.SITES))
        for f, part in enumerate(files):
            name = f"CC-MAIN-{SNAPSHOT_FILE_STAMP[slug]}-{f:05d}.warc.gz"
            warc = WarcBuilder(name, snapshot, SNAPSHOT_START[slug], rng)
            for d in part:
                page_rng = random.Random(d.render_seed)
                if d.category == "low_quality":  # its own kind of site, not a news site
                    lq = d.detail["page"]
                    page = html_page.make_page(page_rng, d.render_seed, d.title, d.text, site=lq.site)
                    main = html_page.blocks_html(lq.blocks, low_quality.CSS_CLASS.get(lq.kind, "content"))
                    payload = html_page.render(page, page_rng, main_html=main, style=lq.style)
                else:
                    page = html_page.make_page(page_rng, d.render_seed, d.title, d.text, editions=editions)
                    payload = html_page.render(page, page_rng)
                k = warc.add_page(page.url, payload, page.content_type)
                d.id = f"{slug}/common_crawl/{snapshot}/{name}#{k}"
            if f == len(files) - 1:  # the crawler died mid-write: the last record is cut short
                page = html_page.make_page(rng, 0, "Daily offers", planting.spam("repeated_lines", rng))
                k = warc.add_page(page.url, html_page.render(page, rng), page.content_type, truncate=True)
                self._malformed(f"{slug}/common_crawl/{snapshot}/{name}#{k}", f"common_crawl/{snapshot}/{name}#{k}",
                                "truncated_warc_record", slug)
            write_bytes(os.path.join(self.out, "common_crawl", snapshot, name), warc.getvalue())

    def eval_tasks(self, plan: Plan) -> dict[str, dict]:
        out = {}
        for task, rows in (("lambada", plan.lambada), ("squad_v2", plan.squad)):
            path = f"eval_tasks/{task}.jsonl"
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
            write_bytes(os.path.join(self.out, path), data)
            out[task] = {"file": path, "rows": len(rows)}
        return out


def _ground_truth(plan: Plan, w: _Writer, docs: int, seed: int, tasks: dict) -> dict[str, Any]:
    primary = {d.id: d.category for d in plan.docs}
    primary.update({m["id"]: "malformed" for m in w.malformed})
    by_source: dict[str, dict[str, Any]] = {}
    for d in plan.docs:
        s = by_source.setdefault(d.source, {"records": 0, "documents": 0, "malformed": 0, "by_category": {}})
        s["records"] += 1
        s["documents"] += 1
        s["by_category"][d.category] = s["by_category"].get(d.category, 0) + 1
    for m in w.malformed:
        s = by_source.setdefault(m["source"], {"records": 0, "documents": 0, "malformed": 0, "by_category": {}})
        s["records"] += 1
        s["malformed"] += 1
        s["by_category"]["malformed"] = s["by_category"].get("malformed", 0) + 1
    cat = lambda c: [d for d in plan.docs if d.category == c]  # noqa: E731
    return {
        "format_version": FORMAT_VERSION, "seed": seed, "docs_requested": docs,
        "source_slugs": SOURCE_SLUGS, "unused_pile_subsets": {UNUSED_PILE_SLUG: SLUG_TO_NAME[UNUSED_PILE_SLUG]},
        "totals": {"records": len(primary), "documents": len(plan.docs), "malformed": len(w.malformed),
                   "by_source": dict(sorted(by_source.items()))},
        "eval_tasks": tasks,
        "exact_duplicates": [{"ids": [d.id for d in g], "sources": [d.source for d in g]} for g in plan.exact_groups],
        "near_duplicates": [{"a": a.id, "b": b.id, "jaccard": round(j, 6), "target": t}
                            for a, b, j, t in plan.near_pairs],
        "spam": [{"id": d.id, "kind": d.detail["kind"]} for d in cat("spam")],
        "low_quality": [{"id": d.id, "kind": d.detail["kind"]} for d in cat("low_quality")],
        "non_english": [{"id": d.id, "lang": d.detail["lang"]} for d in cat("non_english")],
        "contaminated": [{"id": d.id, "task": d.detail["task"], "passage": d.detail["passage"]}
                         for d in cat("contaminated")],
        "too_short": [{"id": d.id, "words": len(d.text.split())} for d in cat("too_short")],
        "malformed": w.malformed,
        "clean": [d.id for d in cat("clean")],
        "pii": [{"id": p["doc"].id, "kinds": p["kinds"]} for p in w.pii],
        "site_boilerplate": {"hosts": sorted(w.site_note_hosts), "line": SITE_NOTE,
                             "documents": [d.id for d in w.site_notes]},
        "primary": dict(sorted(primary.items())),
    }


def write_sample_corpus(out_dir: str, docs: int = DEFAULT_DOCS, seed: int = 0) -> dict[str, Any]:
    """Write the sample corpus under ``out_dir``; return (and write) the ground truth."""
    if docs < MIN_DOCS:
        raise ValueError(f"docs must be at least {MIN_DOCS} (got {docs}): every planted category needs room")
    plan = make_plan(docs, seed)
    w = _Writer(out_dir, seed)
    by_source: dict[str, list[PlannedDoc]] = {}
    for d in plan.docs:
        by_source.setdefault(d.source, []).append(d)
    w.pile([d for s in PILE_SLUGS for d in by_source.get(s, [])])
    w.realnews(by_source["realnews"])
    w.cc_stories(by_source["cc_stories"])
    for slug in CC_SLUGS:
        w.common_crawl(slug, by_source[slug])
    truth = _ground_truth(plan, w, docs, seed, w.eval_tasks(plan))
    write_bytes(os.path.join(out_dir, "ground_truth.json"),
                json.dumps(truth, indent=1, ensure_ascii=False).encode() + b"\n")
    return truth
