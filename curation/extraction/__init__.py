"""HTML -> main text for web pages (the WARC reader's ``extractor: main_text``), and the
cheap markup checks that run before any extractor.

- ``extract_main_text(html)``: ``curation.extraction.main_text`` (design and figures in
  docs/extraction.md), on ``page`` (the parsed page), ``vocabulary`` (what markup names mean)
  and ``structured`` (the article a page declares in JSON-LD).
- ``markup_depth``/``markup_too_deep``, ``too_many_blocks``: ``curation.extraction.markup``.
"""
from curation.extraction.main_text import DEFAULT_PARAMS, MainTextParams, extract_main_text
from curation.extraction.markup import MAX_HTML_DEPTH, MAX_JUSTEXT_BLOCKS, markup_depth, markup_too_deep, parsed_depth, too_many_blocks

__all__ = ["DEFAULT_PARAMS", "MAX_HTML_DEPTH", "MAX_JUSTEXT_BLOCKS", "MainTextParams", "extract_main_text",
           "markup_depth", "markup_too_deep", "parsed_depth", "too_many_blocks"]
