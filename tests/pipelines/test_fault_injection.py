"""Bad input never kills the curate job and never vanishes: a fault-injected corpus.

``write_fault_corpus`` plants, in all four raw formats: truncated and corrupt ``.zst``, binary
garbage under every extension, invalid JSON, invalid UTF-8, JSON that is not an object or has no
text, lone surrogates, empty documents, a 50 MB single line, a truncated WARC record, a non-HTTP
response, markup nested 100,000 deep, a PDF payload, a 404, and a WET conversion record.  It
returns how many records each source must read; the test then runs the real curate job and checks
``read = kept + removed(by reason) + dead_lettered`` per source, and that every planted fault is
found in ``removed/`` or ``dead_letter/`` with its location.
"""
from __future__ import annotations

import glob
import gzip
import io
import json
import os
import random

import pandas as pd
import pytest
import zstandard
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from pipeline_fixtures import english, write_config
from pipelines import curate

pytestmark = pytest.mark.slow

GARBAGE = bytes(random.Random(7).getrandbits(8) for _ in range(20_000))
HUGE_LINE_BYTES = 50 * 1024 * 1024


def _zst(lines: list[bytes]) -> bytes:
    return zstandard.ZstdCompressor().compress(b"\n".join(lines) + b"\n")


def _warc(records: list[tuple]) -> bytes:
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=True)
    w.write_record(w.create_warcinfo_record("f.warc.gz", {"software": "test"}))
    for kind, uri, payload, ctype, status in records:
        if kind == "response" and status is not None:
            http = StatusAndHeaders(f"{status} X", [("Content-Type", ctype)], protocol="HTTP/1.1")
            rec = w.create_warc_record(uri, "response", payload=io.BytesIO(payload), http_headers=http)
        else:
            rec = w.create_warc_record(uri, kind, payload=io.BytesIO(payload), warc_content_type=ctype)
        w.write_record(rec)
    return buf.getvalue()


def _page(i: int) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in english(100 + i).split("\n\n"))
    return f"<html><body><div>Home | News</div>{body}<div>Copyright</div></body></html>".encode()


