"""Pieces of a decontaminated document, without Beam: stored, read back, as documents."""
from __future__ import annotations

from curation.document import Document
from curation.pieces import PIECE_SEPARATOR, join_pieces, piece_documents, split_pieces


def _split(doc_id: str, pieces: list[str], **meta) -> Document:
    text, stored = join_pieces(doc_id, pieces)
    return Document(doc_id, "books3", text, url="http://x", meta={**meta, "pieces": stored}, tokens=99)


def test_join_then_split_round_trips_pieces_with_separators_inside():
    # a piece may itself hold blank lines: reading back goes by the recorded lengths, not by splitting
    pieces = ["first piece.\n\nwith a paragraph", "second", "third\n\n\nend"]
    doc = _split("owt/a.jsonl:3", pieces)
    assert doc.text == PIECE_SEPARATOR.join(pieces)
    assert doc.meta["pieces"] == [{"id": "owt/a.jsonl:3#p0", "chars": 30}, {"id": "owt/a.jsonl:3#p1", "chars": 6},
                                  {"id": "owt/a.jsonl:3#p2", "chars": 11}]
    assert split_pieces(doc) == pieces


def test_unsplit_document_is_its_own_piece():
    doc = Document("w/1", "wikipedia", "whole text")
    assert split_pieces(doc) == ["whole text"]
    assert piece_documents(doc) == [doc] and piece_documents(doc)[0] is doc
    assert split_pieces(Document("w/2", "wikipedia", "t", meta={"pieces": []})) == ["t"]


def test_piece_documents_keep_source_and_parent():
    doc = _split("rn/b.jsonl:0", ["alpha", "beta"], decontamination={"splits": 1})
    out = piece_documents(doc)
    assert [(d.id, d.source, d.text, d.url, d.tokens) for d in out] == [
        ("rn/b.jsonl:0#p0", "books3", "alpha", "http://x", None),
        ("rn/b.jsonl:0#p1", "books3", "beta", "http://x", None)]
    assert out[1].meta == {"decontamination": {"splits": 1}, "parent": "rn/b.jsonl:0", "piece": 1}
    assert "pieces" in doc.meta  # the parent is not changed


def test_legacy_piece_lengths_as_plain_ints():
    doc = Document("x", "books3", "ab\n\ncde", meta={"pieces": [2, 3]})
    assert split_pieces(doc) == ["ab", "cde"]
