"""``markup_depth`` (one regular-expression match per tag, issue 52) gives exactly the depth of
the scan it replaced (``_tags`` walked tag by tag), on real pages and on generated hostile
markup: the markup guard removes the same pages."""
from __future__ import annotations

import glob
import gzip
import os
import random
from pathlib import Path

import pytest

from curation.extraction.markup import (_IMPLIED_END, _NESTED_SKIP, _RAW_TEXT, _REOPEN_CLOSES, _VOID, _tags,
                                        markup_depth, markup_too_deep)

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[2]
EVAL_DIR = next((d for d in (os.environ.get("EXTRACT_EVAL_DIR") or "",
                             str(REPO.parent / "shared" / "data" / "extract_eval"),
                             str(REPO.parent.parent / "shared" / "data" / "extract_eval"))
                 if d and os.path.isdir(os.path.join(d, "html"))), None)


def reference_depth(html: str | bytes, limit: int | None = None) -> int:
    """The scan as it was before issue 52 (tree 52f5aa7): ``_tags``, tag by tag."""
    data = html.encode("utf-8", "ignore") if isinstance(html, str) else html
    stack: list[bytes] = []
    open_count: dict[bytes, int] = {}
    markers = 0
    deepest = 0

    def close(name: bytes) -> int:
        closed_markers = 0
        while True:
            top = stack.pop()
            open_count[top] -= 1
            closed_markers += top in _IMPLIED_END
            if top == name:
                return closed_markers

    for closing, name, selfc in _tags(data):
        if name in _VOID:
            continue
        if closing:
            if open_count.get(name):
                markers -= close(name)
            continue
        if selfc and name in _NESTED_SKIP or name in _RAW_TEXT:
            continue
        if (name in _REOPEN_CLOSES or name in _IMPLIED_END) and open_count.get(name):
            markers -= close(name)
        stack.append(name)
        open_count[name] = open_count.get(name, 0) + 1
        if name in _IMPLIED_END:
            markers += 1
            continue
        if len(stack) - markers > deepest:
            deepest = len(stack) - markers
            if limit is not None and deepest > limit:
                return deepest
    return deepest


def real_pages() -> list[bytes]:
    pages = [gzip.decompress(p.read_bytes()) for p in sorted(FIXTURES.glob("*/*.html.gz"))]
    if EVAL_DIR is not None:
        pages += [gzip.open(p).read() for p in sorted(glob.glob(os.path.join(EVAL_DIR, "html", "*.html.gz")))]
    return pages


def test_the_same_depth_on_real_pages():
    pages = real_pages()
    assert len(pages) >= 10
    for data in pages:
        assert markup_depth(data) == reference_depth(data)
        assert markup_depth(data.decode("utf-8", "ignore")) == reference_depth(data)
        for limit in (5, 20):
            assert markup_depth(data, limit) == reference_depth(data, limit)


PIECES = [
    "<div>", "</div>", "<DIV class='a>b'>", "<div title=\"x\">", "<span>", "</span>", "</SPAN >", "<b>", "</b>",
    "<p>", "</p>", "<li>", "<td>", "<tr>", "</tr>", "<table>", "</table>", "<a href=x>", "</a>", "<A>",
    "<form>", "<button>", "<nobr>", "<br>", "<br/>", "<img src='<div>'>", "</br>", "<input>", "<hr/>",
    "<div/>", "<section>", "</section>", "x", " ", "<", "</", "<!", "<!--", "-->", "<!-- <div> -->",
    "<!---->", "<!-->", "--", "->", "<script>", "</script>", "</SCRIPT>", "</script >", "</script/",
    "<script>'<div>'</script>", "<Script type='a>b'>", "<style>", "</style>", "<title>", "</title>",
    "<textarea>", "</textarea\n", "<noscript>", "</noscript>", "<iframe>", "</iframe>", "<xmp>", "</xmp>",
    "<scripts>", "</scripts>", "<template>", "</template>", "<svg>", "</svg>", "<svg/>", "<SVG>",
    "<math>", "</math>", "<svg><svg>", "<template><div>", "<plaintext>", "<x:y>", "</x:y>", "<h1>",
    "<a-b>", "\"", "'", "='", "=\"", ">", "<div a='", "<div a=\"", "</div a='>'>", "<9>", "< div>",
]


@pytest.mark.parametrize("seed", range(40))
def test_the_same_depth_on_generated_markup(seed):
    rng = random.Random(seed)
    for _ in range(250):
        html = "".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 60)))
        assert markup_depth(html) == reference_depth(html), html
        limit = rng.randrange(0, 6)
        assert markup_depth(html, limit) == reference_depth(html, limit), html
        assert markup_too_deep(html, limit) == (reference_depth(html, limit) > limit), html


def test_hostile_runs_stay_linear_and_equal():
    for html in ("<a " * 50_000, "<div>" * 3000, "<!--" * 20_000, "<script>" * 20_000,
                 "<div a='" * 20_000, "<svg>" * 3000 + "</svg>" * 3000, "<p><b>" * 20_000,
                 "</" * 50_000, "<template>" * 2000 + "<div>" * 600):
        assert markup_depth(html, 512) == reference_depth(html, 512)


@pytest.mark.parametrize("seed", range(10))
def test_the_same_depth_on_random_bytes(seed):
    rng = random.Random(seed)
    alphabet = list(b"<<<<>>>//!--'\" =\nabdivspcrtlemgxSCRIPTVG:9\xff")
    for _ in range(500):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 120)))
        assert markup_depth(data) == reference_depth(data), data
