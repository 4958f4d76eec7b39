"""A planted set for measuring personal-data detection: prose with real-looking e-mail
addresses, IP addresses and phone numbers at known offsets, mixed with the look-alikes real
text is full of (version and section numbers, dates, ISBNs, coordinates, prices, clock times,
MAC addresses, OIDs, asset names like ``icon@2x.png``, ``@handles``, ``pkg@1.2.3``).

``planted_documents(n, seed)`` -> documents ``{"text", "pii": [(kind, start, end)],
"lookalikes": [(category, start, end)]}``; the same seed gives the same set.  Used by
``tests/curation/test_pii.py`` and ``bench/pii/pii.py`` (which also runs datatrove's tagger
on the same texts).  Values are random, drawn from reserved ranges where such ranges exist
(example.com/.org/.net domains, 555-01xx numbers, documentation IP blocks), so no real person
is named.
"""
from __future__ import annotations

import random

FILLER = (
    "The committee met again on Tuesday to review the proposal.",
    "Several members asked for more time to read the report.",
    "Our team spent most of the week testing the new release.",
    "The museum reopened after a long renovation of its east wing.",
    "Local farmers expect a good harvest if the weather holds.",
    "Readers wrote in with questions about the last article.",
    "The library extended its opening hours during the exam period.",
    "Volunteers cleaned the river banks over the weekend.",
)
FIRST = ("anna", "ben", "carla", "dmitri", "elif", "farid", "grace", "hiro", "ines", "jamal")
LAST = ("smith", "nguyen", "garcia", "muller", "okafor", "rossi", "kowalski", "tanaka")
DOMAINS = ("example.com", "example.org", "example.net", "mail.example.com", "dept.example.co.uk")


def _email(r: random.Random) -> str:
    user = r.choice((f"{r.choice(FIRST)}.{r.choice(LAST)}", f"{r.choice(FIRST)}{r.randint(1, 99)}",
                     f"{r.choice(FIRST)}_{r.choice(LAST)}", f"{r.choice(FIRST)}+news"))
    return f"{user}@{r.choice(DOMAINS)}"


def _ipv4(r: random.Random) -> str:
    """Half from documentation and private blocks, half random public-looking addresses (some
    taggers, datatrove's by default, only replace public ones)."""
    if r.random() < 0.5:
        return f"{r.randint(11, 99)}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"
    block = r.choice(("192.0.2", "198.51.100", "203.0.113", f"10.{r.randint(0, 255)}.{r.randint(0, 255)}",
                      f"172.{r.randint(16, 31)}.{r.randint(0, 255)}"))
    return f"{block}.{r.randint(1, 254)}"


def _ipv6(r: random.Random) -> str:
    groups = [f"{r.randint(0, 0xFFFF):x}" for _ in range(r.choice((2, 3, 4)))]
    return "2001:db8::" + ":".join(groups)


def _phone(r: random.Random) -> str:
    area, line = r.randint(201, 989), f"01{r.randint(0, 99):02d}"
    return r.choice((f"({area}) 555-{line}", f"{area}-555-{line}", f"{area}.555.{line}",
                     f"+1 {area} 555 {line}", f"1-{area}-555-{line}",
                     f"+44 20 7946 {r.randint(0, 999):03d}{r.randint(0, 9)}",
                     f"+49 30 {r.randint(100, 999)} {r.randint(1000, 9999)}",
                     f"+33 1 {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)} {r.randint(10, 99)}"))


def contact_line(r: random.Random) -> tuple[str, list[str]]:
    """A news article's closing contact line and the kinds of personal data it holds."""
    email, phone = _email(r), _phone(r)
    return r.choice((
        (f"Contact the reporter at {email} or {phone}.", ["email", "phone_number"]),
        (f"Tips: {email}", ["email"]),
        (f"Readers can reach the newsroom at {phone}.", ["phone_number"]),
        (f"The outage began when the gateway at {_ipv4(r)} stopped answering; write to {email}.",
         ["ip_address", "email"]),
    ))


PII_TEMPLATES = (
    ("email", "For details write to {} before Friday."),
    ("email", "Contact: {}"),
    ("email", "Send your photos to {}, and we will print the best ones."),
    ("ip_address", "The requests came from {} according to the server log."),
    ("ip_address", "Connect the printer to {} and restart it."),
    ("ip_address", "Blocked host {} after repeated login failures."),
    ("phone_number", "Call us at {} between nine and five."),
    ("phone_number", "Tel. {} (office hours only)"),
    ("phone_number", "Reservations: {}."),
)


