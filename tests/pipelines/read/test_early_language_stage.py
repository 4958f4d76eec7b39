"""The early language decision inside ``mtnlg curate`` (issue 52): web pages surely not in an
allowed language leave the read stage as the language stage's removals, and the accounting
proves every page read: kept, removed with a reason, or dead-lettered."""
from __future__ import annotations

import gzip
import io
import json
import os
import random

import pandas as pd
import pytest

from pipeline_fixtures import GPT2, english, write_config
from pipelines import curate

GERMAN = ("Der Fluss fließt durch die kleine Stadt, und die Menschen lesen jeden Tag Bücher in der "
          "alten Bibliothek neben der Brücke. Im Sommer sitzen die Kinder am Ufer und hören den "
          "Geschichten der Großeltern zu, während die Bauern auf dem Markt Brot und Käse verkaufen.").split()


def german(seed: int, words: int = 220) -> str:
    rnd = random.Random(seed)
    return " ".join(rnd.choice(GERMAN) for _ in range(words)) + "."


def page(nav: list[str], paragraphs: list[str]) -> bytes:
    links = "".join(f"<li><a href='/{i}'>{w}</a></li>" for i, w in enumerate(nav))
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<html><head><title>t</title><script>var menu = 'loading';</script></head><body>"
            f"<nav><ul>{links}</ul></nav><article>{body}</article></body></html>").encode()


def write_warc(path: str) -> dict:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    de_nav, en_nav = ["Startseite", "Nachrichten", "Kontakt", "Impressum"], ["Home", "News", "Contact", "About"]
    pages = [("https://en.example/1", page(en_nav, english(1).split("\n\n"))),
             ("https://de.example/1", page(de_nav, [german(1), german(2)])),
             ("https://en.example/2", page(en_nav, english(2).split("\n\n"))),
             ("https://de.example/2", page(de_nav, [german(3), german(4)]))]
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=True)
    for url, body in pages:
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=headers))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return {"early": ["cc_2020_50/cc/a.warc.gz#1", "cc_2020_50/cc/a.warc.gz#3"]}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("early")
    expected = write_warc(str(tmp / "raw" / "cc" / "a.warc.gz"))
    cfg = write_config(str(tmp / "cfg.yaml"), str(tmp / "raw"),
                       inputs=[{"reader": "warc", "source": "cc_2020_50", "paths": ["cc/*.warc.gz"]}],
                       decontamination={"enabled": False}, tokenizer={"path": GPT2, "min_tokens": 16})
    out = str(tmp / "run")
    assert curate.run(["--config", cfg, "--output", out, "--direct_running_mode=in_memory",
                       "--direct_num_workers=1", "--progress-every", "0"]) == 0
    return out, expected


def test_foreign_pages_are_removed_early_and_every_page_is_accounted_for(run_dir):
    out, expected = run_dir
    info = json.load(open(os.path.join(out, "run.json")))
    s = info["sources"]["cc_2020_50"]
    assert info["accounting_ok"] and s["read"] == 4 and s["kept"] == 2
    assert s["removed"] == {"language/wrong_language": 2}
    rows = pd.read_parquet(os.path.join(out, "stats", "documents")).set_index("id")
    early = rows[rows.outcome == "removed"]
    assert sorted(early.index) == expected["early"]
    for detail in early.detail:
        d = json.loads(detail)
        assert d["early"] is True and 0 <= d["score"] < d["early_score"]
    assert set(early.stage) == {"language"} and set(early.lang) == {"de"}
    removed = [json.loads(line) for name in os.listdir(os.path.join(out, "removed", "language"))
               for line in gzip.open(os.path.join(out, "removed", "language", name), "rt")]
    assert sorted(r["id"] for r in removed) == expected["early"]


def test_the_language_stage_counts_them(run_dir):
    out, _ = run_dir
    counters = json.load(open(os.path.join(out, "stats", "counters.json")))["counters"]
    got = {(c["stage"], c["outcome"], c["reason"]): c["value"] for c in counters if c["source"] == "cc_2020_50"}
    assert got[("language", "removed", "wrong_language")] == 2
    assert got[("language", "kept", None)] == 2
    assert ("read", "removed", "wrong_language") not in got
