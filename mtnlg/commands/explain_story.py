"""`mtnlg explain`: the story of one document in a curated RUN.

    mtnlg explain --run RUN ID
    mtnlg explain --run RUN --url URL
    mtnlg explain --run RUN ID --manifest manifest.json --train-config demo   (or --seq-length
                  L --samples N --seed S)

Prints its source and input location (``input_root`` + the path and line/record in its id),
every stage it passed with its scores and the thresholds that applied (language id, each
heuristic rule, quality, dedup, decontamination, tokens), and then either why it was removed
(for a duplicate, the whole chain to the document the corpus kept, with the Jaccard similarity
of fuzzy links) or where it is: shard, sequence and token range, and with ``--manifest`` the
blended samples (and training steps) that serve those tokens.  ``--json`` prints the same as
one JSON object.  RUN may be a local folder or an ``s3://``/``gs://`` URL (Beam FileSystems
options such as ``--s3_endpoint_url`` are accepted); only the files that hold the document are
read (``mtnlg.commands.explain_lookup``).  An unknown id or URL is one line on stderr and exit 2.
"""
from __future__ import annotations

import json
import time
from typing import Any

from mtnlg.commands.explain_lookup import ExplainError, RunReader, sample_stream

MAX_CHAIN = 10


def _config(info: dict) -> dict:
    return info.get("config") or {}


def _input_location(info: dict, doc_id: str, source: str) -> str:
    """``input_root`` joined with the path (and line/record) the id holds (contract 1)."""
    rest = doc_id[len(source) + 1:] if doc_id.startswith(source + "/") else doc_id
    root = info.get("input_root") or ""
    if rest.startswith("/") or "://" in rest or not root:
        return rest
    return root.rstrip("/") + "/" + rest


def _language(cfg: dict, row: dict) -> dict:
    lang_cfg = cfg.get("language") or {}
    if row["source"] in (cfg.get("skip_sources") or {}).get("language", []):
        return {"verdict": "skipped", "why": "source in skip_sources.language"}
    if row.get("lang") is None:
        return {"verdict": "not reached"}
    ok = row["lang"] in lang_cfg.get("allowed", []) and row["lang_score"] >= lang_cfg.get("min_score", 0)
    return {"verdict": "passed" if ok else "removed", "lang": row["lang"], "score": row["lang_score"],
            "allowed": lang_cfg.get("allowed"), "min_score": lang_cfg.get("min_score")}


def _heuristics(cfg: dict, row: dict) -> dict:
    from curation.heuristics import RULES, HeuristicsConfig

    if row["source"] in (cfg.get("skip_sources") or {}).get("heuristics", []):
        return {"verdict": "skipped", "why": "source in skip_sources.heuristics"}
    if row.get("heur_words") is None:
        return {"verdict": "not reached"}
    hc = HeuristicsConfig(**(cfg.get("heuristics") or {}))
    rules, failed = [], None
    for r in RULES:
        limit = r.threshold(hc)
        if limit is None:
            continue
        value = row[r.score]
        fails = r.fails(value, limit)
        failed = failed or (r.reason if fails else None)
        rules.append({"rule": r.reason, "score": r.score, "value": value, "bound": r.bound,
                      "threshold": limit, "fails": fails})
    return {"verdict": "removed" if failed else "passed", "first_failing": failed, "rules": rules}


def _quality(cfg: dict, row: dict) -> dict:
    q = cfg.get("quality") or {}
    if not q.get("enabled"):
        return {"verdict": "off"}
    if row["source"] not in q.get("sources", []):
        return {"verdict": "skipped", "why": "source not in quality.sources"}
    if row.get("quality_score") is None:
        return {"verdict": "not reached"}
    removed = row["outcome"] == "removed" and row["stage"] == "quality"
    out = {"verdict": "removed" if removed else "passed", "score": row["quality_score"], "rule": q.get("rule")}
    if q.get("rule") == "threshold":
        out["threshold"] = q.get("threshold")
    else:
        from curation.quality import pareto_keep_probability

        out.update(alpha=q.get("alpha"), seed=q.get("seed"),
                   keep_probability=round(pareto_keep_probability(row["quality_score"], q.get("alpha")), 4))
    return out


