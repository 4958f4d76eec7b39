"""CC-Stories (Trinh & Le 2018): one plain-text file per story."""
from __future__ import annotations

from typing import BinaryIO, Iterator

from curation.document import DeadLetter, Document, Removal, has_lone_surrogate
from curation.readers._io import DEFAULT_MAX_DOC_BYTES, id_name, printable_excerpt

# Codec by byte order mark; the "-sig"/plain 16/32 codecs consume the mark themselves.
_BOMS = ((b"\x00\x00\xfe\xff", "utf-32"), (b"\xff\xfe\x00\x00", "utf-32"),
         (b"\xef\xbb\xbf", "utf-8-sig"), (b"\xfe\xff", "utf-16"), (b"\xff\xfe", "utf-16"))


def read_cc_stories(
    fileobj: BinaryIO,
    file_name: str,
    source: str = "cc_stories",
    *,
    max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES,
    id_path: str | None = None,
) -> Iterator[Document | Removal | DeadLetter]:
    """The whole file is one story, id ``<source>/<id_path>`` (the path relative to the input
    root; default the base name); yields exactly one record.  UTF-8, with or without a byte
    order mark, or UTF-16/32 with one; anything else that is not valid UTF-8 is a dead letter.
    An empty or whitespace-only file is removed as ``empty_document``; a file over
    ``max_doc_bytes`` is removed as ``too_large``."""
    doc_id = f"{source}/{id_name(file_name, id_path)}"
    try:
        data = fileobj.read(max_doc_bytes + 1)
        size = len(data)
        if size > max_doc_bytes:
            while chunk := fileobj.read(1 << 20):  # count the rest without keeping it
                size += len(chunk)
    except Exception as exc:
        yield DeadLetter(source, f"{file_name}:0", f"unreadable file: {type(exc).__name__}: {exc}")
        return
    if size > max_doc_bytes:
        doc = Document(doc_id, source, "", meta={"bytes": size})
        yield Removal(doc, "read", "too_large", {"bytes": size, "max_doc_bytes": max_doc_bytes})
        return
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), "utf-8")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        error = "invalid_utf8" if encoding.startswith("utf-8") else f"invalid_{encoding.replace('-', '')}"
        yield DeadLetter(source, f"{file_name}:0", f"{error}: {exc}", printable_excerpt(data))
        return
    text = text.removeprefix("\ufeff")
    if has_lone_surrogate(text):  # UTF-16 decodes lone surrogates with its default handler
        yield DeadLetter(source, f"{file_name}:0", "invalid_unicode: lone surrogate in text",
                         printable_excerpt(data))
        return
    if not text.strip():
        yield Removal(Document(doc_id, source, text), "read", "empty_document")
        return
    yield Document(doc_id, source, text)
