"""The filter-score grid: re-thresholding a run from an aggregate, exactly.

Every document that reached the filter stages (language id, heuristics, quality) is put in one
cell of a grid: one coordinate per stored score (language score, each heuristic score, quality
score) plus two flags (language allowed, quality decision as run).  A coordinate is the score's
position among that score's *candidate thresholds* (the values a control in the dashboard can
take, which always include the run's own thresholds):

    b(v) = #{edges < v} + #{edges <= v}     (even: strictly between two edges; odd: on an edge)

so for every candidate threshold ``e_j`` both ``v < e_j`` (``b <= 2j``, a ``min`` rule fails)
and ``v > e_j`` (``b >= 2j + 2``, a ``max`` rule fails) are known from ``b`` alone.  Counting the
documents per (source, fate, cell), with their tokens and characters, is therefore enough to
tell, for ANY combination of candidate thresholds, exactly which documents pass every filter
and which rule removes the others first (``evaluate``): the same answer as
``curation.language.keep_language``, ``curation.heuristics.decide`` and the quality threshold
applied to each stored row.  Documents whose scores sit far from every candidate share a few
cells, so the table stays small (its size: bench/RESULTS.md, "Filter grid size").

What the grid cannot know, and says so:
* a document the run removed before a later filter was never scored by it: if new thresholds
  let it through the earlier filter, ``evaluate`` counts it as ``unscored``, not as kept;
* documents the filters passed but a later stage removed (dedup, decontamination, too few
  tokens, takedown) stay removed (``fate = later``): dedup decisions are not recomputed;
* tokens are only known for documents the run kept; for documents the filters removed that
  new thresholds would keep, tokens are estimated from their characters at the source's own
  tokens-per-character rate (``tokens_estimated`` in the result).

The quality rule ``pareto`` draws per document, so no threshold reproduces it: the grid keeps
the run's own quality decision as a flag, and a quality control switches to the ``threshold``
rule.

Pure Python, no Beam: the curate stages call ``GridSpec.aggregate_keys`` per stats row; the
dashboard embeds the spec and the cells and repeats ``evaluate`` in the page.
"""
from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from curation.heuristics import RULES, SCORE_COLUMNS, HeuristicsConfig

FILTER_STAGES = ("language", "heuristics", "quality")
RATIO_CANDIDATES = tuple(round(0.05 * i, 2) for i in range(1, 21))
CANDIDATES: dict[str, tuple[float, ...]] = {
    "min_words": (1, 5, 10, 20, 25, 30, 40, 50, 60, 75, 100, 128, 150, 200, 250, 300),
    "max_words": (1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000),
    "min_mean_word_length": (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0),
    "max_mean_word_length": (7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 14.0, 16.0, 20.0),
    "min_stop_words": (0, 1, 2, 3, 4, 5, 6, 8, 10),
    "drop_lorem_ipsum": (0.0,),
}
"""Candidate thresholds per heuristic setting; ratio settings use ``RATIO_CANDIDATES``."""
LANGUAGE_CANDIDATES = tuple(round(0.05 * i, 2) for i in range(0, 20))
QUALITY_CANDIDATES = tuple(round(0.05 * i, 2) for i in range(0, 21))


@dataclass(frozen=True)
class Control:
    """One threshold a dashboard control moves: ``section.setting`` (``setting`` may end with
    ``[n]`` for the n-gram rules) over ``values``; ``current`` is the run's (None: rule off)."""

    id: str
    section: str
    setting: str
    dim: str
    values: tuple[float, ...]
    current: float | None
    n: int | None = None


@dataclass(frozen=True)
class GridRule:
    """A keep rule on one grid coordinate, in the pipeline's order: ``bound`` ``min`` fails
    below the threshold, ``max`` above it, ``flag``/``zero`` when the coordinate is > 0 / == 0.
    The threshold is a control's value (``control``) or fixed (``fixed``)."""

    stage: str
    reason: str
    dim: str
    bound: str
    control: str | None = None
    fixed: float | None = None


