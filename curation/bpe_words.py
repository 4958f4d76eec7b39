"""Byte-level BPE ids, the same as ``tokenizers`` gives, four times cheaper: one regex pass in
the ``regex`` module and the BPE model run once per distinct word.

Profiling the curate job showed GPT-2 tokenization at ~2 ms of CPU per 4 KB document, about 1.7
ms of it in the ``ByteLevel`` pre-tokenizer's regex (Oniguruma, through ``tokenizers``), not in
BPE.  A byte-level BPE tokenizer's ids are, by construction, the concatenation over the
pre-tokenizer's pieces (``PATTERN`` matches, left to right) of the BPE model's ids for each
piece (its UTF-8 bytes mapped to the byte-level alphabet), so ``WordEncoder`` splits with the
same pattern in the ``regex`` module and memoises the model's answer per distinct piece
(words repeat: a document of 1,000 pieces meets a few hundred new ones).  BPE itself is always
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

import json
import sys
import unicodedata
from functools import lru_cache
from typing import Any

PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
"""The ``ByteLevel`` pre-tokenizer's split (GPT-2's), as ``tokenizers`` compiles it."""
CACHE_WORDS = 400_000
"""Distinct pieces memoised per encoder (~100 MB at most); the memo starts over when full."""


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


@lru_cache(maxsize=1)
def unassigned_ranges() -> tuple[tuple[int, int], ...]:
    """Code point ranges unassigned (category Cn) in this Python's Unicode database, surrogates
    and private use left out (both engines treat those alike): texts with any of them go to
    ``tokenizers``."""
    ranges, start = [], None
    for c in range(sys.maxunicode + 2):
        cn = c <= sys.maxunicode and unicodedata.category(chr(c)) == "Cn"
        if cn and start is None:
            start = c
        elif not cn and start is not None:
            ranges.append((start, c - 1))
            start = None
    return tuple(ranges)


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


class WordEncoder:
    """``encode(text) -> ids`` of a tokenizer for which ``applies`` holds."""

    def __init__(self, tok: Any) -> None:
        import regex

        self._split = regex.compile(PATTERN).findall
        self._newer = regex.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in unassigned_ranges())
                                    + "]").search
        self._model = tok.model
        self._alphabet = byte_alphabet()
        self._memo: dict[str, list[int]] = {}

    def _piece(self, piece: str) -> list[int]:
        ids = [t.id for t in self._model.tokenize("".join(self._alphabet[b] for b in piece.encode("utf-8")))]
        if len(self._memo) >= CACHE_WORDS:
            self._memo.clear()
        self._memo[piece] = ids
        return ids

    def encode(self, text: str) -> list[int] | None:
        """The ids, or None for a text with a code point this Python's Unicode database does not
        know (the caller asks ``tokenizers``)."""
        if not text.isascii() and self._newer(text):
            return None
        memo, out = self._memo, []
        for piece in self._split(text):
            ids = memo.get(piece)
            out += ids if ids is not None else self._piece(piece)
        return out
