import pytest

from pipelines.runfolder.report import AccountingError, accounting, table

COUNTS = [
    {"source": "books3", "stage": "tokenize", "outcome": "kept", "reason": None, "documents": 3},
    {"source": "books3", "stage": "heuristics", "outcome": "removed", "reason": "too_few_words", "documents": 1},
    {"source": "books3", "stage": "read", "outcome": "dead_letter", "reason": "JSONDecodeError", "documents": 1},
]
SHARDS = [{"source": "books3", "prefix": "shards/books3/books3_00000", "documents": 3, "tokens": 900}]


def test_accounting_per_source_and_totals():
    acc = accounting(COUNTS, [{"source": "books3", "read": 5}], SHARDS)
    s = acc["sources"]["books3"]
    assert (s["read"], s["kept"], s["dead_lettered"], s["tokens"]) == (5, 3, 1, 900)
    assert s["removed"] == {"heuristics/too_few_words": 1}
    assert acc["totals"] == {"read": 5, "kept": 3, "dead_lettered": 1, "tokens": 900, "removed": 1}
    assert "books3" in table(acc["sources"])


def test_accounting_fails_loudly_when_documents_go_missing():
    with pytest.raises(AccountingError, match="books3: read 6 != kept 3"):
        accounting(COUNTS, [{"source": "books3", "read": 6}], SHARDS)


def test_accounting_fails_when_shards_hold_other_than_the_kept_documents():
    twice = SHARDS + [{"source": "books3", "prefix": "shards/books3/books3_00001", "documents": 1, "tokens": 9}]
    with pytest.raises(AccountingError, match="3 kept documents but 4 in shards"):
        accounting(COUNTS, [{"source": "books3", "read": 5}], twice)  # a duplicate is a failure too
    with pytest.raises(AccountingError, match="3 kept documents but 2 in shards"):
        accounting(COUNTS, [{"source": "books3", "read": 5}], [dict(SHARDS[0], documents=2)])
