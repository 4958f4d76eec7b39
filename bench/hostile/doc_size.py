"""CPU per MB of every per-document step of the curate job, on documents of 10 KB, 1 MB and 10 MB.

    .venv/bin/python -m bench.hostile.doc_size [--sizes 10000,1000000,10000000] [--kinds ...]
        [--stages ...] [--baseline efa4313] [--batch-mb 1]

Every per-document step must cost time linear in the document's size (issue 45): this times
each step of the curate job on twelve documents, generated deterministically (no files read
but the package's own assets), four kinds at each size:

* ``prose``: Pile Wikipedia-style articles of the sample corpus generator
  (``mtnlg.sample_data.families.wikipedia``: real English Wikipedia sentences), with every word
  but the 200 most frequent swapped for one of the same length, by a permutation that changes
  every 500,000 characters (``prose``), so that the 10 MB document is not four copies of the
  assets' ~2.5 MB of sentences: the same mix of text at every size, each smaller document a
  prefix of the same stream.  (Before, the 10 MB prose was those four copies, which made the
  repetition rules' cost per MB 3x the 10 KB's for the repeats, not for the size.)
* ``cjk``: Chinese-like text without spaces (3,000 CJK ideographs drawn at random, "，" and
  "。", a line break after each paragraph of 40-300 characters).
* ``line``: one line without spaces or line breaks (base64 alphabet, as data: URIs and
  embedded blobs are).
* ``repeated`` (not in the default set): prose a quarter of the document long, four times, the
  worst case of the repetition rules at equal repetition at every size.
* ``html``: a news page of the sample corpus (``mtnlg.sample_data.html_page``: menu, cookie
  banner, sidebar, footer) around the prose, one ``<p>`` per paragraph, as a WARC response.

Steps, in the job's order, each fed what the step before it gave (an untimed pass first):
``read`` (the Pile JSONL reader; for ``html`` the WARC reader: HTTP body, depth guard, charset,
main-text extraction), ``normalize``, ``pii``, ``language``, ``heuristics``, ``quality`` (a
small fastText model trained here), ``dedup`` (the per-document dedup record: exact hash and
MinHash signature with its shingle set), ``decontaminate`` (13-gram look-up against the
held-out articles' n-grams) and ``tokenize`` (GPT-2).  Each figure is CPU seconds of this
process per MB of document (as read, in bytes).  A size below ``--batch-mb`` is timed on a
batch of that many MB of different documents of the size (100 of 10 KB), cut from one
generated stream, so that no step's cache (the tokenizer's word cache) sees a text twice; a
single larger document is timed twice and the lower figure kept (but for tokenize), as the
page faults of a 10 MB step's arrays vary with the machine's memory traffic.  The last column
is the 10 MB figure over the 10 KB one (must be <= 2).  Where the step's code differs from
``--baseline`` (a commit; ``none`` to skip), the baseline's version runs on the same input in
the same process, alternating with this tree's, and a second table gives before / now.

A benchmark, not a test: figures depend on the machine and its load; only ratios taken in the
same run mean anything.
"""
from __future__ import annotations

import argparse
import functools
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

from bench.common import REPO, load_module_at

ROOT = str(REPO)
KINDS = ("prose", "cjk", "line", "html")
STAGES = ("read", "normalize", "pii", "language", "heuristics", "quality", "dedup", "decontaminate",
          "tokenize")
# The modules behind each step whose baseline version can be loaded side by side, in import
# order; an import of an earlier one inside a later one is pointed at the baseline copy.
BASELINE_MODULES = {
    "heuristics": ("curation/repetition.py", "curation/heuristics.py"),
    "dedup": ("curation/minhash.py", "curation/dedup_records.py"),
    "normalize": ("curation/normalize.py",),
    "pii": ("curation/pii.py",),
    "decontaminate": ("curation/decontamination.py",),
}


# -- documents ----------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z]+")
SEGMENT = 500_000  # characters of prose stream per word mapping: under one pass of the pool


def _articles(nbytes: int, seed: int) -> str:
    """The generator's Wikipedia-style articles, one after another, to ``nbytes``."""
    from mtnlg.sample_data.families import wikipedia
    from mtnlg.sample_data.text_pool import build_pools

    pools, rng = build_pools(seed), random.Random(seed)
    articles, size = [], 0
    while size < nbytes:
        _, text = wikipedia(pools, rng, 2000)
        articles.append(text)
        size += len(text) + 2
    return "\n\n".join(articles)


