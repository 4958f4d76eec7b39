"""Runs inside a peer's own venv (never ours): personal-data spans of each text in a JSON list.

    /tmp/dtvenv/bin/python bench/peers/pii_peer_side.py datatrove texts.json out.json
    /tmp/dolmavenv/bin/python bench/peers/pii_peer_side.py dolma texts.json out.json

datatrove: ``PIIFormatter`` replaces e-mails, then IPv4 addresses (by default only public ones:
``ipaddress.ip_address(m).is_global``); its two replacers' public regexes and validator give the
spans of what ``format`` would replace, in the original text (an IP inside an e-mail is the
e-mail's).  Both settings of ``only_remove_public_ips`` are reported.  dolma: the
``pii_regex_v2`` tagger's attributes (e-mail, phone, IP spans).
Output: ``{setting: {"spans": [[[kind, start, end], ...] per text], "cpu_s": seconds}}``.
"""
from __future__ import annotations

import json
import sys
import time


def datatrove_side(texts: list[str]) -> dict:
    from datatrove.pipeline.formatters import PIIFormatter

    out = {}
    for public_only in (True, False):
        f = PIIFormatter(only_remove_public_ips=public_only)
        t0 = time.process_time()
        spans = []
        for text in texts:
            found = [("email", m.start(), m.end()) for m in f.emails_replacer.regex.finditer(text)]
            for m in f.ip_replacer.regex.finditer(text):
                if any(s <= m.start() < e for _, s, e in found):
                    continue
                if f.ip_replacer.validator is None or f.ip_replacer.validator(m.group(0)):
                    found.append(("ip_address", m.start(), m.end()))
            spans.append(found)
        out[f"datatrove PIIFormatter(only_remove_public_ips={public_only})"] = {
            "spans": spans, "cpu_s": time.process_time() - t0}
    return out


def dolma_side(texts: list[str]) -> dict:
    from dolma.core.data_types import Document
    from dolma.core.registry import TaggerRegistry

    out = {}
    for name in ("pii_regex_v2", "pii_regex_v1"):
        tagger = TaggerRegistry.get(name)()
        kinds = {"email_address": "email", "phone_number": "phone_number", "ip_address": "ip_address"}
        t0 = time.process_time()
        spans = []
        for i, text in enumerate(texts):
            result = tagger.predict(Document(source="bench", version="0", id=str(i), text=text))
            found = []
            for sp in result.spans:
                kind = next((v for k, v in kinds.items() if k in sp.type), None)
                if kind is not None:
                    found.append((kind, sp.start, sp.end))
            spans.append(found)
        out[f"dolma {name}"] = {"spans": spans, "cpu_s": time.process_time() - t0}
    return out


def main() -> None:
    peer, src, dst = sys.argv[1:4]
    with open(src) as f:
        texts = json.load(f)
    result = datatrove_side(texts) if peer == "datatrove" else dolma_side(texts)
    with open(dst, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
