"""The site-boilerplate stage on real pages: what it removes, whether article text is hurt,
and what it costs.

    python -m bench.ingest.site_boilerplate [--eval-dir DIR] [--rounds N] [-- BEAM OPTIONS]

Pages: trafilatura's 990 real pages (``../shared/data/extract_eval``, Apache-2.0) written as one
Common Crawl-style WARC in a crawl's arrangement (``bench.extraction.real_articles.write_warc``: each page
under its own URL, so pages of one host share a host key; pages without a URL share
``eval.example``).

1. The whole job (``mtnlg curate``, the shipped ``mtnlg`` settings, decontamination off) with
   the stage off and on, alternately ``--rounds`` times each, in this run: CPU of the job's
   processes (on / off), the stage's counters, accounting.
2. The stage's own rule (``curation.site_boilerplate``: the functions the stage runs) over the
   extracted text of every page (what the stage would see if every language were kept), for the
   shipped setting and for corpus-wide thresholds: pages changed, lines and characters removed,
   and the annotated snippets: "with" snippets (article text) that were found before and are
   lost after, "without" snippets (boilerplate) found before and gone after.  Twice: on the
   ``main_text`` extractor's text, and on all of each page's text (resiliparse with
   ``main_content=False``: what a Common Crawl WET file holds, the input CCNet cleans).
3. With ``--warc FILE``, a real crawl of several pages per host (e.g. ``iana.warc.gz`` of
   pywb's ``sample_archive``, 16 pages of www.iana.org; not shipped here): the per-host rule
   on each page's text, for ``main_text``, ``resiliparse`` and all text, with the lines removed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from bench.common import REPO, children_cpu

ROOT = str(REPO)
from bench.extraction.pages import DEFAULT_EVAL, load_pages, norm
from bench.extraction.real_articles import WARC_NAME, as_normalized, page_url, write_warc  # noqa: E402


def write_config(workdir: str, stage_on: bool) -> str:
    import yaml

    with open(os.path.join(ROOT, "data_manifests", "sources", "mtnlg.yaml")) as f:
        cfg = yaml.safe_load(f)
    shipped = next(i for i in cfg["inputs"] if i["reader"] == "warc")
    cfg.update(name="site_boilerplate", input_root=os.path.join(workdir, "input"),
               inputs=[{"reader": "warc", "source": "cc_2020_50", "extractor": shipped.get("extractor"),
                        "paths": ["cc/*.warc.gz"]}], decontamination={"enabled": False})
    cfg["site_boilerplate"] = dict(cfg.get("site_boilerplate") or {}, enabled=stage_on)
    path = os.path.join(workdir, f"config-{'on' if stage_on else 'off'}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False)
    return path


def run_job(workdir: str, stage_on: bool, beam_args: list[str]) -> tuple[float, dict]:
    """One curate run; (CPU seconds of its processes, run.json)."""
    run = os.path.join(workdir, f"run-{'on' if stage_on else 'off'}")
    shutil.rmtree(run, ignore_errors=True)
    cmd = [sys.executable, "-m", "mtnlg.cli", "curate", "--config", write_config(workdir, stage_on),
           "--output", run, "--progress-every", "0", *beam_args]
    before = children_cpu()
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")))
    cpu = children_cpu() - before
    with open(os.path.join(run, "run.json")) as f:
        return cpu, json.load(f)


def stage_counters(run: str) -> dict[str, int]:
    with open(os.path.join(run, "stats", "counters.json")) as f:
        rows = json.load(f)["counters"]
    out: Counter = Counter()
    for r in rows:
        if r["stage"] == "site_boilerplate":
            out[r["outcome"] + (f"/{r['reason']}" if r["reason"] else "")] += r["value"]
    return dict(out)


def sweep(pages, texts: list[str], setting) -> dict:
    """The stage's rule over all pages at once (one host per page URL), with snippet effects."""
    from curation.site_boilerplate import condemned_lines, host_of, line_hashes, remove_lines

    keys = []
    for (name, item, _), text in zip(pages, texts):
        keys.append((host_of(page_url(item, name)), line_hashes(text, setting.min_line_chars)))
    per_host, everywhere = condemned_lines(keys, setting)  # the stage's counting
    res = Counter()
    lost_examples = []
    for (name, item, _), text, (host, hs) in zip(pages, texts, keys):
        bad = {h for h in hs if h in per_host.get(host, ()) or h in everywhere}
        out = remove_lines(text, bad, setting.min_line_chars)
        english = item["lang"] == "English"
        res["pages"] += 1
        res["chars"] += len(text)
        res["changed"] += bool(out.lines_removed)
        res["lines"] += out.lines_removed
        res["chars_removed"] += out.chars_removed
        it = as_normalized(item)
        before, after = norm(text), norm(out.text)
        for s in it["with"]:
            if norm(s) in before:
                res["with_found"] += 1
                if norm(s) not in after:
                    res["with_lost"] += 1
                    res["with_lost_en"] += english
                    lost_examples.append((item["url"], s))
        for s in it["without"]:
            if norm(s) in before:
                res["without_found"] += 1
                res["without_gone"] += norm(s) not in after
    res["lost_examples"] = lost_examples[:8]
    return res


def all_text(data: bytes) -> str:
    """All of a page's text, as a WET file holds it (resiliparse, ``main_content=False``)."""
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import detect_encoding
    from resiliparse.parse.html import HTMLTree

    return extract_plain_text(HTMLTree.parse_from_bytes(data, detect_encoding(data)), main_content=False)