@dataclass
class GridSpec:
    """Dimensions (name -> edges), controls and rules of a run's grid; JSON-able (the stats
    table carries it, so a reader needs nothing else)."""

    dims: dict[str, tuple[float, ...]]
    controls: list[Control]
    rules: list[GridRule]
    skip: dict[str, list[str]] = field(default_factory=dict)
    """Sources each filter stage passes unscored (a null coordinate there means "passes")."""
    quality_sources: list[str] | None = None
    """Sources the quality stage scores; None: the stage is off."""
    quality_rule: str = "threshold"
    allowed_languages: list[str] = field(default_factory=list)

    # -- building -------------------------------------------------------------------------------
    @classmethod
    def from_config(cls, language, heuristics: HeuristicsConfig, quality,
                    skip_sources: Mapping[str, list[str]] | None = None) -> "GridSpec":
        """The grid of a curate config (``LanguageConfig``, ``HeuristicsConfig``,
        ``QualityConfig``); every current threshold is one of the candidates."""
        dims: dict[str, set] = {"lang_ok": set(), "lang_score": set(LANGUAGE_CANDIDATES) | {language.min_score}}
        controls = [Control("language.min_score", "language", "min_score", "lang_score",
                            tuple(sorted(set(LANGUAGE_CANDIDATES) | {language.min_score})),
                            language.min_score)]
        rules = [GridRule("language", "wrong_language", "lang_ok", "zero", fixed=0.0),
                 GridRule("language", "low_language_score", "lang_score", "min", "language.min_score")]
        for col in SCORE_COLUMNS:
            dims[col] = set()
        seen: dict[str, Control] = {}
        for r in RULES:
            if r.setting is None:
                dims[r.score].add(float(r.fixed))
                rules.append(GridRule("heuristics", r.reason, r.score, r.bound, fixed=float(r.fixed)))
                continue
            cid = f"heuristics.{r.setting}" + (f"[{r.n}]" if r.n is not None else "")
            current = r.threshold(heuristics)
            if r.bound == "flag":
                values, current = (0.0,), (0.0 if current else None)
            else:
                base = CANDIDATES.get(r.setting, RATIO_CANDIDATES)
                values = tuple(sorted({float(v) for v in base} | ({float(current)} if current is not None else set())))
            dims[r.score] |= set(values)
            if cid not in seen:
                seen[cid] = Control(cid, "heuristics", r.setting, r.score, values,
                                    None if current is None else float(current), r.n)
                controls.append(seen[cid])
            rules.append(GridRule("heuristics", r.reason, r.score, r.bound, cid))
        q_on = bool(getattr(quality, "enabled", False))
        if q_on:
            values = tuple(sorted(set(QUALITY_CANDIDATES) | {float(quality.threshold)}))
            dims["quality_score"] = set(values)
            dims["quality_kept"] = set()
            current = float(quality.threshold) if quality.rule == "threshold" else None
            controls.append(Control("quality.threshold", "quality", "threshold", "quality_score",
                                    values, current))
            rules.append(GridRule("quality", "low_quality", "quality_score", "min", "quality.threshold"))
            rules.append(GridRule("quality", "low_quality", "quality_kept", "zero", "quality.as_run"))
        return cls({k: tuple(sorted(float(x) for x in v)) for k, v in dims.items()}, controls, rules,
                   {k: list(v) for k, v in (skip_sources or {}).items()},
                   list(quality.sources) if q_on else None,
                   getattr(quality, "rule", "threshold"), list(language.allowed))

    def to_json(self) -> dict[str, Any]:
        # dims as [name, edges] pairs: the order is the cells' coordinate order
        return {"format": 1, "dims": [[k, list(v)] for k, v in self.dims.items()],
                "controls": [c.__dict__ | {"values": list(c.values)} for c in self.controls],
                "rules": [r.__dict__ for r in self.rules], "skip": self.skip,
                "quality_sources": self.quality_sources, "quality_rule": self.quality_rule,
                "allowed_languages": self.allowed_languages}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "GridSpec":
        return cls({k: tuple(v) for k, v in data["dims"]},
                   [Control(**{**c, "values": tuple(c["values"])}) for c in data["controls"]],
                   [GridRule(**r) for r in data["rules"]], dict(data.get("skip") or {}),
                   data.get("quality_sources"), data.get("quality_rule", "threshold"),
                   list(data.get("allowed_languages") or []))

    # -- cells ----------------------------------------------------------------------------------
    def coordinate(self, dim: str, value) -> int | None:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        edges = self.dims[dim]
        if not edges:  # a flag: 0 or 1
            return int(bool(value))
        return bisect.bisect_left(edges, value) + bisect.bisect_right(edges, value)

    def cell(self, row: Mapping[str, Any]) -> list[int | None]:
        """The coordinates of a stats row, in ``dims`` order."""
        values = {"lang_ok": None if row.get("lang") is None else row["lang"] in self.allowed_languages,
                  "lang_score": row.get("lang_score") if row.get("lang") is not None else None,
                  "quality_score": row.get("quality_score")}
        q = row.get("quality_score")
        values["quality_kept"] = None if q is None else not (
            row.get("outcome") == "removed" and row.get("stage") == "quality")
        return [self.coordinate(d, values[d] if d in values else row.get(d)) for d in self.dims]

    def aggregate_keys(self, row: Mapping[str, Any]) -> Iterable[tuple[tuple, int]]:
        """``("grid", measure, source, fate, cell)`` keys of a stats row (none for a document
        that never reached the filters: dead letters, read-stage removals)."""
        fate = row_fate(row)
        if fate is None:
            return
        cell = ",".join("" if b is None else str(b) for b in self.cell(row))
        key = (row["source"], fate, cell)
        yield ("grid", "documents", *key), 1
        yield ("grid", "tokens", *key), int(row.get("tokens") or 0) if fate == "kept" else 0
        yield ("grid", "chars", *key), int(row.get("chars") or 0)


