"""Streaming readers for each raw format; they yield ``Document``, ``Removal`` (stage
``read``) or ``DeadLetter`` records and never raise on bad input.

Every reader is ``reader(fileobj, file_name, ..., *, max_doc_bytes=..., id_path=...)`` where
``fileobj`` is a binary file object (as Beam's ``FileSystems.open`` returns with compression
type UNCOMPRESSED: the readers decompress themselves, by extension) and ``file_name`` is its
path.  Ids are ``<source>/<id_path>`` plus ``:<line>`` or ``#<record>`` (contract 1): the
pipeline passes ``id_path``, the file's path relative to the input root with ``%``, ``:``,
``#`` and line-breaking characters percent-escaped (``curation.readers.files.id_path``), so
ids are unique by construction; without it the escaped base name is used (a file read on its
own).  Dead-letter locations hold the full ``file_name``.
Each yielded record counts as one document read, so read = kept + removed + dead-lettered
holds per file.  What a reader is never given is checked before it opens anything
(``curation.readers.files.file_problem``: FIFOs, sockets, devices, directories, broken links).
"""
from __future__ import annotations

from typing import Callable

from curation.readers._io import DEFAULT_MAX_DOC_BYTES, TruncatedInput, base_name
from curation.readers.cc_stories import read_cc_stories
from curation.readers.jsonl import read_pile, read_realnews
from curation.readers.warc import WarcRange, decode_html, extract_text, plan_warc_ranges, read_warc

READERS: dict[str, Callable] = {
    "pile": read_pile,
    "warc": read_warc,
    "realnews": read_realnews,
    "cc_stories": read_cc_stories,
}


def reader_for(name: str) -> Callable:
    """The reader function for a format name (``pile``, ``warc``, ``realnews``, ``cc_stories``)."""
    try:
        return READERS[name]
    except KeyError:
        raise ValueError(f"unknown reader {name!r} (setting 'reader'); expected one of {sorted(READERS)}") from None


__all__ = [
    "DEFAULT_MAX_DOC_BYTES", "READERS", "TruncatedInput", "WarcRange", "base_name", "decode_html",
    "extract_text", "plan_warc_ranges", "read_cc_stories", "read_pile", "read_realnews", "read_warc", "reader_for",
]
