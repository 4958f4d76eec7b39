"""CC-Stories (Trinh & Le 2018): one plain-text file per story."""
from __future__ import annotations

from typing import BinaryIO, Iterator

from curation.document import DeadLetter, Document, Removal
from curation.readers._io import DEFAULT_MAX_DOC_BYTES, base_name, printable_excerpt


def read_cc_stories(
    fileobj: BinaryIO,
    file_name: str,
    source: str = "cc_stories",
    *,
    max_doc_bytes: int = DEFAULT_MAX_DOC_BYTES,
) -> Iterator[Document | Removal | DeadLetter]:
    """The whole file is one story, id ``<source>/<base name>``; yields exactly one record.
    Invalid UTF-8 is a dead letter; an empty or whitespace-only file is removed as
    ``empty_document``; a file over ``max_doc_bytes`` is removed as ``too_large``."""
    doc_id = f"{source}/{base_name(file_name)}"
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
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        yield DeadLetter(source, f"{file_name}:0", f"invalid_utf8: {exc}", printable_excerpt(data))
        return
    text = text.removeprefix("\ufeff")
    if not text.strip():
        yield Removal(Document(doc_id, source, text), "read", "empty_document")
        return
    yield Document(doc_id, source, text)
