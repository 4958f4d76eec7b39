"""Normalization examples and language identification."""
from __future__ import annotations

import pickle

import pytest

from curation.language import LanguageConfig, LanguageIdentifier, keep_language
from curation.normalize import normalize_text


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("The Mona Lisa doesnâ€™t have eyebrows.", "The Mona Lisa doesn't have eyebrows."),  # mojibake
        ("cafe\u0301", "caf\u00e9"),  # NFC composes
        ("a\x00b\x07c\u200bd\ufeff", "abcd"),  # control and invisible characters removed
        ("one   two\t\tthree  ", "one two three"),
        ("para one\r\n\r\n\r\n\r\npara two\nline", "para one\n\npara two\nline"),  # paragraphs kept
        ("line\u2028next", "line\nnext"),
        ("  \n\n  text  \n\n ", "text"),
    ],
)
def test_normalize_text(raw, expected):
    assert normalize_text(raw) == expected


def test_normalize_is_idempotent():
    text = "Some “quoted” text…\n\n\nwith  spaces\u00a0and\x0cfeeds"
    once = normalize_text(text)
    assert normalize_text(once) == once


@pytest.fixture(scope="module")
def lid():
    return LanguageIdentifier()


@pytest.mark.parametrize(
    "text, lang",
    [
        ("The weather was lovely yesterday, so we walked along the river\nand had lunch in the park.", "en"),
        ("Das Wetter war gestern sehr schön, deshalb sind wir am Fluss spazieren gegangen.", "de"),
        ("Le temps était magnifique hier, alors nous nous sommes promenés le long de la rivière.", "fr"),
    ],
)
def test_predict(lid, text, lang):
    got, score = lid.predict(text)
    assert got == lang and 0.65 <= score <= 1.0


def test_predict_empty_and_pickle(lid):
    assert lid.predict("  \n ") == ("unknown", 0.0)
    lid.predict("warm up the model")
    clone = pickle.loads(pickle.dumps(lid))
    assert clone._model is None  # the model never travels with the pickle
    assert clone.predict("This is an English sentence about cats and dogs.")[0] == "en"


def test_keep_language_rule():
    cfg = LanguageConfig()
    assert keep_language("en", 0.9, cfg).keep
    assert keep_language("de", 0.99, cfg).reason == "wrong_language"
    assert keep_language("en", 0.5, cfg).reason == "low_language_score"
    assert keep_language("de", 0.9, LanguageConfig(allowed=["en", "de"])).keep


@pytest.mark.parametrize("kwargs, setting", [({"allowed": []}, "allowed"), ({"min_score": 1.5}, "min_score"),
                                             ({"max_chars": 0}, "max_chars")])
def test_language_config_validation(kwargs, setting):
    with pytest.raises(ValueError, match=f"^{setting}: "):
        LanguageConfig(**kwargs)
