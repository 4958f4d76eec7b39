"""A page in two languages: its language is the one holding most of its text (curation.language)."""
from __future__ import annotations

import pytest

from curation.language import LanguageConfig, LanguageIdentifier, blocks, dominant, keep_language

EN = [
    "The old harbour town was quiet in the early morning, and the fishermen were already mending "
    "their nets on the stone quay while the gulls circled above the boats waiting for scraps.",
    "We walked up the hill to the castle, where a guide told us how the walls had been rebuilt "
    "three times after storms and sieges, and how the families of the town had paid for the work.",
    "In the afternoon we took the ferry across the bay and spent a few hours reading in a small "
    "cafe that served the best apple cake we had eaten on the whole trip along the coast.",
]
DE = [
    "Die alte Hafenstadt war am frühen Morgen still, und die Fischer flickten schon ihre Netze am "
    "steinernen Kai, während die Möwen über den Booten kreisten und auf Abfälle warteten.",
    "Wir gingen den Hügel hinauf zur Burg, wo uns eine Führerin erzählte, wie die Mauern nach "
    "Stürmen und Belagerungen dreimal wieder aufgebaut worden waren und wer die Arbeit bezahlte.",
    "Am Nachmittag nahmen wir die Fähre über die Bucht und verbrachten ein paar Stunden lesend in "
    "einem kleinen Café, das den besten Apfelkuchen der ganzen Reise entlang der Küste servierte.",
]


@pytest.fixture(scope="module")
def lid():
    return LanguageIdentifier()


def test_blocks_merge_short_lines_and_bound_the_prefix():
    text = "Home\nNews\nAbout us\n" + "a" * 30 + "\n\n" + "b" * 50 + "\nend"
    assert blocks(text, 20, 10_000) == ["Home News About us " + "a" * 30, "b" * 50 + " end"]
    assert blocks("  tiny  \n", 200, 10_000) == ["tiny"]  # a short text is one block
    assert blocks("x" * 500 + "\n" + "y" * 500, 100, 600) == ["x" * 500, "y" * 99]
    assert blocks(" \n\n \t", 10, 100) == []


def test_dominant_weights_by_characters():
    assert dominant([("en", 300), ("de", 100), ("en", 100)]) == ("en", 0.8)
    assert dominant([("ja", 90), ("en", 10)]) == ("ja", 0.9)
    assert dominant([]) == ("unknown", 0.0)


def test_english_page_quoting_german_is_english(lid):
    text = "\n\n".join([EN[0], EN[1], f'The sign on the gate said: "{DE[0]}"', EN[2]])
    c = lid.identify(text)
    assert c.lang == "en" and 0.55 < c.share < 0.9 and keep_language(c.lang, c.score, LanguageConfig()).keep
    # One call on the whole page is what the composition replaces: it must not be needed here.
    assert c.score >= 0.9


def test_german_page_with_english_caption_is_not_english(lid):
    text = "\n\n".join([DE[0], "Photo: the harbour at dawn, taken by our reader from Leeds.", DE[1], DE[2]])
    c = lid.identify(text)
    assert c.lang == "de" and c.share > 0.7
    assert keep_language(c.lang, c.score, LanguageConfig()).reason == "wrong_language"


def test_one_language_page_keeps_the_whole_text_score(lid):
    text = "\n\n".join(EN)
    c = lid.identify(text)
    labels, probs = lid._load().predict(" ".join(text.split()), k=1)
    assert (c.lang, c.share) == ("en", 1.0)
    assert c.score == pytest.approx(min(float(probs[0]), 1.0))
    assert lid.predict(text) == (c.lang, c.score)


def test_block_chars_is_validated():
    with pytest.raises(ValueError, match="^block_chars: "):
        LanguageConfig(block_chars=0)