def row_fate(row: Mapping[str, Any]) -> str | None:
    """``kept``, ``filtered`` (removed by a filter stage), ``later`` (removed after the
    filters), or None for a document that never reached them."""
    if row["outcome"] == "kept":
        return "kept"
    if row["outcome"] != "removed" or row["stage"] == "read":
        return None
    return "filtered" if row["stage"] in FILTER_STAGES else "later"


def parse_cell(cell: str) -> list[int | None]:
    return [None if x == "" else int(x) for x in cell.split(",")]


# -- evaluating settings on the cells (the dashboard's script does the same) -----------------------
def _threshold(rule: GridRule, settings: Mapping[str, Any]):
    """The rule's threshold under ``settings``; None when the rule is off."""
    quality = settings.get("quality.threshold", "as_run")
    if rule.control == "quality.as_run":
        return 0.0 if quality == "as_run" else None
    if rule.control is None:
        return rule.fixed
    value = settings.get(rule.control)
    return None if value == "as_run" else value


def _fails(rule: GridRule, b: int, t: float, spec: GridSpec) -> bool:
    """Whether ``rule`` with threshold ``t`` removes a document at coordinate ``b``."""
    if rule.bound == "zero":
        return b == 0
    if rule.bound == "flag":
        return b >= 2
    edges = spec.dims[rule.dim]
    j = bisect.bisect_left(edges, t)
    if j == len(edges) or edges[j] != t:
        raise ValueError(f"{rule.control}: {t} is not a candidate threshold of the grid")
    return b <= 2 * j if rule.bound == "min" else b >= 2 * j + 2


def current_settings(spec: GridSpec) -> dict[str, Any]:
    """The run's own thresholds (quality: ``as_run``, the run's decisions)."""
    out: dict[str, Any] = {c.id: c.current for c in spec.controls}
    out["quality.threshold"] = "as_run"
    return out


