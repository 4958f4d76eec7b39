"""jusText's paragraph pass with each paragraph's text computed once: the same result as
``justext.justext(html, stoplist)`` with its default settings, in a third of the time on the
sample's pages and about half on real pages.

Why: jusText 3.0's ``Paragraph.text`` is a property that joins the paragraph's text nodes and
normalizes their whitespace (a regex whose replacement is a Python function, called once per
whitespace run) on EVERY access, and the classification reads it four to six times per
paragraph (length, word count twice, stop words, link density, headings' distances).  On the
sample's pages that recomputation was half of jusText's time.

``paragraphs(html, stoplist)`` runs ``justext.justext``'s own five steps (``html_to_dom``,
``preprocessor``, ``ParagraphMaker.make_paragraphs``, ``classify_paragraphs``,
``revise_paragraph_classification``) with its defaults, and only the paragraph objects differ:

- ``text`` and ``words_count`` are computed once (a text node added later clears them), and the
  text nodes are kept as read and normalized together (jusText normalizes each node, then the
  joined text again: the same result, as every whitespace run still becomes ``\\n`` exactly
  when it holds a line break); only a link's characters are normalized on their own, for the
  link density, as ``ParagraphMaker.characters`` counts them;
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
import logging
import re

VERIFIED = ((3, 0), (3, 0))
_SOURCES = {
    # what the subclasses below replace or reproduce, as read in jusText 3.0.2
    "justext.core.justext": "865788fec1add9704fc0c9fd6d909c24daa0a717f3269f7f947425062c47a2b7",
    "justext.core.ParagraphMaker.characters": "94e2068688945256305f7b6d94abea2f2f468b54f5bdfc06aa90e48bb363e8c5",
    "justext.core.ParagraphMaker.startElementNS": "d2d6d795441ca284609ceed901e21df9a998fd39b8ad4dbc1f2d587eca69b4c1",
    "justext.utils.is_blank": "4761029ea6494a6d01a2f82c3d91399d2d6cb90bb50e3d50ce70cea2a898938f",
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


@functools.lru_cache(maxsize=1)
def supported() -> bool:
    """Whether the installed jusText is a verified version with the verified code."""
    from importlib import metadata

    from infra.compat import CompatError, require_sources

    try:
        version = metadata.version("jusText")
        require_sources("jusText", version, VERIFIED, _SOURCES, f"{__name__}'s fast path")
    except (CompatError, metadata.PackageNotFoundError, OSError, TypeError, AttributeError,
            ImportError) as e:
        log.warning("jusText's fast paragraph pass is off (%s): plain justext.justext is used", e)
        return False
    return True


@functools.lru_cache(maxsize=1)
def _classes():
    from justext.core import ParagraphMaker
    from justext.paragraph import Paragraph
    from justext.utils import is_blank

    class OncePerParagraph(Paragraph):
        """Its text nodes are kept as read; the text is normalized once, when first asked."""

        def __init__(self, path) -> None:
            self.dom_path = path.dom
            self.xpath = None  # never read by the classification; building it cost 7%
            self.text_nodes = []
            self.chars_count_in_links = 0
            self.tags_count = 0
            self.class_type = ""
            self._text = self._words = None

        @property
        def text(self) -> str:
            # normalizing the joined nodes equals joining the nodes normalized one by one (as
            # jusText does): each whitespace run still becomes "\n" exactly when it holds a
            # line break, whichever nodes its pieces came from
            if self._text is None:
                self._text = normalize_whitespace("".join(self.text_nodes).strip())
            return self._text

        @property
        def words(self) -> list[str]:
            if self._words is None:
                self._words = self.text.split()
            return self._words

        @property
        def words_count(self) -> int:
            return len(self.words)

        def append_text(self, text: str) -> str:
            self.text_nodes.append(text)
            self._text = self._words = None
            return text  # only ParagraphMaker.characters uses it: replaced below

        def stopwords_count(self, stopwords) -> int:
            return sum(map(stopwords.__contains__, map(str.lower, self.words)))

    class OncePerParagraphMaker(ParagraphMaker):
        def _start_new_pragraph(self) -> None:
            # jusText's "self.paragraph and contains_text()": a paragraph is kept when its
            # text is not empty (the truth test is len(text)); one without nodes has none
            current = self.paragraph
            if current is not None and current.text_nodes and current.text:
                self.paragraphs.append(current)
            self.paragraph = OncePerParagraph(self.path)

        def characters(self, content: str) -> None:
            if is_blank(content):
                return
            self.paragraph.append_text(content)
            if self.link:  # link characters are counted as jusText counts them: normalized
                self.paragraph.chars_count_in_links += len(normalize_whitespace(content))
            self.br = False

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