def _lookalike(r: random.Random) -> tuple[str, str]:
    """(category, sentence with one look-alike in braces)."""
    y, m, d = r.randint(1990, 2024), r.randint(1, 12), r.randint(1, 28)
    options = {
        "version": lambda: f"Upgrade to version {r.randint(1, 12)}.{r.randint(0, 9)}.{r.randint(0, 9)}.{r.randint(0, 99)} today.",
        "version_v": lambda: f"The fix shipped in v{r.randint(1, 12)}.{r.randint(0, 9)}.{r.randint(0, 20)}.{r.randint(0, 9)}.",
        "browser_build": lambda: f"Tested with Chrome {r.randint(90, 125)}.0.{r.randint(4000, 6500)}.{r.randint(10, 200)}.",
        "section": lambda: f"See section {r.randint(1, 9)}.{r.randint(1, 9)}.{r.randint(1, 9)}.{r.randint(1, 9)} of the manual.",
        "oid": lambda: f"The object id is 1.3.6.1.4.1.{r.randint(100, 60000)}.",
        "date_iso": lambda: f"The meeting on {y}-{m:02d}-{d:02d} was cancelled.",
        "date_dotted": lambda: f"Published {d:02d}.{m:02d}.{y} in the gazette.",
        "date_slash": lambda: f"Deadline: {m:02d}/{d:02d}/{y}.",
        "isbn13": lambda: f"ISBN 978-{r.randint(0, 1)}-{r.randint(100, 999)}-{r.randint(10000, 99999)}-{r.randint(0, 9)} is the paperback.",
        "isbn10": lambda: f"ISBN-10: {r.randint(0, 9)}-{r.randint(100, 999)}-{r.randint(10000, 99999)}-{r.randint(0, 9)}.",
        "coordinates": lambda: f"The summit is at {r.uniform(-80, 80):.4f}, {r.uniform(-170, 170):.4f}.",
        "price": lambda: f"It costs ${r.randint(1, 9)},{r.randint(100, 999)}.{r.randint(10, 99)} per unit.",
        "time": lambda: f"Doors open at {r.randint(10, 23)}:{r.randint(10, 59)}:{r.randint(10, 59)} sharp.",
        "mac": lambda: "Its MAC address is " + ":".join(f"{r.randint(0, 255):02X}" for _ in range(6)) + ".",
        "asset": lambda: f"Replace logo@2x.png and {r.choice(FIRST)}@3x.jpg in the theme.",
        "handle": lambda: f"Follow @{r.choice(FIRST)}{r.randint(1, 99)} for updates.",
        "npm": lambda: f"Pin lodash@{r.randint(1, 4)}.{r.randint(0, 17)}.{r.randint(0, 21)} in the lockfile.",
        "zip4": lambda: f"Mail it to the office, ZIP {r.randint(10000, 99999)}-{r.randint(1000, 9999)}.",
        "range": lambda: f"Figures for {y}-{y + 1} rose by {r.randint(2, 40)} percent.",
        "long_number": lambda: f"Your order number is {r.randint(10 ** 9, 10 ** 10 - 1)}.",
        "cxx": lambda: "Use std::vector instead of raw arrays.",
        "ratio": lambda: f"The score was {r.randint(100, 999)}-{r.randint(100, 999)}-{r.randint(1000, 9999)} on the old scale, not a phone.",
    }
    category = r.choice(sorted(options))
    return category, options[category]()


def planted_documents(n: int = 200, seed: int = 0, pii_per_doc: tuple[int, int] = (0, 3),
                      lookalikes_per_doc: tuple[int, int] = (1, 4)) -> list[dict]:
    """``n`` documents of 6-12 sentences, each with some planted personal data and look-alikes.

    The ``ratio`` look-alike (three groups shaped exactly like a US number) is a deliberate
    ambiguity no pattern can resolve without context: it bounds precision from above."""
    r = random.Random(seed)
    makers = {"email": _email, "ip_address": lambda rr: (_ipv4(rr) if rr.random() < 0.8 else _ipv6(rr)),
              "phone_number": _phone}
    docs = []
    for _ in range(n):
        sentences: list[tuple[str | None, str, str | None]] = [(None, r.choice(FILLER), None)
                                                              for _ in range(r.randint(4, 8))]
        for _ in range(r.randint(*pii_per_doc)):
            kind, template = r.choice(PII_TEMPLATES)
            sentences.insert(r.randint(0, len(sentences)), (kind, template, makers[kind](r)))
        for _ in range(r.randint(*lookalikes_per_doc)):
            category, sentence = _lookalike(r)
            sentences.insert(r.randint(0, len(sentences)), ("~" + category, sentence, None))
        text, pii, lookalikes = "", [], []
        for kind, sentence, value in sentences:
            if text:
                text += "\n" if r.random() < 0.2 else " "
            if kind is not None and not kind.startswith("~"):
                before, _, after = sentence.partition("{}")
                start = len(text) + len(before)
                pii.append((kind, start, start + len(value)))
                text += before + value + after
            else:
                if kind is not None:
                    lookalikes.append((kind[1:], len(text), len(text) + len(sentence)))
                text += sentence
        docs.append({"text": text, "pii": pii, "lookalikes": lookalikes})
    return docs


def score(docs: list[dict], found: list[list[tuple[str, int, int]]]) -> dict:
    """Precision and recall per kind of ``found`` (per document: (kind, start, end)) against the
    planted spans.  A found span is correct when it overlaps a planted span of the same kind by
    at least half of the planted span; false positives are attributed to the look-alike
    sentence they fall in."""
    out = {k: {"tp": 0, "fp": 0, "fn": 0} for k in ("email", "ip_address", "phone_number")}
    fp_by = {}
    for doc, spans in zip(docs, found):
        matched = set()
        for kind, s, e in spans:
            hit = None
            for j, (pk, ps, pe) in enumerate(doc["pii"]):
                if pk == kind and j not in matched and min(e, pe) - max(s, ps) >= (pe - ps) / 2:
                    hit = j
                    break
            if hit is None:
                out[kind]["fp"] += 1
                cat = next((c for c, ls, le in doc["lookalikes"] if ls <= s < le), "prose")
                fp_by[cat] = fp_by.get(cat, 0) + 1
            else:
                matched.add(hit)
                out[kind]["tp"] += 1
        for j, (pk, _, _) in enumerate(doc["pii"]):
            if j not in matched:
                out[pk]["fn"] += 1
    for k, c in out.items():
        c["precision"] = c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else None
        c["recall"] = c["tp"] / (c["tp"] + c["fn"]) if c["tp"] + c["fn"] else None
    return {"kinds": out, "false_positives_by_lookalike": dict(sorted(fp_by.items()))}
