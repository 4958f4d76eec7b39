"""Control characters and lone surrogates from documents never reach dashboard.html raw
(issue 15): NUL is an HTML parse error and a lone surrogate cannot even be written as UTF-8."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

from mtnlg.dashboard import build_dashboard
from mtnlg.dashboard.htmlkit import esc, json_script, safe_text

HOSTILE = "before\x00NUL \x07bell \x1b[31mescape\x7f and a lone \ud800 surrogate"


def _plant(run: Path) -> None:
    with gzip.open(run / "dead_letter" / "part-00009.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"source": "Books3", "location": "raw/x\x00.jsonl:3",
                             "error": "invalid_json: " + HOSTILE, "raw": HOSTILE}) + "\n")
    path = next((run / "removed").glob("*/part-00000.jsonl.gz"))
    recs = [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8")]
    recs[0]["text"] = HOSTILE
    with gzip.open(path, "wt", encoding="utf-8") as fh:  # json.dumps writes \u0000, \ud800 escapes
        fh.writelines(json.dumps(r) + "\n" for r in recs)


def test_nul_and_surrogates_are_shown_not_written(tmp_path, fake_run):
    _plant(fake_run)
    out = build_dashboard([fake_run], tmp_path / "dashboard.html")
    page = out.read_bytes().decode("utf-8")  # strict: the file is valid UTF-8
    assert "\x00" not in page and "\x07" not in page and "\x1b" not in page and "\x7f" not in page
    assert "before\u2400NUL" in page  # shown as the Control Picture for NUL
    assert "\ufffd surrogate" in page


def test_escaping_helpers():
    assert safe_text("a\x00b\tc\nd\r") == "a\u2400b\tc\nd\r"
    assert esc("<\x00>") == "&lt;\u2400&gt;"
    block = json_script("d", {"t": "x\x00\udc80"})
    assert "\\u0000" in block and "\\udc80" in block and "\x00" not in block
    assert json.loads(block.split(">", 1)[1].rsplit("<", 1)[0]) == {"t": "x\x00\udc80"}