def crawl(path: str) -> None:
    """The per-host rule on a real crawl WARC, per kind of text."""
    from curation.document import Document
    from curation.normalize import normalize_text
    from curation.readers.warc import read_warc
    from curation.site_boilerplate import (SiteBoilerplateConfig, condemned_lines, host_of,
                                           line_hashes, remove_lines)
    from warcio.archiveiterator import ArchiveIterator

    cfg = SiteBoilerplateConfig(enabled=True)
    with open(path, "rb") as f:
        html = [(r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
                for r in ArchiveIterator(f) if r.rec_type == "response" and r.http_headers
                and "html" in (r.http_headers.get_header("Content-Type") or "")]
    print(f"\n{path}: {len(html)} HTML pages, hosts {dict(Counter(host_of(u) for u, _ in html))}")
    print("| text | pages | pages changed | lines removed | chars removed (share) |")
    print("|---|---|---|---|---|")
    removed_lines: dict[str, Counter] = {}
    for kind in ("main_text", "resiliparse", "all text (WET)"):
        if kind == "all text (WET)":
            docs = [(u, normalize_text(all_text(b))) for u, b in html]
        else:
            with open(path, "rb") as f:
                docs = [(r.url, normalize_text(r.text)) for r in read_warc(f, path, "cc_2020_50", kind)
                        if isinstance(r, Document)]
        per_host, _ = condemned_lines([(host_of(u), line_hashes(t)) for u, t in docs], cfg)
        res, lines = Counter(), Counter()
        for u, t in docs:
            bad = set(line_hashes(t)) & per_host.get(host_of(u), frozenset())
            out = remove_lines(t, bad)
            res.update(chars=len(t), changed=bool(out.lines_removed), lines=out.lines_removed,
                       removed=out.chars_removed)
            lines.update(x for x in t.split("\n") if set(line_hashes(x)) & bad)
        removed_lines[kind] = lines
        print(f"| {kind} | {len(docs)} | {res['changed']} | {res['lines']} | {res['removed']:,} "
              f"({100 * res['removed'] / max(1, res['chars']):.1f}%) |")
    for kind, lines in removed_lines.items():
        if lines:
            print(f"  most removed lines ({kind}): {[x[:40] for x, _ in lines.most_common(8)]}")


def main(argv=None) -> None:
    from curation.normalize import normalize_text
    from curation.readers import decode_html, extract_text

    argv = list(sys.argv[1:] if argv is None else argv)
    beam_args = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eval-dir", default=DEFAULT_EVAL)
    ap.add_argument("--rounds", type=int, default=1, help="job runs per setting (alternating)")
    ap.add_argument("--workdir", default=None, help="kept after the run (default: temporary)")
    ap.add_argument("--warc", default=None, help="a real crawl (several pages per host) to measure too")
    ap.add_argument("--skip-job", action="store_true", help="leave out part 1 (the two curate runs)")
    args = ap.parse_args(argv)
    pages = load_pages(args.eval_dir)
    hosts = Counter(page_url(item, name).split("/")[2].removeprefix("www.") for name, item, _ in pages)
    print(f"{len(pages)} pages, {len(hosts)} hosts; hosts with more than one page: "
          f"{[(h, n) for h, n in hosts.most_common() if n > 1]}")
    workdir = args.workdir or tempfile.mkdtemp(prefix="bench_site_boilerplate_")
    try:
        if args.skip_job:
            raise _Skip
        write_warc(pages, os.path.join(workdir, "input", WARC_NAME))
        cpu = {False: 0.0, True: 0.0}
        for _ in range(args.rounds):
            for on in (False, True):
                seconds, info = run_job(workdir, on, beam_args)
                cpu[on] += seconds
                assert info["accounting_ok"], "accounting"
        print(f"\nThe whole job, {args.rounds} run(s) each, same input: CPU with the stage on / off "
              f"= {cpu[True] / cpu[False]:.3f} ({cpu[True]:.1f} s / {cpu[False]:.1f} s); "
              f"accounting ok in every run")
        print(f"stage counters (stage on): {stage_counters(os.path.join(workdir, 'run-on'))}")
    except _Skip:
        pass
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)

    for kind in ("main_text", "all text (WET)"):
        texts = [normalize_text((extract_text(decode_html(data), "main_text") if kind == "main_text"
                                 else all_text(data)) or "") for _, _, data in pages]
        rule_table(pages, texts, kind)
    if args.warc:
        crawl(args.warc)


class _Skip(Exception):
    pass


def rule_table(pages, texts, kind: str) -> None:
    from curation.site_boilerplate import SiteBoilerplateConfig

    shipped = SiteBoilerplateConfig(enabled=True)
    print(f"\nThe stage's rule over every page's text ({kind}; all languages):")
    print("| setting | pages changed | lines removed | chars removed (share) | 'with' snippets lost "
          "(English pages) | 'without' snippets gone |")
    print("|---|---|---|---|---|---|")
    for label, setting in (
            (f"host > {shipped.host_documents} (shipped)", shipped),
            ("host > 3, corpus > 10", SiteBoilerplateConfig(enabled=True, corpus_documents=10)),
            ("host > 3, corpus > 5", SiteBoilerplateConfig(enabled=True, corpus_documents=5)),
            ("host > 3, corpus > 2", SiteBoilerplateConfig(enabled=True, corpus_documents=2))):
        r = sweep(pages, texts, setting)
        print(f"| {label} | {r['changed']} of {r['pages']} | {r['lines']} | {r['chars_removed']:,} "
              f"({100 * r['chars_removed'] / r['chars']:.2f}%) | {r['with_lost']} of {r['with_found']} "
              f"({r['with_lost_en']}) | {r['without_gone']} of {r['without_found']} |")
        for url, s in r["lost_examples"]:
            print(f"    lost: {s[:70]!r}  {url[:60]}")


if __name__ == "__main__":
    main()