def _fate(row: dict) -> str:
    return "kept" if row["outcome"] == "kept" else f"{row['outcome']} at {row['stage']}: {row['reason']}"


def explain(run_dir: str, doc_id: str | None = None, url: str | None = None, manifest: str | None = None,
            stream: dict | None = None) -> dict[str, Any]:
    """The report of one document (a JSON-able dict); ``ExplainError`` for an unknown id/URL."""
    t0 = time.perf_counter()
    rd = RunReader(run_dir)
    if url is not None:
        doc_id = rd.id_of_url(url)
        if doc_id is None:
            raise ExplainError(f"no document with URL {url!r} in {run_dir}")
    entries = rd.entries(doc_id)
    row = rd.stats_row(doc_id, entries)
    if row is None:
        raise ExplainError(f"no document with id {doc_id!r} in {run_dir} (ids look like "
                           "'<source>/<path>:<line>' or '<source>/<path>#<record>')")
    cfg = _config(rd.info)
    report: dict[str, Any] = {
        "id": doc_id, "source": row["source"],
        "display_name": (rd.info.get("sources") or {}).get(row["source"], {}).get("display_name"),
        "input": _input_location(rd.info, doc_id, row["source"]), "url": row.get("url"),
        "outcome": row["outcome"], "stage": row["stage"], "reason": row["reason"],
        "detail": json.loads(row["detail"]) if row.get("detail") else None,
        "chars": row["chars"], "words": row["words"], "tokens": row.get("tokens"),
    }
    if row["outcome"] == "dead_letter":
        report["stages"] = {"read": {"verdict": "dead-lettered", "error": row["reason"]}}
        return _finish(report, rd, t0)
    pii = cfg.get("pii") or {}
    report["stages"] = {
        "read": {"verdict": "removed" if row["stage"] == "read" else "passed"},
        "pii": ({"verdict": "off"} if not pii.get("enabled") else
                {"verdict": "passed", "replaced": row.get("pii_spans") or []}),
        "language": _language(cfg, row), "heuristics": _heuristics(cfg, row), "quality": _quality(cfg, row),
    }
    site = cfg.get("site_boilerplate") or {}
    if not site.get("enabled"):
        report["stages"]["site_boilerplate"] = {"verdict": "off"}
    elif row.get("boilerplate_chars") is not None:  # judged: its verdict comes from the order
        report["stages"]["site_boilerplate"] = {"chars_removed": row["boilerplate_chars"]}
    dedup = rd.dedup_rows(doc_id, entries)
    for kind in ("exact", "fuzzy"):
        mine = [d for d in dedup if d["kind"] == kind]
        stage = f"{kind}_dedup"
        if row["stage"] == stage and row["outcome"] == "removed":
            report["stages"][stage] = {"verdict": "removed", **(mine[0] if mine else {})}
        elif mine:
            report["stages"][stage] = {"verdict": "passed (kept member of its cluster)", **mine[0]}
    if row["stage"] == "decontamination" and row["outcome"] == "removed":
        report["stages"]["decontamination"] = {"verdict": "removed", "detail": report["detail"]}
    else:
        cuts = rd.cuts(doc_id) if (cfg.get("decontamination") or {}).get("enabled") else []
        if cuts:
            report["stages"]["decontamination"] = {"verdict": "split", "cuts": [
                {k: c.get(k) for k in ("task", "start", "end")} for c in cuts]}
    report["stages"]["tokenize"] = {"tokens": row.get("tokens"),
                                    "min_tokens": (cfg.get("tokenizer") or {}).get("min_tokens")}
    _order_stages(report["stages"], row)
    if row["stage"] in ("exact_dedup", "fuzzy_dedup") and row["outcome"] == "removed":
        report["chain"] = _chain(rd, doc_id, row, entries, cfg)
    if row["outcome"] == "kept":
        loc = rd.shard_location(row["source"], doc_id)
        if loc is not None:
            loc.pop("text", None)
            loc["token_range"] = [loc["token_start"], loc["token_start"] + loc["tokens"]]
        report["location"] = loc
        if manifest and loc is not None and stream:
            report["sample_stream"] = sample_stream(manifest, rd.run_dir, row["source"], loc, **stream)
    return _finish(report, rd, t0)


