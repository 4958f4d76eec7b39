"""What a blend search writes besides its proxies: blend specs with other weights, and tables.

``with_weights`` gives the spec a proxy or the proposal trains on (same sources, display names,
families, split and caps; only the weights and the name change); ``write_spec_yaml`` writes it
in the shipped specs' format, read back through ``load_blend_spec`` so a written file is
always one ``mtnlg blend --spec`` accepts.
"""
from __future__ import annotations

import dataclasses
import os

import yaml

from blending.spec import BlendSpec, load_blend_spec


def with_weights(spec: BlendSpec, weights, name: str | None = None,
                 description: str | None = None, split="keep") -> BlendSpec:
    """``spec`` with ``weights`` (source order); ``split="keep"`` keeps the spec's split."""
    if len(weights) != len(spec.sources):
        raise ValueError(f"{len(weights)} weights for {len(spec.sources)} sources")
    sources = tuple(dataclasses.replace(s, weight=float(w)) for s, w in zip(spec.sources, weights))
    changes = {"sources": sources, "path": None}
    if name is not None:
        changes["name"] = name
    if description is not None:
        changes["description"] = description
    if split != "keep":
        changes["split"] = None if split is None else tuple(float(x) for x in split)
    return dataclasses.replace(spec, **changes)


def spec_to_dict(spec: BlendSpec) -> dict:
    out = {"name": spec.name}
    if spec.description:
        out["description"] = spec.description
    out["train_tokens"] = spec.train_tokens
    if spec.dataset_tokens is not None:
        out["dataset_tokens"] = spec.dataset_tokens
    out["epoch_cap"] = spec.epoch_cap
    if spec.split is not None:
        out["split"] = [float(x) for x in spec.split]
    out["sources"] = []
    for s in spec.sources:
        d = {"name": s.name}
        if s.display_name:
            d["display_name"] = s.display_name
        if s.aliases:
            d["aliases"] = list(s.aliases)
        if s.family:
            d["family"] = s.family
        d["weight"] = float(s.weight)  # repr precision: the sum stays 1 within 1e-12
        if s.paper_tokens_b is not None:
            d["paper_tokens_b"] = s.paper_tokens_b
            d["paper_tokens_confirmed"] = s.paper_tokens_confirmed
        out["sources"].append(d)
    return out


def write_spec_yaml(spec: BlendSpec, path: str, header: str = "") -> BlendSpec:
    """Write ``spec`` as a blend spec YAML file (atomically) and return it as loaded back."""
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = "".join(f"# {line}\n" for line in header.splitlines())
    text += yaml.safe_dump(spec_to_dict(spec), sort_keys=False, width=100)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return load_blend_spec(path)


def weights_table(names, columns: dict[str, list[float]], hi=None) -> str:
    """Per source, one column of weights per entry of ``columns`` (and the upper bound)."""
    heads = list(columns)
    head = f"{'source':<18}" + "".join(f"{h:>12}" for h in heads) + \
        (f"{'max':>10}" if hi is not None else "")
    lines = [head, "-" * len(head)]
    for i, n in enumerate(names):
        row = f"{n:<18}" + "".join(f"{columns[h][i]:>12.5f}" for h in heads)
        if hi is not None:
            row += f"{hi[i]:>10.4f}"
        lines.append(row)
    return "\n".join(lines)