def first_failure(spec: GridSpec, source: str, cell: list[int | None],
                  settings: Mapping[str, Any]) -> str | None:
    """``stage/reason`` of the first rule that removes a document in ``cell``, ``unscored``
    when a filter that applies to it never scored it, or None (it passes every filter)."""
    index = {d: i for i, d in enumerate(spec.dims)}
    for rule in spec.rules:
        t = _threshold(rule, settings)
        if t is None:
            continue
        b = cell[index[rule.dim]]
        if b is None:
            skipped = (source not in (spec.quality_sources or ()) if rule.stage == "quality"
                       else source in spec.skip.get(rule.stage, ()))
            if skipped:
                continue
            return "unscored"
        if _fails(rule, b, t, spec):
            return f"{rule.stage}/{rule.reason}"
    return None


def evaluate(spec: GridSpec, cells: Iterable[Mapping[str, Any]],
             settings: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per source: ``documents`` and ``tokens`` kept with these thresholds (documents a later
    stage removed stay removed), ``pass_filters``, ``removed`` by ``stage/reason`` (first
    failing rule), ``unscored``, ``removed_later``, ``tokens_estimated``."""
    rows = list(cells)
    rate_num: dict[str, int] = {}
    rate_den: dict[str, int] = {}
    for r in rows:
        if r["fate"] == "kept":
            rate_num[r["source"]] = rate_num.get(r["source"], 0) + r["tokens"]
            rate_den[r["source"]] = rate_den.get(r["source"], 0) + r["chars"]
    all_rate = sum(rate_num.values()) / max(1, sum(rate_den.values()))
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        src = r["source"]
        o = out.setdefault(src, {"documents": 0, "tokens": 0, "pass_filters": 0, "removed": {},
                                 "unscored": 0, "removed_later": 0, "tokens_estimated": 0})
        cell = parse_cell(r["cell"]) if isinstance(r["cell"], str) else r["cell"]
        why = first_failure(spec, src, cell, settings)
        n = r["documents"]
        if why == "unscored":
            o["unscored"] += n
        elif why is not None:
            o["removed"][why] = o["removed"].get(why, 0) + n
        else:
            o["pass_filters"] += n
            if r["fate"] == "later":
                o["removed_later"] += n
            elif r["fate"] == "kept":
                o["documents"] += n
                o["tokens"] += r["tokens"]
            else:
                rate = rate_num[src] / rate_den[src] if rate_den.get(src) else all_rate
                est = int(round(r["chars"] * rate))
                o["documents"] += n
                o["tokens"] += est
                o["tokens_estimated"] += est
    return out


def config_fragment(spec: GridSpec, settings: Mapping[str, Any]) -> str:
    """The ``language:`` / ``heuristics:`` / ``quality:`` YAML for ``settings`` that
    ``mtnlg curate`` accepts (merged over a source config's sections)."""
    import yaml

    heur: dict[str, Any] = {}
    for c in spec.controls:
        if c.section != "heuristics":
            continue
        v = settings.get(c.id)
        if c.setting == "drop_lorem_ipsum":
            heur[c.setting] = v is not None
        elif c.n is not None:
            heur.setdefault(c.setting, {})
            if v is not None:
                heur[c.setting][c.n] = _number(v)
        else:
            heur[c.setting] = None if v is None else _number(v)
    doc: dict[str, Any] = {"language": {"min_score": _number(settings["language.min_score"])},
                           "heuristics": heur}
    q = settings.get("quality.threshold", "as_run")
    if spec.quality_sources is not None and q != "as_run":
        doc["quality"] = {"rule": "threshold", "threshold": _number(q)}
    return yaml.safe_dump(doc, sort_keys=False)


def _number(v: float):
    return int(v) if float(v).is_integer() and abs(v) >= 1 else float(v)


def spec_json(spec: GridSpec) -> str:
    return json.dumps(spec.to_json(), sort_keys=True)