def _order_stages(stages: dict, row: dict) -> None:
    """Every stage in pipeline order with a verdict: passed before the one that removed the
    document, not reached after it."""
    from curation.document import STAGES
    from pipelines.stages import STEPS

    order = [s for s in STEPS if s in STAGES or s == "pii"]  # the decision steps, and redaction
    at = order.index(row["stage"]) if row["outcome"] == "removed" and row["stage"] in order else len(order)
    for i, name in enumerate(order):
        s = stages.setdefault(name, {})
        if not s.get("verdict"):
            s["verdict"] = ("passed" if i < at else "removed" if i == at else "not reached")
        elif i > at and s["verdict"] == "passed":
            s["verdict"] = "not reached"
    if row["outcome"] == "kept":
        stages["tokenize"]["verdict"] = "kept"
    ordered = {k: stages.pop(k) for k in order if k in stages}
    stages.update(ordered)


def _finish(report: dict, rd: RunReader, t0: float) -> dict:
    report["read"] = {"indexed": rd.indexed, "files": rd.files_read,
                      "seconds": round(time.perf_counter() - t0, 4)}
    return report


def _text_of(rd: RunReader, doc_id: str, row: dict, entries: list[dict]) -> str | None:
    if row["outcome"] == "kept":
        loc = rd.shard_location(row["source"], doc_id)
        return loc and loc.get("text")
    removed = rd.removed_row(doc_id, entries, row["stage"])
    return removed and removed.get("text")


def _jaccard(a: str | None, b: str | None, fuzzy: dict) -> float | None:
    if a is None or b is None:
        return None
    from curation.minhash import shingles

    n, kind = fuzzy.get("ngram", 5), fuzzy.get("shingle", "word")
    sa, sb = shingles(a, n, kind), shingles(b, n, kind)
    return round(len(sa & sb) / len(sa | sb), 4) if sa | sb else 1.0


def _chain(rd: RunReader, doc_id: str, row: dict, entries: list[dict], cfg: dict) -> list[dict]:
    """Duplicate links from ``doc_id`` to the document the corpus kept (or where it ends)."""
    fuzzy = (cfg.get("dedup") or {}).get("fuzzy") or {}
    links, seen = [], {doc_id}
    cur_id, cur_row, cur_entries = doc_id, row, entries
    while cur_row["outcome"] == "removed" and cur_row["stage"] in ("exact_dedup", "fuzzy_dedup"):
        detail = json.loads(cur_row["detail"]) if cur_row.get("detail") else {}
        group = next((d for d in rd.dedup_rows(cur_id, cur_entries)
                      if d["kind"] == cur_row["stage"].split("_")[0]), {})
        # runs written before stats rows carried the removal detail: the group row names it
        kept = detail.get("kept") or group.get("kept_id")
        detail.setdefault("kept_source", group.get("kept_source"))
        link = {"from": cur_id, "stage": cur_row["stage"], "reason": cur_row["reason"], "to": kept,
                "to_source": detail.get("kept_source"), "cluster_size": group.get("cluster_size"),
                "similarity": group.get("similarity")}
        links.append(link)
        if kept is None or kept in seen or len(links) >= MAX_CHAIN:
            break
        if cur_row["reason"].startswith("dedup_against/"):
            link["end"] = "kept by an older run (curate --dedup-against)"
            break
        seen.add(kept)
        nxt_entries = rd.entries(kept)
        nxt = rd.stats_row(kept, nxt_entries)
        if nxt is None:
            link["end"] = "the kept document is not in this run's stats"
            break
        if cur_row["stage"] == "fuzzy_dedup":
            link["jaccard_to_kept"] = _jaccard(_text_of(rd, cur_id, cur_row, cur_entries),
                                               _text_of(rd, kept, nxt, nxt_entries), fuzzy)
        link["to_fate"] = _fate(nxt)
        if nxt["outcome"] == "kept":
            loc = rd.shard_location(nxt["source"], kept)
            if loc:
                link["to_location"] = {"prefix": loc["prefix"], "sequence": loc["sequence"],
                                       "token_range": [loc["token_start"], loc["token_start"] + loc["tokens"]]}
        cur_id, cur_row, cur_entries = kept, nxt, nxt_entries
    return links
