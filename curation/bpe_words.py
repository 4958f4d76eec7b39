"""Byte-level BPE ids, the same as ``tokenizers`` gives, four times cheaper: one regex pass in
the ``regex`` module and the BPE model run once per distinct word.

Profiling the curate job showed GPT-2 tokenization at ~2 ms of CPU per 4 KB document, about 1.7
ms of it in the ``ByteLevel`` pre-tokenizer's regex (Oniguruma, through ``tokenizers``), not in
BPE.  A byte-level BPE tokenizer's ids are, by construction, the concatenation over the
pre-tokenizer's pieces (``PATTERN`` matches, left to right) of the BPE model's ids for each
piece (its UTF-8 bytes mapped to the byte-level alphabet), so ``WordEncoder`` splits with the
same pattern in the ``regex`` module and memoises the model's answer per distinct piece
(words repeat: a document of 1,000 pieces meets a few hundred new ones), and the ids of each
whitespace-led chunk of pieces, so a text already met chunk by chunk costs one ``re`` scan and
dictionary look-ups.  BPE itself is always
``tokenizers``' own model, so merges, ranks and ``ignore_merges`` behave exactly as there.

It applies only to the tokenizer shape it reproduces (``applies``): no normalizer, exactly the
``ByteLevel(add_prefix_space=False, use_regex=True)`` pre-tokenizer, a BPE model, and added
tokens that are all special (the caller encodes them as plain text).  The two regex engines know
different Unicode versions: the ``regex`` module classifies code points that Oniguruma (as built
into ``tokenizers``) still treats as unassigned, so a text holding any code point unassigned in
this Python's Unicode database (``unicodedata``) is left to ``tokenizers`` (``encode`` returns
None).  ``tests/curation/test_bpe_words.py`` probes every other code point through
``tokenizers`` itself and requires the same split, and compares ids on text.
"""
from __future__ import annotations

import functools
import json
import re
import sys
import unicodedata
from itertools import chain
from typing import Any

PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
"""The ``ByteLevel`` pre-tokenizer's split (GPT-2's), as ``tokenizers`` compiles it."""
CACHE_WORDS = 400_000
"""Distinct pieces (and chunks) memoised per encoder (~100 MB each at most); a memo starts over
when full."""


def byte_alphabet() -> list[str]:
    """GPT-2's byte -> printable character table (``bytes_to_unicode``), indexed by byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = [""] * 256, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def unassigned(ch: str) -> bool:
    """Whether this Python's Unicode database has no character at ``ch`` (category Cn): the
    ``regex`` module may know one there that Oniguruma does not."""
    return unicodedata.category(ch) == "Cn"


def applies(tok: Any) -> bool:
    """Whether ``WordEncoder`` gives ``tok``'s ids (a ``tokenizers.Tokenizer`` encoding with
    ``encode_special_tokens`` on and no special tokens added around the text)."""
    cfg = json.loads(tok.to_str())
    pre = cfg.get("pre_tokenizer") or {}
    return (cfg.get("normalizer") is None
            and pre.get("type") == "ByteLevel" and pre.get("use_regex", True) is True
            and pre.get("add_prefix_space") is False
            and (cfg.get("model") or {}).get("type") == "BPE"
            and (cfg.get("model") or {}).get("dropout") is None  # deterministic: memoisable
            and all(t.get("special") for t in cfg.get("added_tokens") or []))


@functools.lru_cache(maxsize=1)
def _chunk_pattern() -> re.Pattern:
    """Chunks: a run of whitespace and the run of non-whitespace after it, with the ``regex``
    module's own whitespace (``str.isspace`` also counts U+001C-U+001F), found by the ``re``
    module's faster scan.  No piece of ``PATTERN`` holds whitespace after a non-whitespace
    character, so every chunk starts a piece, and a chunk splits alone as it does inside the
    text (the one look-ahead, ``(?!\\S)``, looks within the chunk's own whitespace run): a
    text's ids are its chunks' ids one after the other."""
    import regex

    every = "".join(map(chr, range(sys.maxunicode + 1)))
    space = "".join(f"\\U{ord(c):08x}" for c in regex.findall(r"\s", every))
    return re.compile(f"[{space}]*[^{space}]+|[{space}]+")


class WordEncoder:
    """``encode(text) -> ids`` of a tokenizer for which ``applies`` holds."""

    def __init__(self, tok: Any) -> None:
        import regex

        self._split = regex.compile(PATTERN).findall
        self._known = {chr(c) for c in range(128)}  # characters seen to be assigned
        self._model = tok.model
        # UTF-8 bytes read as Latin-1 code points 0-255, then mapped to the byte-level alphabet
        self._alphabet = str.maketrans({b: c for b, c in enumerate(byte_alphabet())})
        self._memo: dict[str, list[int]] = {}
        self._chunks = _chunk_pattern().findall
        self._chunk_memo: dict[str, list[int]] = {}

    def _piece(self, piece: str) -> list[int]:
        mapped = piece.encode("utf-8").decode("latin-1").translate(self._alphabet)
        ids = [t.id for t in self._model.tokenize(mapped)]
        if len(self._memo) >= CACHE_WORDS:
            self._memo.clear()
        self._memo[piece] = ids
        return ids

    def encode(self, text: str) -> list[int] | None:
        """The ids, or None for a text with a code point this Python's Unicode database does not
        know (the caller asks ``tokenizers``)."""
        if not text.isascii():
            for ch in set(text) - self._known:
                if unassigned(ch):
                    return None
                self._known.add(ch)
        chunks = self._chunks(text)
        got = list(map(self._chunk_memo.get, chunks))
        if None in got:
            got = [ids if ids is not None else self._chunk(chunk) for chunk, ids in zip(chunks, got)]
        return list(chain.from_iterable(got))

    def _chunk(self, chunk: str) -> list[int]:
        memo, out = self._memo, []
        for piece in self._split(chunk):
            ids = memo.get(piece)
            out += ids if ids is not None else self._piece(piece)
        if len(self._chunk_memo) >= CACHE_WORDS:
            self._chunk_memo.clear()
        self._chunk_memo[chunk] = out
        return out
