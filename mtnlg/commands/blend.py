"""``mtnlg blend``: curated RUN directories + a blend spec → manifest.json.

Examples::

    # what the MT-NLG 530B blend means at paper scale (spec only)
    mtnlg blend --spec mtnlg-530b --plan

    # a manifest over one or more curated runs, plus Megatron-LM's --data-path string
    mtnlg blend --spec demo \\
        --run demo_run/run --output demo_run/manifest.json --format megatron

    # weights chosen by proxy runs (docs/blend-search.md): `mtnlg blend search --help`
"""
from __future__ import annotations

import argparse
import sys

from blending.build import build_manifest
from blending.manifest import Manifest, ManifestError, megatron_data_path
from blending.spec import load_blend_spec, plan_table
from infra.config import ConfigError
from infra.resources import config_path


def build_parser(prog: str = "mtnlg blend") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Join a blend spec with curated RUN directories into a manifest.json "
                    "(shards with sha256, weights, epochs, tokenizer) for `mtnlg train`. "
                    "Prints target vs available tokens and epochs per source.",
        epilog="Epochs = weight x train_tokens / available tokens; a source above the epoch "
               "cap is reported as a warning, not an error. Every shard is checked against the "
               "sha256 curate recorded in RUN/stats/shards.parquet before it is used: a modified, "
               "missing or unrecorded shard is refused (exit 1), naming the file.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--spec", required=True, metavar="SPEC",
                   help="blend spec: a shipped name (demo, mtnlg-530b) or a YAML path")
    p.add_argument("--run", action="append", default=[], metavar="RUN",
                   help="curated run directory (from `mtnlg curate`); repeat for several runs. "
                        "Shards are read from RUN/shards/<source>/*.idx, the tokenizer from "
                        "RUN/run.json")
    p.add_argument("--output", metavar="MANIFEST",
                   help="where to write manifest.json (paths inside are relative to it)")
    p.add_argument("--format", choices=["json", "megatron"], default="json",
                   help="'megatron' also prints Megatron-LM's --data-path \"w1 prefix1 ...\"")
    p.add_argument("--epoch-cap", type=float, default=None, metavar="E",
                   help="warn when a source is repeated more than E epochs "
                        "(default: the spec's epoch_cap)")
    p.add_argument("--realized", type=int, default=0, metavar="SAMPLES",
                   help="also print realized vs target shares over the first SAMPLES samples "
                        "of the blend index (Megatron's greedy rule)")
    p.add_argument("--plan", action="store_true",
                   help="only print the spec's plan table (paper token counts); needs no RUN")
    return p


def summary_table(manifest: Manifest) -> str:
    """Target vs available tokens and epochs per source, as printed by ``mtnlg blend``."""
    head = (f"{'source':<18}{'weight':>9}{'target tok':>14}{'available':>14}{'docs':>9}"
            f"{'shards':>8}{'epochs':>9}")
    lines = [f"blend {manifest.blend_name}: train_tokens={manifest.train_tokens:.0f}, "
             f"tokenizer sha256={manifest.tokenizer.sha256[:12]} vocab="
             f"{manifest.tokenizer.vocab_size} eod={manifest.tokenizer.eod_id}", head,
             "-" * len(head)]
    for s in manifest.sources:
        flag = "  !" if s.epochs > manifest.epoch_cap else ""
        lines.append(f"{s.name:<18}{s.weight:>9.5f}{s.target_tokens:>14.0f}"
                     f"{s.available_tokens:>14d}{s.documents:>9d}{len(s.shards):>8d}"
                     f"{s.epochs:>9.2f}{flag}")
    t = manifest.totals
    lines.append("-" * len(head))
    lines.append(f"{'total':<18}{sum(manifest.weights):>9.5f}{manifest.train_tokens:>14.0f}"
                 f"{t['available_tokens']:>14d}{t['documents']:>9d}{t['shards']:>8d}")
    return "\n".join(lines)


def realized_table(manifest: Manifest, samples: int) -> str:
    """Target weight vs the share the blend index actually gives over ``samples`` samples."""
    import numpy as np

    from blending.blend_index import blend_indices

    active = [s for s in manifest.sources if s.weight > 0]
    idx, _ = blend_indices([s.weight for s in active], samples)
    counts = np.bincount(idx, minlength=len(active))
    total = sum(s.weight for s in active)
    lines = [f"realized shares over {samples} samples", f"{'source':<18}{'target':>10}"
             f"{'realized':>10}{'samples':>10}"]
    for s, c in zip(active, counts):
        lines.append(f"{s.name:<18}{s.weight / total:>10.5f}{c / samples:>10.5f}{int(c):>10d}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["search"]:  # `mtnlg blend search`: proxy runs choose the weights
        from mtnlg.commands import blend_search

        return blend_search.main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        spec = load_blend_spec(config_path("blends", args.spec, "--spec"))
        if args.plan:
            print(plan_table(spec))
            return 0
        if not args.run:
            print("error: --run is required unless --plan is given", file=sys.stderr)
            return 2
        if not args.output:
            print("error: --output is required unless --plan is given", file=sys.stderr)
            return 2
        manifest = build_manifest(spec, args.run, args.output, epoch_cap=args.epoch_cap)
    except ConfigError as e:  # names the spec's setting, or the flag
        print(f"error: blend spec: {e}", file=sys.stderr)
        return 1
    except (ManifestError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(summary_table(manifest))
    for w in manifest.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"wrote {manifest.path}")
    if args.realized > 0:
        print(realized_table(manifest, args.realized))
    if args.format == "megatron":
        print(f'--data-path "{megatron_data_path(manifest)}"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
