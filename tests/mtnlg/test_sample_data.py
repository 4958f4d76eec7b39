"""The embedded sample corpus: real formats, determinism, and a ground truth that holds."""
from __future__ import annotations

import gzip
import hashlib
import html
import io
import itertools
import json
import os
import re
from collections import Counter, defaultdict

import pytest
import zstandard
from warcio.archiveiterator import ArchiveIterator

from mtnlg.sample_data import PILE_SUBSETS, SOURCE_SLUGS, UNUSED_PILE_SUBSET, main, write_sample_corpus
from mtnlg.sample_data.planting import jaccard, shingles

SMALL = 300


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("small"))
    return out, write_sample_corpus(out, docs=SMALL, seed=0)


@pytest.fixture(scope="module")
def default(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("default"))
    assert main([out]) == 0
    with open(os.path.join(out, "ground_truth.json")) as f:
        return out, json.load(f)


def _tree_digest(root: str) -> dict[str, str]:
    out = {}
    for d, _, files in os.walk(root):
        for name in files:
            p = os.path.join(d, name)
            out[os.path.relpath(p, root)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


def read_corpus(out: str) -> tuple[dict[str, str], dict[str, bytes], dict[str, str]]:
    """(id -> text for text sources, id -> HTTP payload for WARC responses, id -> pile subset),
    read with the real libraries; malformed records are skipped (tests check them separately)."""
    texts, pages, subsets = {}, {}, {}
    slug = {**{n: s for n, s in SOURCE_SLUGS.items()}, UNUSED_PILE_SUBSET: "freelaw"}
    for name in sorted(os.listdir(os.path.join(out, "pile"))):
        try:
            data = zstandard.ZstdDecompressor().decompress(open(os.path.join(out, "pile", name), "rb").read())
        except zstandard.ZstdError:
            continue
        for i, line in enumerate(data.split(b"\n")[:-1]):
            try:
                rec = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                continue
            doc_id = f"{slug[rec['meta']['pile_set_name']]}/pile/{name}:{i}"
            texts[doc_id], subsets[doc_id] = rec["text"], rec["meta"]["pile_set_name"]
    for name in sorted(os.listdir(os.path.join(out, "realnews"))):
        for i, line in enumerate(open(os.path.join(out, "realnews", name), "rb")):
            try:
                texts[f"realnews/realnews/{name}:{i}"] = json.loads(line)["text"]
            except json.JSONDecodeError:
                continue
    for name in os.listdir(os.path.join(out, "cc_stories")):
        texts[f"cc_stories/cc_stories/{name}"] = open(os.path.join(out, "cc_stories", name), encoding="utf-8").read().rstrip("\n")
    for snap in ("CC-2020-50", "CC-2021-04"):
        d = os.path.join(out, "common_crawl", snap)
        for name in sorted(os.listdir(d)):
            for k, rec in enumerate(ArchiveIterator(open(os.path.join(d, name), "rb"))):
                if rec.rec_type == "response":
                    payload = rec.content_stream().read()
                    if len(payload) == int(rec.http_headers.get_header("Content-Length")):
                        pages[f"{SOURCE_SLUGS[snap]}/common_crawl/{snap}/{name}#{k}"] = payload
    return texts, pages, subsets


def article_text(payload: bytes) -> str:
    """The planted article of a page (a stand-in for real extraction, good enough for checks)."""
    try:
        page = payload.decode("utf-8")
    except UnicodeDecodeError:
        page = payload.decode("windows-1252")
    art = re.search(r"<article>(.*)</article>", page, re.S)
    return html.unescape(" ".join(re.findall(r"<p>(.*?)</p>", art.group(1)))) if art else ""


def test_same_seed_same_bytes_other_seed_differs(small, tmp_path):
    out, _ = small
    write_sample_corpus(str(tmp_path / "again"), docs=SMALL, seed=0)
    assert _tree_digest(out) == _tree_digest(str(tmp_path / "again"))
    write_sample_corpus(str(tmp_path / "other"), docs=SMALL, seed=1)
    assert _tree_digest(out) != _tree_digest(str(tmp_path / "other"))
    # gzip members carry no mtime (bytes 4..8 of the header are zero)
    warc = next(p for p in _tree_digest(out) if p.endswith(".warc.gz"))
    assert open(os.path.join(out, warc), "rb").read()[4:8] == b"\0\0\0\0"


def test_every_record_is_in_the_ground_truth_exactly_once(small):
    out, gt = small
    texts, pages, subsets = read_corpus(out)
    assert set(subsets.values()) == set(PILE_SUBSETS) | {UNUSED_PILE_SUBSET}
    read_ids = set(texts) | set(pages)
    malformed = {m["id"] for m in gt["malformed"]}
    assert read_ids | malformed == set(gt["primary"])
    assert not read_ids & malformed
    assert gt["totals"]["records"] == len(read_ids) + len(malformed) == len(gt["primary"])
    by_cat = Counter(gt["primary"].values())
    assert by_cat["clean"] == len(gt["clean"]) and by_cat["malformed"] == len(gt["malformed"])
    for cat in ("spam", "low_quality", "non_english", "contaminated", "too_short"):
        assert by_cat[cat] == len(gt[cat]) > 0, cat
    assert by_cat["exact_duplicates"] == sum(len(g["ids"]) for g in gt["exact_duplicates"])
    assert by_cat["near_duplicates"] == 2 * len(gt["near_duplicates"])
    per_source = Counter(i.split("/")[0] for i in gt["primary"])
    assert {s: v["records"] for s, v in gt["totals"]["by_source"].items()} == dict(per_source)
    assert set(per_source) == set(SOURCE_SLUGS.values()) | {"freelaw", "pile"}


def test_duplicates_are_as_recorded(small):
    out, gt = small
    texts, pages, _ = read_corpus(out)
    sources = set()
    for group in gt["exact_duplicates"]:
        bodies = {texts[i].encode() if i in texts else pages[i] for i in group["ids"]}
        assert len(bodies) == 1, group
        sources.add(len(set(group["sources"])) > 1)
    assert sources == {True, False}  # within and across sources
    levels = defaultdict(list)
    for pair in gt["near_duplicates"]:
        a, b = texts[pair["a"]], texts[pair["b"]]
        assert jaccard(a, b) == pytest.approx(pair["jaccard"], abs=1e-6)
        assert pair["target"] - 0.03 <= pair["jaccard"] <= pair["target"]
        levels[pair["target"]].append(pair["a"].split("/")[0] == pair["b"].split("/")[0])
    assert set(levels) == {0.95, 0.9, 0.85, 0.7, 0.5, 0.3}
    assert all(set(v) == {True, False} for v in levels.values())


def test_malformed_records_really_are_malformed(small):
    out, gt = small
    kinds = {m["kind"] for m in gt["malformed"]}
    assert kinds == {"bad_json", "invalid_utf8", "truncated_zstd", "truncated_warc_record"}
    for m in gt["malformed"]:
        path, _, where = re.split(r"([:#])", m["location"], maxsplit=1) if m["kind"] != "truncated_zstd" \
            else (m["location"], "", "")
        raw = open(os.path.join(out, path), "rb").read()
        if m["kind"] == "truncated_zstd":
            with pytest.raises(zstandard.ZstdError):
                zstandard.ZstdDecompressor().decompress(raw)
            dobj = zstandard.ZstdDecompressor().decompressobj()
            assert b"\n" not in dobj.decompress(raw)  # not one complete line comes out
        elif m["kind"] == "truncated_warc_record":
            recs = list(ArchiveIterator(io.BytesIO(raw)))
            assert len(recs) == int(where) + 1  # it is the last record of its file
            with pytest.raises(EOFError):
                gzip.decompress(raw)
        else:
            data = raw if path.endswith(".jsonl") else zstandard.ZstdDecompressor().decompress(raw)
            line = data.split(b"\n")[int(where)]
            if m["kind"] == "invalid_utf8":
                with pytest.raises(UnicodeDecodeError):
                    line.decode("utf-8")
            else:
                with pytest.raises(json.JSONDecodeError):
                    json.loads(line)


def test_truncated_warc_record_is_short(small):
    out, gt = small
    for m in (m for m in gt["malformed"] if m["kind"] == "truncated_warc_record"):
        path = m["location"].split("#")[0]
        last = None
        for rec in ArchiveIterator(open(os.path.join(out, path), "rb")):
            body = rec.content_stream().read()
            last = (rec.rec_type, len(body), rec.http_headers and rec.http_headers.get_header("Content-Length"))
        assert last[0] == "response" and last[1] < int(last[2])


def test_planted_categories_hold(small):
    out, gt = small
    texts, pages, _ = read_corpus(out)
    text_of = lambda i: texts[i] if i in texts else article_text(pages[i])  # noqa: E731
    tasks = {}
    for task, info in gt["eval_tasks"].items():
        rows = [json.loads(line) for line in open(os.path.join(out, info["file"]))]
        assert len(rows) == info["rows"] >= 10
        tasks[task] = {r.get("text") or r.get("context") for r in rows}
    assert {"lambada", "squad_v2"} <= set(tasks)
    for c in gt["contaminated"]:
        assert c["passage"] in tasks[c["task"]]
        assert " ".join(c["passage"].split()[:30]) in " ".join(text_of(c["id"]).split())
    for s in gt["too_short"]:
        assert len(text_of(s["id"]).split()) == s["words"] < 10
    assert {s["kind"] for s in gt["spam"]} == {"keyword_stuffing", "link_farm", "repeated_lines",
                                               "boilerplate_only", "gibberish"}
    assert len({n["lang"] for n in gt["non_english"]}) >= 5
    for c in gt["clean"]:
        assert len(text_of(c).split()) >= 150, c


def test_non_english_is_detected_as_such(small):
    from curation.language import LanguageIdentifier

    lid = LanguageIdentifier()
    out, gt = small
    texts, pages, _ = read_corpus(out)
    for n in gt["non_english"]:
        text = texts[n["id"]] if n["id"] in texts else article_text(pages[n["id"]])
        lang, _score = lid.predict(html.unescape(text))
        assert lang == n["lang"], (n, lang)


def test_pages_use_several_charsets(small):
    out, _ = small
    _, pages, _ = read_corpus(out)
    declared = Counter(m.group(1).lower() for p in pages.values()
                       for m in [re.search(rb'charset=([\w-]+)">', p)] if m)
    assert {b"utf-8", b"iso-8859-1", b"windows-1252"} <= set(declared)


def test_docs_scales_the_corpus(small, tmp_path):
    _, gt = small
    big = write_sample_corpus(str(tmp_path / "big"), docs=4 * SMALL, seed=0)
    ratio = big["totals"]["documents"] / gt["totals"]["documents"]
    assert 3.0 < ratio < 4.6
    assert len(big["clean"]) > 3 * len(gt["clean"])
    with pytest.raises(ValueError, match="at least 100"):
        write_sample_corpus(str(tmp_path / "tiny"), docs=10)


def test_too_few_docs_is_a_one_line_error_before_any_file(tmp_path, capsys):
    from mtnlg.sample_data import main

    with pytest.raises(SystemExit) as e:
        main([str(tmp_path / "tiny"), "--docs", "20"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "error: --docs must be at least 100 (got 20)" in err and "Traceback" not in err
    assert not (tmp_path / "tiny").exists()


def test_no_accidental_near_duplicates_in_default_corpus(default):
    out, gt = default
    texts, pages, _ = read_corpus(out)
    keep = {"clean", "contaminated", "near_duplicates", "exact_duplicates"}
    docs = {i: (texts[i] if i in texts else article_text(pages[i])) for i, c in gt["primary"].items()
            if c in keep}
    sets = {i: shingles(t) for i, t in docs.items()}
    index = defaultdict(list)
    for i, s in sets.items():
        for g in s:
            index[g].append(i)
    shared = Counter()
    for ids in index.values():
        if 1 < len(ids) <= 50:  # very common 5-grams are template phrases, not duplication
            shared.update(itertools.combinations(sorted(ids), 2))
    planted = {frozenset((p["a"], p["b"])) for p in gt["near_duplicates"]}
    planted |= {frozenset(pair) for g in gt["exact_duplicates"] for pair in itertools.combinations(g["ids"], 2)}
    worst = 0.0
    for (a, b), n in shared.items():
        if frozenset((a, b)) in planted or n < 0.1 * min(len(sets[a]), len(sets[b])):
            continue
        worst = max(worst, len(sets[a] & sets[b]) / len(sets[a] | sets[b]))
    assert worst < 0.2
    assert gt["totals"]["documents"] >= 700


def test_low_quality_pages_are_varied_and_deterministic():
    """Each kind is spun from many templates (not one page repeated); a seed fixes every page."""
    import random

    from mtnlg.sample_data.low_quality import LOW_QUALITY_KINDS, low_quality_page
    from mtnlg.sample_data.text_pool import build_pools

    def pages(seed):
        rng, pools = random.Random(seed), build_pools(seed)
        return {k: [low_quality_page(k, rng, pools) for _ in range(4)] for k in LOW_QUALITY_KINDS}

    first, again = pages(7), pages(7)
    assert {k: [p.text for p in v] for k, v in first.items()} == {k: [p.text for p in v] for k, v in again.items()}
    for kind, group in first.items():
        assert all(len(p.text.split()) >= 100 for p in group), kind
        worst = max(jaccard(a.text, b.text) for a, b in itertools.combinations(group, 2))
        # Consent walls share the wording of the industry's standard notice (as real ones do);
        # every other kind shares far less.
        assert worst < (0.6 if kind == "cookie_consent" else 0.3), (kind, worst)


def test_low_quality_pages_pass_extraction_language_and_heuristics(small):
    """The planted low-quality pages are the quality classifier's to remove: read with the demo
    config's Common Crawl settings (its extractor), each one keeps text, is English by the
    language stage and passes every heuristic rule."""
    import glob

    from curation.document import Document
    from curation.heuristics import HeuristicsConfig, apply_heuristics
    from curation.language import keep_language, make_identifier
    from curation.normalize import normalize_text
    from curation.readers import read_warc
    from infra.resources import config_path
    from mtnlg.sample_data.low_quality import LOW_QUALITY_KINDS
    from pipelines.config.job import load_config

    out, gt = small
    planted = {d["id"]: d["kind"] for d in gt["low_quality"]}
    assert {d["kind"] for d in gt["low_quality"]} == set(LOW_QUALITY_KINDS)
    assert {i.split("/")[0] for i in planted} == {"cc_2020_50", "cc_2021_04"}
    cfg = load_config(config_path("sources", "demo"), input_root=out)
    ident, heur = make_identifier(cfg.language), HeuristicsConfig(**cfg.heuristics)
    verdicts = {}
    for spec in (s for s in cfg.inputs if s.reader == "warc"):
        for path in sorted(f for p in spec.paths for f in glob.glob(p)):
            with open(path, "rb") as f:
                for rec in read_warc(f, path, spec.source, extractor=spec.extractor,
                                     id_path=os.path.relpath(path, out)):
                    doc = rec if isinstance(rec, Document) else getattr(rec, "doc", None)
                    if doc is None or doc.id not in planted:
                        continue
                    if not isinstance(rec, Document):
                        verdicts[doc.id] = f"read/{rec.reason}"
                        continue
                    text = normalize_text(rec.text)
                    lang = keep_language(*ident.predict(text), cfg.language)
                    verdict = "kept" if lang.keep else f"language/{lang.reason}"
                    if lang.keep:
                        r = apply_heuristics(text, heur)
                        verdict = "kept" if r.keep else f"heuristics/{r.reason}"
                    verdicts[doc.id] = verdict
    assert set(verdicts) == set(planted)
    failed = {planted[i]: v for i, v in verdicts.items() if v != "kept"}
    assert not failed, failed


def test_truncated_pile_file_never_takes_a_data_files_name(tmp_path, monkeypatch):
    """From 30 Pile data files on (about 600k documents), the planted truncated file used to be
    written over data file 29: its 20k documents were in the ground truth but not in the input."""
    from mtnlg.sample_data import generate

    real_chunks = generate._chunks
    monkeypatch.setattr(generate, "_chunks", lambda items, n_files: real_chunks(items, 31))
    write_sample_corpus(str(tmp_path), docs=SMALL, seed=0)
    names = sorted(os.listdir(tmp_path / "pile"))
    assert names == [f"{i:02d}.jsonl.zst" for i in range(32)]  # 31 data files, then the cut one
    for name in names[:-1]:  # data file 29 among them: whole, not the cut stream
        with open(tmp_path / "pile" / name, "rb") as f:
            assert zstandard.ZstdDecompressor().stream_reader(f).read().count(b"\n") >= 1, name
    with pytest.raises(zstandard.ZstdError):  # the cut stream
        zstandard.ZstdDecompressor().decompress((tmp_path / "pile" / names[-1]).read_bytes())


def test_a_larger_sample_spreads_each_news_site_over_more_hosts(tmp_path, monkeypatch):
    """With a fixed handful of hosts a 1M sample put ~30,000 pages on each, and the
    site_boilerplate stage took the reused text they share for the sites' boilerplate: a site
    gets another host per ``PAGES_PER_HOST`` pages of a source (here 2 instead of 1,000)."""
    from mtnlg.sample_data import generate

    monkeypatch.setattr(generate, "PAGES_PER_HOST", 2)
    out = str(tmp_path)
    gt = write_sample_corpus(out, docs=SMALL, seed=0)
    _, pages, _ = read_corpus(out)
    hosts = Counter()
    page_hosts = _page_hosts(out)
    for doc_id in pages:
        if gt["primary"][doc_id] != "low_quality":  # those are on their own sites
            hosts[(doc_id.split("/")[0], page_hosts[doc_id.split("/", 2)[2]])] += 1
    realnews = {}
    for name in sorted(os.listdir(os.path.join(out, "realnews"))):
        for i, line in enumerate(open(os.path.join(out, "realnews", name), encoding="utf-8")):
            try:
                realnews[f"realnews/realnews/{name}:{i}"] = json.loads(line)["domain"]
            except json.JSONDecodeError:
                continue
    hosts.update(("realnews", host) for host in realnews.values())
    per_source = defaultdict(list)
    for (source, host), n in hosts.items():
        per_source[source].append(n)
    for source, counts in per_source.items():  # several hosts per site, a few pages on each
        assert len(counts) > 8, (source, counts)
        assert max(counts) <= 4 * 2, (source, counts)
    notes = gt["site_boilerplate"]
    assert len(notes["hosts"]) > 1
    assert {realnews[i] for i in notes["documents"]} == set(notes["hosts"])
    assert all(h.startswith("citybeat") for h in notes["hosts"])


def _page_hosts(out: str) -> dict[str, str]:
    """``<snapshot>/<file>#<k>`` -> the host of that WARC record's target URI, every record."""
    hosts = {}
    for snapshot in os.listdir(os.path.join(out, "common_crawl")):
        for name in os.listdir(os.path.join(out, "common_crawl", snapshot)):
            with open(os.path.join(out, "common_crawl", snapshot, name), "rb") as f:
                for k, rec in enumerate(ArchiveIterator(f)):
                    uri = rec.rec_headers.get_header("WARC-Target-URI")
                    hosts[f"{snapshot}/{name}#{k}"] = uri.split("/")[2] if uri else ""
    return hosts
