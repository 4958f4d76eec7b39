"""Lines repeated across a site, per document and without Beam (curation.site_boilerplate)."""
from __future__ import annotations

import pytest

from curation.site_boilerplate import (CORPUS, SiteBoilerplateConfig, host_of, line_hashes,
                                       normalize_line, remove_lines)

PAGE = ("Home | News | Sport | About us\n\nThe council voted on Tuesday to rebuild the bridge.\n"
        "Work starts in May.\n\nShare this article\n\n© 2019 Example Media. All rights reserved.")


def test_normalize_line_folds_case_digits_punctuation_and_accents():
    assert normalize_line("© 2019 ACME Inc.") == normalize_line("© 2021  Acme, Inc") == "0000 acme inc"
    assert normalize_line("Café — Menü!") == "cafe menu"
    assert normalize_line(" ... | ") == ""


def test_host_of():
    assert host_of("https://www.Example.com/a/b?x=1") == "example.com"
    assert host_of("http://news.example.com:8080/") == "news.example.com"
    assert host_of(None) is None and host_of("") is None and host_of("not a url") is None
    assert host_of("http://[::1/") is None  # malformed: no host, never an error


def test_line_hashes_are_distinct_and_skip_empty_lines():
    text = "Share this article\n\nshare THIS article!\n---\nA real sentence."
    assert len(line_hashes(text)) == 2  # the two "share" lines normalise alike; "---" is empty
    assert len(line_hashes(text, min_chars=17)) == 1  # "share this article" is 18 characters


def test_remove_lines_removes_condemned_lines_and_counts_characters():
    bad = {line_hashes("Home | News | Sport | About us")[0], line_hashes("Share this article")[0],
           line_hashes("© 2024 Example Media. All rights reserved")[0]}
    out = remove_lines(PAGE, bad)
    assert out.text == "The council voted on Tuesday to rebuild the bridge.\nWork starts in May."
    assert out.lines_removed == 3 and out.chars_removed == len(PAGE) - len(out.text)
    assert remove_lines(PAGE, set()) == (PAGE, 0, 0)
    assert remove_lines(PAGE, {12345}) == (PAGE, 0, 0)
    assert remove_lines("Home | News | Sport | About us", bad).text == ""


def test_config_thresholds_and_validation():
    cfg = SiteBoilerplateConfig(host_documents=4, corpus_documents=100)
    assert (cfg.threshold("example.com"), cfg.threshold(CORPUS)) == (4, 100)
    assert not SiteBoilerplateConfig().enabled
    for kwargs, setting in (({"host_documents": 0}, "host_documents"),
                            ({"corpus_documents": -1}, "corpus_documents"),
                            ({"min_line_chars": 0}, "min_line_chars")):
        with pytest.raises(ValueError, match=f"^{setting}: "):
            SiteBoilerplateConfig(**kwargs)


def test_content_key_is_one_for_copies_differing_in_digits_case_and_spacing():
    from curation.site_boilerplate import content_key

    a = "Posted 2024-05-01\nThe bridge reopens.\n\nShare"
    b = "posted 2024-06-11\nThe  bridge reopens!\nShare"
    assert content_key(line_hashes(a)) == content_key(line_hashes(b))
    assert content_key(line_hashes(a)) != content_key(line_hashes("The bridge reopens.\nShare"))


def test_line_counts_count_distinct_contents_up_to_the_cap():
    from curation.site_boilerplate import LineCounts

    counts = LineCounts(cap=3)
    for content in (1, 1, 1, 2):  # a page served three times, and a second page
        counts.add("a.example", content, [10, 11 if content == 1 else 12])
    for content in range(100):
        counts.add("a.example", content, [13])  # a footer on every page: the set stops at 3
    counts.add("b.example", 5, [10])
    assert counts.above(1) == {"a.example": frozenset({10, 13})}
    assert counts.above(2) == {"a.example": frozenset({13})}
    assert counts.above(3) == {}
    assert len(counts._seen["a.example"][13]) == 3


def test_condemned_lines_per_host_and_corpus_wide():
    from curation.site_boilerplate import condemned_lines

    cfg = SiteBoilerplateConfig(enabled=True, host_documents=2, corpus_documents=3)
    docs = [("a.example", [1, 10 + i]) for i in range(3)]  # line 1 on three pages of a.example
    docs += [("a.example", [1, 10])] * 4  # copies of the first page: counted once
    docs += [(f"h{i}.example", [2, 20 + i]) for i in range(4)]  # line 2 on four hosts
    per_host, everywhere = condemned_lines(docs, cfg)
    assert per_host == {"a.example": frozenset({1})}
    assert everywhere == frozenset({2})  # line 1: in three distinct contents, not more than 3
