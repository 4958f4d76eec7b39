"""jusText's paragraph pass with each paragraph's text computed once: the same result as
``justext.justext(html, stoplist)`` with its default settings, in less than half the time.

Why: jusText 3.0's ``Paragraph.text`` is a property that joins the paragraph's text nodes and
normalizes their whitespace (a regex whose replacement is a Python function, called once per
whitespace run) on EVERY access, and the classification reads it four to six times per
paragraph (length, word count twice, stop words, link density, headings' distances).  On the
sample's pages that recomputation was half of jusText's time.

``paragraphs(html, stoplist)`` runs ``justext.justext``'s own five steps (``html_to_dom``,
``preprocessor``, ``ParagraphMaker.make_paragraphs``, ``classify_paragraphs``,
``revise_paragraph_classification``) with its defaults, and only the paragraph objects differ:

- ``text`` and ``words_count`` are computed once (a text node added later clears them);
- whitespace is normalized by two C-level substitutions instead of a callback per run: a run
  holding ``\\n`` or ``\\r`` becomes one ``\\n``, any other run one space, as
  ``justext.utils.normalize_whitespace`` does (a run with a line break is matched whole by
  ``\\s*[\\n\\r]\\s*``; what is left has no line break);
- stop words are counted with ``map`` instead of a generator;
- ``xpath`` (a string per paragraph that the classification never reads) is not built: None.

Nothing of jusText is patched.  ``supported()`` holds only for the jusText versions in
``VERIFIED`` whose replaced code is byte for byte the code read (sha256 of each source below);
anywhere else ``paragraphs`` is plain ``justext.justext`` (and says so once in the log), so the
result never depends on this module.  tests/curation/test_justext_fast.py compares both on the
sample's pages, the real pages and hostile markup.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import re
import textwrap

VERIFIED = ((3, 0), (3, 0))
_SOURCES = {
    # what the subclasses below replace or reproduce, as read in jusText 3.0.2
    "justext.core.justext": "865788fec1add9704fc0c9fd6d909c24daa0a717f3269f7f947425062c47a2b7",
    "justext.core.ParagraphMaker._start_new_pragraph": "67fb82561b95b7082030769074b54d5c726c3024f65d199404d2bb4b373a9184",
    "justext.paragraph.Paragraph": "638810ac2d88e31cf1533f5602577e48a8b97a308ce73db6190804d8c9de8c41",
    "justext.utils.normalize_whitespace": "9bffba6a89181d2c4ffe415b566339093ae5eedf3e9c919fbe397ba324238584",
    "justext.utils._replace_whitespace": "f81a4958774975cd568c4fae45818034b08647073bbfd711053500dc23b5bc92",
}
_LINE_BREAK_RUN = re.compile(r"\s*[\n\r]\s*")
_OTHER_RUN = re.compile(r"[^\S\n]+")
log = logging.getLogger(__name__)


def normalize_whitespace(text: str) -> str:
    """``justext.utils.normalize_whitespace(text)``."""
    return _OTHER_RUN.sub(" ", _LINE_BREAK_RUN.sub("\n", text))


def _source_digest(dotted: str) -> str:
    import importlib

    module, _, name = dotted.rpartition(".")
    try:
        obj = importlib.import_module(module)
        remaining = [name]
    except ImportError:
        module, _, outer = module.rpartition(".")
        obj, remaining = importlib.import_module(module), [outer, name]
    for part in remaining:
        obj = getattr(obj, part)
    return hashlib.sha256(textwrap.dedent(inspect.getsource(obj)).encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def supported() -> bool:
    """Whether the installed jusText is a verified version with the verified code."""
    from importlib import metadata

    from infra.compat import CompatError, minor_version

    try:
        version = metadata.version("jusText")
        low, high = VERIFIED
        if not low <= minor_version(version) <= high:
            raise CompatError(f"version {version} is outside {low} to {high}")
        changed = [name for name, digest in _SOURCES.items() if _source_digest(name) != digest]
        if changed:
            raise CompatError(f"jusText {version} changed {', '.join(changed)}")
    except (CompatError, metadata.PackageNotFoundError, OSError, TypeError, AttributeError) as e:
        log.warning("jusText's fast paragraph pass is off (%s): plain justext.justext is used", e)
        return False
    return True


@functools.lru_cache(maxsize=1)
def _classes():
    from justext.core import ParagraphMaker
    from justext.paragraph import Paragraph

    class OncePerParagraph(Paragraph):
        def __init__(self, path) -> None:
            self.dom_path = path.dom
            self.xpath = None  # never read by the classification; building it cost 7%
            self.text_nodes = []
            self.chars_count_in_links = 0
            self.tags_count = 0
            self.class_type = ""

        @functools.cached_property
        def text(self) -> str:
            return normalize_whitespace("".join(self.text_nodes).strip())

        @functools.cached_property
        def words(self) -> list[str]:
            return self.text.split()

        @property
        def words_count(self) -> int:
            return len(self.words)

        def append_text(self, text: str) -> str:
            text = normalize_whitespace(text)
            self.text_nodes.append(text)
            self.__dict__.pop("text", None)
            self.__dict__.pop("words", None)
            return text

        def stopwords_count(self, stopwords) -> int:
            return sum(map(stopwords.__contains__, map(str.lower, self.words)))

    class OncePerParagraphMaker(ParagraphMaker):
        def _start_new_pragraph(self) -> None:
            if self.paragraph and self.paragraph.contains_text():
                self.paragraphs.append(self.paragraph)
            self.paragraph = OncePerParagraph(self.path)

    return OncePerParagraphMaker


def paragraphs(html: str, stoplist: frozenset[str]) -> list:
    """``justext.justext(html, stoplist)``: the page's classified paragraphs."""
    import justext
    from justext import core

    if not supported():
        return justext.justext(html, stoplist)
    dom = core.preprocessor(core.html_to_dom(html, core.DEFAULT_ENCODING, None, core.DEFAULT_ENC_ERRORS))
    found = _classes().make_paragraphs(dom)
    core.classify_paragraphs(found, stoplist)
    core.revise_paragraph_classification(found)
    return found
