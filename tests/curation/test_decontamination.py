"""MT-NLG decontamination rule: 13-grams, whole short task texts, cuts, piece and split limits."""
from __future__ import annotations

import pytest

from curation.decontamination import (
    DecontaminationConfig, Match, build_task_ngrams, cut_window, find_matches, frequent_ngrams, split_document,
    task_ngrams, words_with_offsets,
)

TASK = "Which river flows through the middle of the ancient city of Rome and into the sea"  # 16 words
NGRAM = "which river flows through the middle of the ancient city of rome and"


def filler(n_chars: int, word: str = "lorem") -> str:
    """Clean filler text of exactly n_chars characters (words separated by spaces)."""
    out = (word + " ") * (n_chars // (len(word) + 1) + 1)
    return out[:n_chars]


def test_words_keep_offsets():
    text = "Hello, World! It's  fine."
    words = words_with_offsets(text)
    assert [w for w, _, _ in words] == ["hello", "world", "it's", "fine"]
    assert all(text[s:e].lower() == w for w, s, e in words)


def test_task_ngrams_lengths():
    assert task_ngrams(TASK)[0] == NGRAM and len(task_ngrams(TASK)) == 16 - 13 + 1
    eight = "one two three four five six seven eight"
    assert task_ngrams(eight) == [eight]  # 8-12 words: matched whole
    assert task_ngrams("one two three four five six seven") == []  # 7 words: ignored
    twelve = " ".join(f"w{i}" for i in range(12))
    assert task_ngrams(twelve) == [twelve]


def test_build_index_from_pairs_and_dict():
    idx = build_task_ngrams([("squad", TASK), ("lambada", TASK)])
    # an n-gram in several tasks goes to the smallest task name, whatever order they come in
    assert idx[NGRAM] == "lambada" and build_task_ngrams([("lambada", TASK), ("squad", TASK)])[NGRAM] == "lambada"
    assert len(idx) == 4 and idx.ngrams_per_task() == {"lambada": 4, "squad": 0}
    idx2 = build_task_ngrams({"piqa": ["One two three four five six seven eight!"]})
    assert dict(idx2.items()) == {"one two three four five six seven eight": "piqa"} and idx2.lengths == {8}


def test_find_matches_case_and_punctuation_insensitive():
    idx = build_task_ngrams([("squad", TASK), ("piqa", "one two three four five six seven eight")])
    text = "Intro. WHICH river flows, through the middle of the ancient city of Rome and... One two three " \
           "four five six seven eight."
    matches = find_matches(text, idx)
    assert [m.task for m in matches] == ["squad", "piqa"]
    m = matches[0]
    assert text[m.start_char:m.end_char] == "WHICH river flows, through the middle of the ancient city of Rome and"
    assert find_matches(text, idx, ignore={NGRAM}) == [matches[1]]  # frequent n-gram left alone
    assert find_matches(text, {}) == []


def test_frequent_ngrams_guard():
    assert frequent_ngrams({"a": 10, "b": 9, "c": 11}) == {"a", "c"}


def test_clean_text_is_returned_identical():
    text = "A clean document.\n\nNothing to see here at all."
    pieces, info = split_document(text, find_matches(text, build_task_ngrams([("squad", TASK)])))
    assert pieces == [text] and pieces[0] is text and info["splits"] == 0


def test_cut_plus_minus_200_and_piece_sizes():
    idx = build_task_ngrams([("squad", TASK)])
    left, right = filler(600), filler(600, "ipsum")
    text = left + " " + TASK + " " + right
    (m, *rest) = find_matches(text, idx)
    assert len(rest) == 3  # overlapping 13-grams of one occurrence ...
    pieces, info = split_document(text, [m, *rest])
    assert info["splits"] == 1  # ... merge into one cut
    assert len(pieces) == 2
    assert text.startswith(pieces[0]) and text.rstrip().endswith(pieces[1])
    # no sentence end in reach: the cut starts 200 chars (widened to a word boundary) before the match
    assert 600 - 200 - len("lorem ") <= len(pieces[0]) + 1 <= 600 - 200 + 1
    assert "river" not in " ".join(pieces)


def _doc_with_left_piece(n: int) -> tuple[str, list[Match]]:
    """A document whose left piece is one sentence of exactly n chars: the cut starts 200 chars
    before the match, inside a sentence without an end, and moves back to that sentence's start."""
    text = "x" * (n - 1) + ". " + filler(199) + " " + TASK
    return text, find_matches(text, build_task_ngrams([("squad", TASK)]))


@pytest.mark.parametrize("n, kept", [(199, False), (200, True)])
def test_min_piece_chars_boundary(n, kept):
    text, matches = _doc_with_left_piece(n)
    pieces, info = split_document(text, matches)
    assert info["splits"] == 1
    assert pieces == (["x" * (n - 1) + "."] if kept else [])
    assert info["pieces_dropped"] == (0 if kept else 1)


def test_cut_extends_to_sentence_boundaries():
    # match - 200 falls inside the "sit" sentence, match + 200 inside the "dolor" sentence
    text = (filler(400) + ". " + filler(250, "sit") + " holding the cut start. " + TASK + " "
            + filler(250, "dolor") + ". The next sentence stays whole. " + filler(300, "amet") + ".")
    pieces, info = split_document(text, find_matches(text, build_task_ngrams([("squad", TASK)])))
    assert pieces == [filler(400) + ".", "The next sentence stays whole. " + filler(300, "amet") + "."]
    start, end, task, ngram = info["cuts"][0]
    assert text[start:].startswith(filler(250, "sit")) and text[:end].endswith(filler(250, "dolor") + ".")
    assert (task, ngram) == ("squad", NGRAM)


def test_paragraph_break_is_a_sentence_boundary():
    left, right = filler(300), filler(400, "amet")
    text = left + "\n\n" + filler(250, "sit") + " " + TASK + " " + filler(250, "dolor") + "\n\n" + right
    pieces, _ = split_document(text, find_matches(text, build_task_ngrams([("squad", TASK)])))
    assert pieces == [left.strip(), right.strip()]


def test_no_boundary_in_reach_falls_back_to_whitespace():
    text = "Far away. " + filler(800) + " " + TASK + " " + filler(800, "ipsum") + ". Tail."
    m = find_matches(text, build_task_ngrams([("squad", TASK)]))
    start, end = cut_window(text, m[0], cut_chars=200, window=50)
    assert text[start - 1] == " " and m[0].start_char - 200 - len("lorem ") <= start <= m[0].start_char - 200
    assert text[end] == " " and m[0].end_char + 200 <= end <= m[0].end_char + 200 + len("ipsum ")


def _doc_with_occurrences(k: int) -> str:
    sep = filler(450)  # > 2 * 200, so cuts never merge
    return sep + "".join(" " + TASK + " " + sep for _ in range(k))


@pytest.mark.parametrize("k, dropped", [(10, False), (11, True)])
def test_max_splits_boundary(k, dropped):
    text = _doc_with_occurrences(k)
    pieces, info = split_document(text, find_matches(text, build_task_ngrams([("squad", TASK)])))
    assert info["splits"] == k
    assert (pieces is None) is dropped
    if not dropped:
        assert len(pieces) == 0 or all(len(p) >= 200 for p in pieces)


def test_split_parameters_and_config_validation():
    text = _doc_with_occurrences(2)
    matches = find_matches(text, build_task_ngrams([("squad", TASK)]))
    assert split_document(text, matches, max_splits=1)[0] is None
    pieces, _ = split_document(text, matches, cut_chars=0, min_piece_chars=1)
    assert len(pieces) == 3 and "river" not in "".join(pieces)
    assert DecontaminationConfig().cut_chars == 200
    with pytest.raises(ValueError, match="^max_splits: must be >= 1"):
        DecontaminationConfig(max_splits=0)
