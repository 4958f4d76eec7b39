"""The pieces of a decontaminated document: how a split document is stored and read back.

Decontamination (``curation.decontamination.split_document``) cuts task n-grams out of a
document and keeps what is left as pieces.  The parent stays the unit of accounting (one
document, one stats row); its pieces live inside it:

- ``text`` is the pieces joined by ``PIECE_SEPARATOR`` (a blank line, so the text reads
  naturally in ``documents/``);
- ``meta["pieces"]`` lists ``{"id": "<parent id>#p<k>", "chars": <len(piece)>}`` in order.

Tokenization ends every piece with EOD (``split_pieces``), so no training sample joins text that
was never adjacent; ``piece_documents`` gives the pieces as documents of their own.  A document
that was never split has no ``pieces`` and is its own single piece.
"""
from __future__ import annotations

import dataclasses

from curation.document import Document

PIECE_SEPARATOR = "\n\n"


def join_pieces(doc_id: str, pieces: list[str]) -> tuple[str, list[dict]]:
    """``(text, meta_pieces)`` that store ``pieces`` of document ``doc_id``."""
    return (PIECE_SEPARATOR.join(pieces),
            [{"id": f"{doc_id}#p{k}", "chars": len(p)} for k, p in enumerate(pieces)])


def split_pieces(doc: Document) -> list[str]:
    """The pieces a document is tokenized as (the whole text if never split)."""
    pieces = doc.meta.get("pieces") if doc.meta else None
    if not pieces:
        return [doc.text]
    out, pos = [], 0
    for p in pieces:
        n = p["chars"] if isinstance(p, dict) else int(p)
        out.append(doc.text[pos:pos + n])
        pos += n + len(PIECE_SEPARATOR)
    return out


def piece_documents(doc: Document) -> list[Document]:
    """A split document's pieces as documents: id ``<parent id>#p<k>``, the parent's source,
    ``meta`` with ``parent`` and ``piece``.  An unsplit document is returned as itself."""
    pieces = doc.meta.get("pieces") if doc.meta else None
    if not pieces:
        return [doc]
    base = {k: v for k, v in doc.meta.items() if k != "pieces"}
    return [dataclasses.replace(doc, id=p["id"], text=text, meta={**base, "parent": doc.id, "piece": k},
                                tokens=None)
            for k, (p, text) in enumerate(zip(pieces, split_pieces(doc)))]