def write_fault_corpus(root: str) -> dict[str, int]:
    """Write the corpus; return the records each source must account for."""
    for d in ("pile", "realnews", "cc_stories", "cc", "tasks"):
        os.makedirs(os.path.join(root, d))
    good = lambda i, subset: json.dumps({"text": english(i), "meta": {"pile_set_name": subset}}).encode()  # noqa: E731
    pile_lines = [
        good(1, "Wikipedia (en)"),                                   # wikipedia: kept
        b'{"text": "cut off json',                                    # pile_other: dead (invalid json)
        b'{"text": "caf\xe9 latin-1", "meta": {"pile_set_name": "Books3"}}',  # books3: dead (utf-8)
        b'[1, 2, 3]',                                                 # pile_other: dead (not an object)
        b'{"meta": {"pile_set_name": "Books3"}}',                     # books3: dead (no text)
        b'{"text": "\\ud800 lone", "meta": {"pile_set_name": "Books3"}}',  # books3: dead (surrogate)
        json.dumps({"text": "", "meta": {"pile_set_name": "Wikipedia (en)"}}).encode(),  # removed
        good(2, "FreeLaw"),                                           # pile_other: removed (subset)
        b'{"text": "' + b"a" * HUGE_LINE_BYTES + b'", "meta": {"pile_set_name": "Books3"}}',  # too_large
        GARBAGE[:3000].replace(b"\n", b" "),                          # pile_other: dead (binary)
        good(3, "Books3"),                                            # books3: kept
    ]
    with open(os.path.join(root, "pile", "mixed.jsonl.zst"), "wb") as f:
        f.write(_zst(pile_lines))
    whole = _zst([good(i, "Wikipedia (en)") for i in range(10, 14)])
    with open(os.path.join(root, "pile", "truncated.jsonl.zst"), "wb") as f:
        f.write(whole[: len(whole) // 2])                             # pile_other: 1 dead letter
    corrupt = bytearray(whole)
    corrupt[len(corrupt) // 2: len(corrupt) // 2 + 64] = GARBAGE[:64]
    with open(os.path.join(root, "pile", "corrupt.jsonl.zst"), "wb") as f:
        f.write(bytes(corrupt))                                       # >= 1 dead letter
    with open(os.path.join(root, "pile", "garbage.jsonl.zst"), "wb") as f:
        f.write(GARBAGE)                                              # pile_other: 1 dead letter

    news = [json.dumps({"title": "T", "text": english(20), "url_used": "http://n/1"}).encode(),
            b"not json at all", b'"just a string"', b"\xff\xfe\x00bad utf-8",
            json.dumps({"title": "T", "text": "   "}).encode(),
            json.dumps({"title": "T", "text": english(21), "url_used": "http://n/2"}).encode()]
    with open(os.path.join(root, "realnews", "rn.jsonl"), "wb") as f:
        f.write(b"\n".join(news) + b"\n\n\n")                         # blank lines are not records
    with open(os.path.join(root, "realnews", "garbage.jsonl"), "wb") as f:
        f.write(GARBAGE.replace(b"\n", b" "))                         # one line: dead letter

    stories = {"good.txt": english(30).encode(), "empty.txt": b"", "blank.txt": b" \n\t\n",
               "latin1.txt": "caf\xe9 story".encode("latin-1"), "garbage.txt": GARBAGE}
    for name, data in stories.items():
        with open(os.path.join(root, "cc_stories", name), "wb") as f:
            f.write(data)

    recs = [("request", "http://e/1", b"GET / HTTP/1.1\r\n\r\n", "application/http; msgtype=request", None),
            ("response", "http://e/1", _page(1), "text/html; charset=utf-8", "200"),     # kept
            ("response", "http://e/2", b"<html>gone</html>", "text/html", "404"),       # removed
            ("response", "http://e/3", b"%PDF-1.4 " + GARBAGE[:500], "application/pdf", "200"),  # removed
            ("response", "http://e/4", b"<div>" * 100_000 + b"deep", "text/html", "200"),  # removed
            ("response", "dns:e", b"not an http message", "text/dns", None),           # dead
            ("conversion", "http://e/5", english(40).encode(), "text/plain", None),    # kept (WET)
            ("response", "http://e/6", _page(6), "text/html", "200")]                   # kept, then cut
    data = _warc(recs)
    with open(os.path.join(root, "cc", "faulty.warc.gz"), "wb") as f:
        f.write(data[:-200])                                          # last record: dead letter
    with open(os.path.join(root, "cc", "garbage.warc.gz"), "wb") as f:
        f.write(GARBAGE)                                              # dead letter

    with open(os.path.join(root, "tasks", "t.jsonl"), "w") as f:
        f.write(json.dumps({"text": "an evaluation passage that appears nowhere in this corpus at all"}) + "\n")
    return {"wikipedia": 2, "books3": 5, "pile_other": 4 + 1 + 1, "realnews": 7, "cc_stories": 5,
            "cc_2020_50": 8}


@pytest.fixture(scope="module")
def fault_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faults")
    root = str(tmp / "raw")
    expected = write_fault_corpus(root)
    cfg = write_config(str(tmp / "cfg.yaml"), root, inputs=[
        {"reader": "pile", "paths": ["pile/*.jsonl.zst"]},
        {"reader": "realnews", "source": "realnews", "paths": ["realnews/*.jsonl"]},
        {"reader": "cc_stories", "source": "cc_stories", "paths": ["cc_stories/*.txt"]},
        {"reader": "warc", "source": "cc_2020_50", "paths": ["cc/*.warc.gz"]},
    ], decontamination={"tasks": ["tasks/*.jsonl"]}, heuristics={"min_words": 5})
    out = str(tmp / "run")
    assert curate.run(["--config", cfg, "--output", out, "--runner=FnApiRunner"]) == 0
    return out, expected


def _dead_letters(run_dir: str) -> list[dict]:
    return [json.loads(line) for f in glob.glob(os.path.join(run_dir, "dead_letter", "*.jsonl.gz"))
            for line in gzip.open(f, "rt")]


def test_accounting_identity_per_source_on_faulty_input(fault_run):
    run_dir, expected = fault_run
    info = json.load(open(os.path.join(run_dir, "run.json")))
    assert info["accounting_ok"]
    for name, s in info["sources"].items():
        assert s["read"] == s["kept"] + sum(s["removed"].values()) + s["dead_lettered"], name
    # The corrupt (not truncated) zst may yield its intact prefix lines before failing, so
    # pile_other/wikipedia can read more than the minimum; nothing may read less.
    for name, n in expected.items():
        assert info["sources"][name]["read"] >= n, (name, info["sources"][name])
    exact = {k: v for k, v in expected.items() if k not in ("pile_other", "wikipedia")}
    for name, n in exact.items():
        assert info["sources"][name]["read"] == n, (name, info["sources"][name])


def test_every_fault_lands_in_removed_or_dead_letter(fault_run):
    run_dir, _ = fault_run
    rows = pd.read_parquet(os.path.join(run_dir, "stats", "documents"))
    reasons = set(rows.reason.dropna())
    for r in ("too_large", "empty_document", "pile_subset_not_in_blend", "http_status_not_ok",
              "non_html_payload", "markup_too_deep", "invalid_json", "invalid_utf8",
              "missing_text", "invalid_unicode", "non_http_response", "truncated_record",
              "corrupt_warc from record 0 to end of file"):
        assert any(x.startswith(r) for x in reasons), (r, sorted(reasons))
    dead = _dead_letters(run_dir)
    assert len(dead) == (rows.outcome == "dead_letter").sum()
    locations = {d["location"] for d in dead}
    assert any(loc.endswith("truncated.jsonl.zst:0") for loc in locations)
    assert any(loc.endswith("garbage.warc.gz#0") for loc in locations)
    assert any(loc.endswith("faulty.warc.gz#8") for loc in locations)
    assert all(d["error"] for d in dead)


def test_kept_documents_survive_next_to_faults(fault_run):
    run_dir, _ = fault_run
    rows = pd.read_parquet(os.path.join(run_dir, "stats", "documents")).set_index("id")
    kept = set(rows.index[rows.outcome == "kept"])
    assert {"wikipedia/mixed.jsonl.zst:0", "books3/mixed.jsonl.zst:10", "realnews/rn.jsonl:0",
            "realnews/rn.jsonl:5", "cc_stories/good.txt", "cc_2020_50/faulty.warc.gz#2",
            "cc_2020_50/faulty.warc.gz#7"} <= kept