@functools.lru_cache(maxsize=2)
def _vocabulary(seed: int) -> dict[int, list[str]]:
    """The words to permute, by length: the pool's whole vocabulary (3 MB of articles cover
    one pass), less its 200 most frequent words; one vocabulary for every size, so that a
    smaller stream is a prefix of a larger one."""
    counts: dict[str, int] = {}
    for w in _WORD.findall(_articles(3_000_000, seed)):
        counts[w.lower()] = counts.get(w.lower(), 0) + 1
    fixed = set(sorted(counts, key=lambda w: (-counts[w], w))[:200])
    by_len: dict[int, list[str]] = {}
    for w in sorted(counts):
        if w not in fixed:
            by_len.setdefault(len(w), []).append(w)
    return by_len


def prose(nbytes: int, seed: int = 0) -> str:
    """``nbytes`` (about) of English prose without repeated copies, the same mix at every size:
    Wikipedia-style articles of the sample generator, one after another (the stream for a
    smaller size is a prefix of the stream for a larger one), with every word but the 200 most
    frequent replaced, segment by segment (``SEGMENT`` characters), by another word of the
    stream's vocabulary of the same length through a permutation seeded by the segment's
    number.  The pool holds ~2.5 MB of distinct sentences and starts again when it ends, so
    unmapped the 10 MB stream would be four copies of one text; mapped, a sentence met again
    in a later pass (>= 2.5 MB later, so in another segment) reads differently, while word
    lengths, the frequent (stop) words, punctuation, sentences and paragraphs keep their
    natural mix, and repeats inside a segment (a page's own recurring phrases) stay."""
    stream = _articles(nbytes, seed)
    by_len = _vocabulary(seed)
    out, start, k = [], 0, 0
    while start < len(stream):
        end = stream.find("\n\n", start + SEGMENT)
        end = len(stream) if end < 0 else end
        seg_rng, mapping = random.Random(f"{seed}-{k}"), {}
        for words in by_len.values():
            shuffled = words[:]
            seg_rng.shuffle(shuffled)
            mapping.update(zip(words, shuffled))

        def swap(m: re.Match, mapping=mapping) -> str:
            w = m.group()
            v = mapping.get(w.lower())
            if v is None:
                return w
            return v.upper() if w.isupper() and len(w) > 1 else v.capitalize() if w[0].isupper() else v
        out.append(_WORD.sub(swap, stream[start:end]))
        start, k = end, k + 1
    return "".join(out)


def cjk(nbytes: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    chars = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
    paragraphs, size = [], 0
    while size < nbytes:
        n = rng.randint(40, 300)
        para = "".join(c + "，" if rng.random() < 0.06 else c for c in rng.choices(chars, k=n)) + "。"
        paragraphs.append(para)
        size += len(para.encode()) + 1
    return "\n".join(paragraphs)


def line(nbytes: int, seed: int = 0) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    return "".join(random.Random(seed).choices(alphabet, k=nbytes))


def html_page(body: str, seed: int = 0) -> bytes:
    from mtnlg.sample_data.html_page import make_page, render

    rng = random.Random(seed)
    page = make_page(rng, seed, "A long page", body)
    page = page.__class__(page.url, page.title, page.body, "utf-8", "both", page.site)
    return render(page, rng)


def warc_bytes(payload: bytes) -> bytes:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True, warc_version="WARC/1.0")
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=UTF-8")], protocol="HTTP/1.1")
    writer.write_record(writer.create_warc_record("http://www.example.com/long.html", "response",
                                                  payload=io.BytesIO(payload), http_headers=http))
    return buf.getvalue()


def documents(kind: str, nbytes: int, count: int) -> tuple[list[tuple[bytes, str]], int]:
    """``count`` documents of ``nbytes`` each, cut from one generated stream (different texts,
    so no cache of any step sees a document twice), as ``(bytes as the reader gets them, the
    reader's format)``, and their total size in bytes (the pages' for html, the texts' UTF-8
    for the others)."""
    chrome = 2500 if kind == "html" else 0  # the page around the article is ~2.5 KB
    piece = max(nbytes - chrome, 1000)
    if kind == "repeated":  # a quarter of the document, four times
        piece //= 4
    stream = {"prose": prose, "html": prose, "cjk": cjk, "line": line, "repeated": prose}[kind](
        piece * count).encode()
    texts = [stream[i * piece:(i + 1) * piece].decode("utf-8", "ignore").strip() for i in range(count)]
    if kind == "repeated":
        texts = ["\n\n".join([t] * 4) for t in texts]
    if kind == "html":
        pages = [html_page(t, i) for i, t in enumerate(texts)]
        return [(warc_bytes(p), "warc") for p in pages], sum(map(len, pages))
    lines = [json.dumps({"text": t, "meta": {"pile_set_name": "Wikipedia (en)"}}, ensure_ascii=False)
             for t in texts]
    return [((x + "\n").encode(), "pile") for x in lines], sum(len(t.encode()) for t in texts)


