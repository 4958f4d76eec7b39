"""Personal-data detection and redaction (curation.pii) on a planted set with look-alikes."""
from __future__ import annotations

import pytest

from curation.pii import PiiConfig, find_pii, redact, redact_pii
from mtnlg.sample_data.pii_planted import planted_documents, score


def kinds(text: str) -> list[tuple[str, str]]:
    return [(sp.kind, text[sp.start:sp.end]) for sp in find_pii(text)]


def test_each_kind_found_with_its_offsets():
    text = "Write to ana.smith+news@example.co.uk, call (415) 555-0132 or +44 20 7946 0958; host 203.0.113.7."
    assert kinds(text) == [("email", "ana.smith+news@example.co.uk"), ("phone_number", "(415) 555-0132"),
                           ("phone_number", "+44 20 7946 0958"), ("ip_address", "203.0.113.7")]
    assert kinds("gateway 2001:db8::8a2e:370:7334 is down") == [("ip_address", "2001:db8::8a2e:370:7334")]


@pytest.mark.parametrize("text", [
    "Upgrade to version 1.2.3.4 now", "fixed in v10.0.0.1", "see section 2.1.3.4", "OID 1.3.6.1.4.1.311",
    "Chrome 120.0.6099.109", "on 2021-04-12 and 12/04/2021 and 04.12.2021", "ISBN 978-0-306-40615-7",
    "ISBN-10: 0-306-40615-2", "at 40.7128, -74.0060", "costs $1,234.56", "at 12:30:45", "std::vector",
    "MAC 00:1A:2B:3C:4D:5E", "logo@2x.png", "lodash@4.17.21", "follow @anna12", "ZIP 94105-1234",
    "years 1999-2005", "order 5551234567", "415-555.0132 mixes separators", "area 123-456-7890",
])
def test_look_alikes_are_not_personal_data(text):
    assert kinds(text) == []


def test_redaction_keeps_offsets_of_the_original_text():
    cfg = PiiConfig(enabled=True, placeholders={"email": "[email]"})
    text = "Mail a@example.com then b@example.org, or 203.0.113.9."
    out, spans = redact_pii(text, cfg)
    assert out == "Mail [email] then [email], or <IP_ADDRESS>."
    assert [text[s.start:s.end] for s in spans] == ["a@example.com", "b@example.org", "203.0.113.9"]
    assert redact(text, [], cfg.placeholders) == text
    assert redact_pii(text, PiiConfig(kinds=["ip_address"]))[0] == "Mail a@example.com then b@example.org, or <IP_ADDRESS>."


def test_config_names_the_bad_setting():
    with pytest.raises(ValueError, match="kinds: unknown kind .ssn."):
        PiiConfig(kinds=["ssn"])
    with pytest.raises(ValueError, match="placeholders: unknown kind"):
        PiiConfig(placeholders={"name": "x"})


def test_planted_set_precision_and_recall():
    docs = planted_documents(150, seed=3)
    found = [[(s.kind, s.start, s.end) for s in find_pii(d["text"])] for d in docs]
    result = score(docs, found)
    for kind, c in result["kinds"].items():
        assert c["tp"] > 20, kind  # the set plants every kind
        assert c["recall"] == 1.0, (kind, c)
    assert result["kinds"]["email"]["precision"] == 1.0
    assert result["kinds"]["ip_address"]["precision"] == 1.0
    # The only false positives: the planted phone-shaped score line, which no pattern can tell
    # from a US number without reading the sentence.
    assert set(result["false_positives_by_lookalike"]) <= {"ratio"}
    assert result["kinds"]["phone_number"]["precision"] > 0.8
