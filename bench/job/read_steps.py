"""The read stage's per-document steps of this tree against another checkout's, side by side in one
process: CPU per step, and the outputs compared.

    mtnlg sample-data --docs 25000 /tmp/sample-25000
    git worktree add /work/wt/base-9815732 9815732
    .venv/bin/python -m bench.job.read_steps /tmp/sample-25000 --baseline /work/wt/base-9815732

The sample's records are read once (this tree's readers, the demo config's inputs); then, chunk by
chunk (``--chunk`` documents, the side going first alternating), each side runs the steps the demo
config runs on them: normalize -> PII redaction -> language id (not on ``github``) -> the site
boilerplate's line hashes (on the pages kept in English from Common Crawl and RealNews, the
sources with URLs) -> the heuristics' scores and decision (not on ``github``, ``arxiv``,
``stackexchange``).  Each side has one language identifier for the whole run (as one worker has).
Reported: CPU seconds (``time.process_time``) per step and side, their ratio, and whether every
step's output was the same on both sides.  The per-document functions only: no Beam, no counters,
no documents copied between steps (``bench/job/scale.py --baseline`` measures the whole job).
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections import Counter
from pathlib import Path
from bench.common import REPO


MODULES = ("infra.compat.ftfy", "curation.normalize", "curation.pii", "curation.language",
           "curation.site_boilerplate", "curation.word_counts", "curation.repetition", "curation.heuristics")
STEPS = ("normalize", "pii", "language", "site_boilerplate", "heuristics")
NO_LANGUAGE, NO_HEURISTICS = {"github"}, {"github", "arxiv", "stackexchange"}


def load(tree: Path) -> dict:
    """The step modules of ``tree``, loaded under their own names for the time of loading (each
    imports the others of its tree), then removed from ``sys.modules``."""
    import curation.document  # noqa: F401 - shared by both sides (unchanged)
    import curation.lazy_model  # noqa: F401
    import infra.hashing  # noqa: F401

    mods = {}
    for name in MODULES:
        spec = importlib.util.spec_from_file_location(name, tree / (name.replace(".", "/") + ".py"))
        mods[name] = importlib.util.module_from_spec(spec)
        sys.modules[name] = mods[name]
        spec.loader.exec_module(mods[name])
    for name in MODULES:
        del sys.modules[name]
    return mods


def read_sample(sample: Path) -> list[tuple[str, str]]:
    """(source, raw text) of every document of the sample, as the read stage's reader yields them."""
    from apache_beam.pvalue import TaggedOutput

    from pipelines.config.inputs import match_files
    from pipelines.config.job import load_config
    from pipelines.read.plan import PlanFn
    from pipelines.read.readers import ReadWorkFn

    cfg = load_config(str(REPO / "data_manifests/sources/demo.yaml"), input_root=str(sample))
    read = ReadWorkFn(cfg.inputs, cfg.input_root, None)
    read.setup()
    plan, docs = PlanFn(cfg.inputs, 200), []
    for group, spec in enumerate(cfg.inputs):
        for pattern in spec.paths:
            for m in match_files(pattern):
                for item in plan.process((group, m)):
                    docs += [(d.source, d.text) for d in read.process(item) if not isinstance(d, TaggedOutput)]
    return docs


class Side:
    def __init__(self, tree: Path) -> None:
        self.m = load(tree)
        self.identifier = self.m["curation.language"].LanguageIdentifier()
        self.identifier._load()
        self.pii = self.m["curation.pii"].PiiConfig(enabled=True)
        self.heuristics = self.m["curation.heuristics"].HeuristicsConfig()

    def run(self, docs: list[tuple[str, str]], spent: Counter) -> list:
        m, out = self.m, []

        def step(name, fn, items):
            t = time.process_time()
            got = [fn(x) for x in items]
            spent[name] += time.process_time() - t
            return got

        texts = step("normalize", m["curation.normalize"].normalize_text, [t for _, t in docs])
        redacted = step("pii", lambda t: m["curation.pii"].redact_pii(t, self.pii), texts)
        texts = [r[0] for r in redacted]
        sources = [s for s, _ in docs]
        langs = step("language", lambda st: None if st[0] in NO_LANGUAGE else tuple(self.identifier.identify(st[1])),
                     list(zip(sources, texts)))
        kept = [(s, t) for s, t, lang in zip(sources, texts, langs)
                if lang is None or (lang[0] == "en" and lang[1] >= 0.65)]
        hashes = step("site_boilerplate", m["curation.site_boilerplate"].line_hashes,
                      [t for s, t in kept if s.startswith("cc_") or s == "realnews"])
        h = m["curation.heuristics"]
        def heuristics(text):
            scores = h.score_document(text)
            return scores, h.decide(scores, self.heuristics)

        decided = step("heuristics", heuristics, [t for s, t in kept if s not in NO_HEURISTICS])
        # spans as dicts: each side has its own Span class
        return [texts, [(r[0], [sp.to_dict() for sp in r[1]]) for r in redacted], langs, hashes, decided]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sample", type=Path, help="a `mtnlg sample-data` folder")
    p.add_argument("--baseline", type=Path, required=True, help="the other checkout")
    p.add_argument("--chunk", type=int, default=500, help="documents per turn of a side")
    args = p.parse_args(argv)
    docs = read_sample(args.sample)
    sides = {"baseline": Side(args.baseline), "this tree": Side(REPO)}
    spent = {k: Counter() for k in sides}
    same = True
    for i in range(0, len(docs), args.chunk):
        names = list(sides) if (i // args.chunk) % 2 == 0 else list(reversed(sides))
        got = {k: sides[k].run(docs[i:i + args.chunk], spent[k]) for k in names}
        same &= got["baseline"] == got["this tree"]
    base, this = spent["baseline"], spent["this tree"]
    print(f"{len(docs):,} documents, baseline {args.baseline}, chunks of {args.chunk}")
    print(f"{'step':<18} {'baseline CPU s':>15} {'this tree CPU s':>16} {'ratio':>6}")
    for name in STEPS + ("together",):
        b = sum(base.values()) if name == "together" else base[name]
        t = sum(this.values()) if name == "together" else this[name]
        print(f"{name:<18} {b:15.2f} {t:16.2f} {b / t:6.2f}")
    print(f"outputs the same: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