# -- the steps ----------------------------------------------------------------------------------

def load_baseline(commit: str, paths: tuple[str, ...]) -> dict[str, object]:
    """The modules at ``paths`` as of ``commit``, each imported as ``baseline_<name>`` and
    importing the earlier ones' baseline copies."""
    modules, renames = {}, {}
    for path in paths:
        dotted = path[:-3].replace("/", ".")
        name = "baseline_" + os.path.basename(path)[:-3]
        module = load_module_at(commit, path, name, renames)
        modules[dotted], renames[dotted] = module, name
    return modules


def changed_since(commit: str, paths) -> bool:
    return subprocess.run(["git", "-C", ROOT, "diff", "--quiet", commit, "--", *paths]).returncode != 0


def quality_model(workdir: str) -> str:
    """A two-label fastText model (the stage's cost does not depend on how good it is)."""
    import fasttext

    path = os.path.join(workdir, "quality.train")
    good, bad = prose(200_000, seed=1).split(), ["buy", "now", "cheap", "click", "casino", "free", "deal"]
    rng = random.Random(0)
    with open(path, "w") as f:
        for i in range(400):
            f.write("__label__hq " + " ".join(good[i * 40:(i + 1) * 40]) + "\n")
            f.write("__label__lq " + " ".join(rng.choices(bad, k=40)) + "\n")
    model = fasttext.train_supervised(input=path, epoch=2, dim=16, thread=1, verbose=0)
    model.save_model(os.path.join(workdir, "quality.bin"))
    return os.path.join(workdir, "quality.bin")


def steps(workdir: str, modules: dict | None = None) -> dict:
    """{step: fn(input) -> output}; ``modules``: baseline copies to use where given."""
    import curation.dedup_records as dedup_records
    import curation.heuristics as heuristics
    import curation.normalize as normalize
    import curation.pii as pii
    import curation.decontamination as decontamination
    from curation.fuzzy_config import FuzzyDedupConfig
    from curation.language import LanguageIdentifier
    from curation.quality import QualityScorer
    from curation.readers import read_pile, read_warc
    from curation.tokenizer import GPT2, load_tokenizer
    from mtnlg.sample_data.text_pool import eval_source_articles

    m = {"curation.heuristics": heuristics, "curation.normalize": normalize, "curation.pii": pii,
         "curation.dedup_records": dedup_records, "curation.decontamination": decontamination,
         **(modules or {})}
    pii_cfg = m["curation.pii"].PiiConfig(enabled=True)
    fuzzy = FuzzyDedupConfig(enabled=True)
    identifier = LanguageIdentifier()
    scorer = QualityScorer(quality_model(workdir))
    held_out = ["\n\n".join(a["paragraphs"]) for a in eval_source_articles()]
    index = decontamination.build_task_ngrams({"held_out": held_out})
    tok = load_tokenizer(GPT2)

    def read(item):
        data, fmt = item
        records = (read_warc(io.BytesIO(data), "doc.warc.gz", "cc") if fmt == "warc"
                   else read_pile(io.BytesIO(data), "doc.jsonl"))
        (doc,) = list(records)
        return doc

    def decontaminate(doc):
        d = m["curation.decontamination"]
        matches = d.find_matches(doc.text, index)
        return d.split_document(doc.text, matches) if matches else None

    def with_text(doc, text):
        doc.text = text  # on the step's own copy (copy_doc)
        return doc

    return {
        "read": read,
        "normalize": lambda d: with_text(d, m["curation.normalize"].normalize_text(d.text)),
        "pii": lambda d: with_text(d, m["curation.pii"].redact_pii(d.text, pii_cfg)[0]),
        "language": lambda d: (identifier.predict(d.text), d)[1],
        "heuristics": lambda d: (m["curation.heuristics"].score_document(d.text), d)[1],
        "quality": lambda d: (scorer.score(d.text), d)[1],
        "dedup": lambda d: (m["curation.dedup_records"].dedup_records([d], fuzzy), d)[1],
        "decontaminate": lambda d: (decontaminate(d), d)[1],
        "tokenize": lambda d: (tok.encode(d.text, append_eod=True), d)[1],
    }


