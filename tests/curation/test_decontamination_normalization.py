"""Task texts are normalised and split exactly as documents are: typographic variants of a task
passage are found in (normalised) documents, both ways round, and normalisation never makes
different words equal."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from curation.decontamination import (
    build_task_ngrams, find_matches, normalized_words, split_document, task_ngrams, words,
)
from curation.normalize import normalize_text

# A dialogue passage as a reading-comprehension set would hold it: contractions, possessives,
# quotes, accents, ligature-prone letters, a dash and a hyphenated number.
PLAIN = ('"I didn\'t know," she said, "why he wasn\'t there, and I couldn\'t ask anyone." The café\'s '
         "owner - a naïve, affable man - said the office's final offer was fifty-five dollars, "
         "and it's flat.")
WORDS = normalized_words(PLAIN)
FILLER = ("The river town kept a small library where people of every age came to read and talk about "
          "history, science and music. ") * 4

# Typographic rewrites of text; each is something real copies of task text contain.
VARIANTS = {
    "curly_quotes": lambda t: (t.replace('"I', "\u201cI").replace(',"', ",\u201d").replace('."', ".\u201d")
                               .replace(' "', " \u201c").replace("'", "\u2019")),
    "ligatures": lambda t: t.replace("ffi", "\ufb03").replace("ff", "\ufb00").replace("fi", "\ufb01")
                            .replace("fl", "\ufb02"),
    "decomposed_accents": lambda t: t.replace("é", "e\u0301").replace("ï", "i\u0308"),
    "nbsp_and_thin_spaces": lambda t: t.replace(" a ", "\u00a0a\u00a0").replace("said the", "said\u202fthe")
                                       .replace("owner", "\u2009owner"),
    "dashes": lambda t: t.replace(" - a", " \u2014 a").replace("man -", "man\u2013").replace("fifty-", "fifty\u2010"),
    "acute_and_grave_apostrophes": lambda t: t.replace("didn't", "didn\u00b4t").replace("wasn't", "wasn`t"),
    "modifier_apostrophe": lambda t: t.replace("'", "\u02bc"),
    "fullwidth": lambda t: t.replace("I didn't", "\uff29 didn\uff07t"),
    "soft_hyphen_and_zero_width": lambda t: t.replace("office", "of\u00adfice").replace("final", "fi\u200bnal"),
    "line_wrapped_and_upper_case": lambda t: t.replace(" she said,", "\nSHE SAID,\n").replace(" offer", "\n\n\nOFFER"),
}


def _document(passage: str) -> str:
    """A normalised document with ``passage`` as a paragraph in the middle, as the pipeline sees it."""
    return normalize_text(FILLER + "\n\n" + passage + "\n\n" + FILLER)


def _all_windows_found(task_text: str, doc: str) -> None:
    index = build_task_ngrams([("race", task_text)])
    matches = find_matches(doc, index)
    assert len(WORDS) >= 13 and len(index) == len(WORDS) - 12
    assert [m.ngram for m in matches] == task_ngrams(PLAIN), "every 13-gram of the passage is found"
    pieces, info = split_document(doc, matches)
    assert info["splits"] == 1 and not any("affable" in p for p in pieces)


def test_issue_reproduction_curly_task_and_normalised_document():
    task = "She didn\u2019t know why he wasn\u2019t there, and she couldn\u2019t ask anyone; the house was empty."
    index = build_task_ngrams([("coqa", task)])
    doc = "Intro. " + task + " Outro."
    assert len(find_matches(doc, index)) == 4
    assert len(find_matches(normalize_text(doc), index)) == 4  # was 0: the task was indexed raw


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_typographic_task_text_is_found_in_a_normalised_document(variant):
    typographic = VARIANTS[variant](PLAIN)
    assert typographic != PLAIN
    assert normalized_words(typographic) == WORDS
    _all_windows_found(typographic, _document(PLAIN))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_clean_task_text_is_found_in_a_typographic_document(variant):
    _all_windows_found(PLAIN, _document(VARIANTS[variant](PLAIN)))


def test_different_variants_on_each_side():
    task = VARIANTS["ligatures"](VARIANTS["curly_quotes"](PLAIN))
    doc = VARIANTS["decomposed_accents"](VARIANTS["acute_and_grave_apostrophes"](VARIANTS["dashes"](PLAIN)))
    _all_windows_found(task, _document(doc))


# Normalisation must not create matches: words that differ in what they say stay different.
DIFFERENT = [
    ("café", "cafe"),            # an accent is part of the word (NFC composes it, never strips it)
    ("naïve", "naive"),
    ("it's", "its"),             # an apostrophe joins, it does not vanish
    ("didn't", "didn t"),
    ("cafe", "c\u0430fe"),      # Cyrillic a is not Latin a (no homoglyph folding)
    ("straße", "strasse"),       # lowercased, not case-folded
    ("fifty-five", "fiftyfive"),  # a dash separates words, it is not removed
    ("x²", "x2"),                # no compatibility (NFKC) folding of superscripts
]


@pytest.mark.parametrize("task_word, doc_word", DIFFERENT)
def test_normalisation_keeps_different_words_apart(task_word, doc_word):
    passage = "one two three four five six {} seven eight nine ten eleven twelve"
    index = build_task_ngrams([("boolq", passage.format(task_word))])
    assert find_matches(_document(passage.format(doc_word)), index) == []
    assert len(find_matches(_document(passage.format(task_word)), index)) == len(index) >= 1


def test_words_are_case_and_apostrophe_canonical():
    assert words("DIDN\u00b4T Don`t o\u2032clock \u2018quoted\u2019 ΟΔΟΣ") == [
        "didn't", "don't", "o'clock", "quoted", "οδος"]
    assert words("") == [] and words("--- ...") == []


_TRANSFORMS = st.lists(st.sampled_from(sorted(VARIANTS)), min_size=1, max_size=4)


@settings(max_examples=40, deadline=None)
@given(task_side=_TRANSFORMS, doc_side=_TRANSFORMS)
def test_any_combination_of_variants_still_matches(task_side, doc_side):
    task, doc = PLAIN, PLAIN
    for v in task_side:
        task = VARIANTS[v](task)
    for v in doc_side:
        doc = VARIANTS[v](doc)
    assert normalized_words(task) == normalized_words(doc) == WORDS
    index = build_task_ngrams([("race", task)])
    assert len(find_matches(_document(doc), index)) == len(WORDS) - 12