def copy_doc(doc):
    from dataclasses import replace

    return replace(doc)  # steps replace the text on their own copy


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,1000000,10000000", help="document sizes in bytes")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--baseline", default="efa4313", help="commit to time side by side, or none")
    ap.add_argument("--batch-mb", type=float, default=1.0,
                    help="sizes below this run as a batch of documents of about this many MB")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    kinds, stages = args.kinds.split(","), args.stages.split(",")

    with tempfile.TemporaryDirectory(prefix="bench_doc_size_") as workdir:
        now = steps(workdir)
        before = {}
        if args.baseline != "none":
            changed = {s: p for s, p in BASELINE_MODULES.items()
                       if s in stages and changed_since(args.baseline, p)}
            paths = tuple(dict.fromkeys(p for ps in changed.values() for p in ps))
            if paths:
                base = steps(workdir, load_baseline(args.baseline, paths))
                before = {s: base[s] for s in changed}
        for kind in kinds:  # first-call costs (tables, models) out of the figures
            d = now["read"](documents(kind, 20_000, 1)[0][0])
            for s in STAGES[1:]:
                if s in before:
                    before[s](copy_doc(d))
                d = now[s](copy_doc(d))

        per_mb = {}  # (side, stage, kind, size) -> CPU s per MB
        for kind in kinds:
            for size in sizes:
                count = max(1, round(args.batch_mb * 1e6 / size))
                items, nbytes = documents(kind, size, count)
                cpu = {(side, s): 0.0 for side in ("now", "before") for s in stages}
                for k, item in enumerate(items):
                    # An untimed pass first gives every step its input and leaves the allocator
                    # holding memory for this size (else the first side to run a 10 MB step
                    # pays the page faults of its arrays: up to 3x a step's own CPU).  It stops
                    # before tokenize, the one step with a cache (of words) a pass would fill.
                    inputs, x = {"read": item}, now["read"](item)
                    for s in STAGES[1:]:
                        inputs[s] = x
                        if s != "tokenize":
                            x = now[s](copy_doc(x))
                    for s in stages:
                        sides = ["now", "before"] if s in before else ["now"]
                        order = sides if k % 2 == 0 else sides[::-1]  # alternate the order
                        if count == 1 and s != "tokenize":  # one large document: the lower of
                            order = order + order[::-1]  # two runs (memory effects vary ~3x)
                        best: dict[str, float] = {}
                        for side in order:
                            arg = inputs[s] if s == "read" else copy_doc(inputs[s])
                            t0 = time.process_time()
                            (now if side == "now" else before)[s](arg)
                            t = time.process_time() - t0
                            best[side] = min(best.get(side, t), t)
                        for side, t in best.items():
                            cpu[side, s] += t
                for (side, s), t in cpu.items():
                    if side == "now" or s in before:
                        per_mb[side, s, kind, size] = t / (nbytes / 1e6)
                print(f"done {kind} {size} x {count} ({nbytes / 1e6:.2f} MB)", file=sys.stderr, flush=True)

    def label(size: int) -> str:
        return f"{size / 1e6:g} MB" if size >= 1_000_000 else f"{size / 1e3:g} KB"

    print(f"CPU seconds per MB of document (this tree); last column: {label(sizes[-1])} / {label(sizes[0])}")
    head = f"{'step':<14}{'kind':<9}" + "".join(f"{label(s):>10}" for s in sizes) + f"{'ratio':>8}"
    print(head)
    worst = 0.0
    for s in stages:
        for kind in kinds:
            vals = [per_mb["now", s, kind, size] for size in sizes]
            ratio = vals[-1] / vals[0] if vals[0] else float("nan")
            worst = max(worst, ratio)
            print(f"{s:<14}{kind:<9}" + "".join(f"{v:10.4f}" for v in vals) + f"{ratio:8.2f}")
    print(f"largest ratio: {worst:.2f} (must be <= 2)")
    if before:
        print(f"\nBaseline {args.baseline} side by side (CPU s per MB: before / now, and before over now)")
        for s in before:
            for kind in kinds:
                cells = [f"{per_mb['before', s, kind, size]:.4f}/{per_mb['now', s, kind, size]:.4f}"
                         f" ({per_mb['before', s, kind, size] / per_mb['now', s, kind, size]:.1f}x)"
                         for size in sizes]
                print(f"{s:<14}{kind:<9}" + "  ".join(f"{c:>26}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
