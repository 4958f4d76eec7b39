"""The command line of ``mtnlg explain`` (``mtnlg.commands.explain_story``): arguments and the text report."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mtnlg.commands.explain_story import explain
from mtnlg.commands.explain_lookup import ExplainError


def _parser() -> argparse.ArgumentParser:
    from mtnlg.commands import explain_story as mod

    p = argparse.ArgumentParser(prog="mtnlg explain", description=mod.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("id", nargs="?", help="document id, exactly as in stats/documents (e.g. "
                   "'realnews/realnews/realnews-00000.jsonl:17')")
    p.add_argument("--run", required=True, help="the curated RUN (local folder or s3://, gs:// URL)")
    p.add_argument("--url", help="find the document by its URL instead of its id")
    p.add_argument("--manifest", help="a blend manifest built from RUN: also show where the document's "
                   "tokens are served in its blended sample stream")
    p.add_argument("--train-config", help="training config (a shipped name such as demo, or a path) that "
                   "sizes the sample stream: seq_length, samples, seed and batch sizes")
    p.add_argument("--seq-length", type=int, help="sample length (instead of --train-config)")
    p.add_argument("--samples", type=int, help="samples in the stream (instead of --train-config)")
    p.add_argument("--seed", type=int, default=1234, help="blend seed (default: %(default)s)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    return p


def _stream(args) -> dict | None:
    if not args.manifest:
        return None
    if args.train_config:
        from infra.extras import missing_extra

        if missing := missing_extra("torch", "train"):  # a training config's model needs torch
            raise ExplainError(f"--train-config: {missing}; or give --seq-length and --samples")
        from infra.resources import config_path
        from training.config import TrainConfig
        from training.schedule import batch_sizes

        cfg = TrainConfig.from_yaml(config_path("train", args.train_config))
        sizes = (batch_sizes(cfg.schedule.train_steps, cfg.seq_length, cfg.batch_rampup())
                 if cfg.schedule.train_steps is not None else None)
        return {"seq_length": cfg.seq_length, "num_samples": cfg.total_samples(), "seed": cfg.seed,
                "batch_sizes": sizes}
    if not (args.seq_length and args.samples):
        raise ExplainError("--manifest needs --train-config, or --seq-length and --samples")
    return {"seq_length": args.seq_length, "num_samples": args.samples, "seed": args.seed}


def _num(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


def render(r: dict[str, Any]) -> str:
    lines = [f"document   {r['id']}",
             f"source     {r['source']}" + (f" ({r['display_name']})" if r.get("display_name") else ""),
             f"input      {r['input']}"]
    if r.get("url"):
        lines.append(f"url        {r['url']}")
    fate = "kept" if r["outcome"] == "kept" else f"{r['outcome']} at {r['stage']}: {r['reason']}"
    lines += [f"outcome    {fate}", f"size       {_num(r['chars'])} characters, {_num(r['words'])} words"
              + (f", {_num(r['tokens'])} tokens" if r.get("tokens") else ""), "", "stages"]
    for stage, s in r["stages"].items():
        verdict = s.get("verdict", "")
        extra = ""
        if stage == "pii" and "replaced" in s:
            spans = s["replaced"]
            extra = (f"{len(spans)} replaced: " + ", ".join(f"{x['kind']} [{x['start']}, {x['end']})" for x in spans[:6])
                     if spans else "nothing to replace")
        elif stage == "language" and "score" in s:
            extra = f"{s['lang']} {_num(s['score'])} (keep: language in {s['allowed']}, score >= {s['min_score']})"
        elif stage == "quality" and "score" in s:
            extra = f"score {_num(s['score'])}, rule {s['rule']}" + (
                f" (keep: score >= {s['threshold']})" if "threshold" in s else
                f" (alpha {s['alpha']}, P(keep) {s['keep_probability']})")
        elif stage.endswith("_dedup") and s.get("cluster_size"):
            extra = (f"cluster of {s.get('cluster_size')}, kept member {s.get('kept_id')}"
                     + (f", similarity {_num(s['similarity'])}" if s.get("similarity") is not None else ""))
        elif stage == "decontamination" and (s.get("detail") or s.get("cuts")):
            extra = json.dumps(s.get("detail") or s.get("cuts"), sort_keys=True)
        elif stage == "tokenize":
            extra = f"{_num(s['tokens'])} tokens (keep: >= {s['min_tokens']})" if s.get("tokens") else ""
        elif stage == "site_boilerplate" and s.get("chars_removed") is not None:
            extra = f"{s['chars_removed']:,} characters removed (lines repeated across its host)"
        elif s.get("why"):
            extra = s["why"]
        lines.append(f"  {stage:<17}{verdict:<14}{extra}".rstrip())
        if stage == "heuristics" and s.get("rules"):
            for rule in s["rules"]:
                op = {"min": ">=", "max": "<=", "flag": "<="}[rule["bound"]]
                if rule["bound"] == "flag":
                    rule = {**rule, "threshold": 0}
                mark = "FAILS" if rule["fails"] else "ok"
                lines.append(f"      {rule['rule']:<28}{_num(rule['value']):>10}  keep {op} {_num(rule['threshold'])}  {mark}")
    if r.get("chain"):
        lines += ["", "duplicate chain"]
        for i, link in enumerate(r["chain"], 1):
            sim = []
            if link.get("similarity") is not None:
                sim.append(f"closest match {_num(link['similarity'])}")
            if link.get("jaccard_to_kept") is not None:
                sim.append(f"Jaccard to it {_num(link['jaccard_to_kept'])}")
            lines.append(f"  {i}. {link['from']} --{link['stage']}/{link['reason']}"
                         + (f" ({', '.join(sim)})" if sim else "") + f"--> {link['to']}")
            if link.get("to_fate"):
                where = link.get("to_location")
                lines.append(f"     {link['to']}: {link['to_fate']}" + (
                    f", {where['prefix']} sequence {where['sequence']} tokens "
                    f"[{where['token_range'][0]:,}, {where['token_range'][1]:,})" if where else ""))
            if link.get("end"):
                lines.append(f"     ({link['end']})")
    loc = r.get("location")
    if r["outcome"] == "kept":
        lines += ["", "in the shards"]
        lines.append(f"  {loc['prefix']}.bin/.idx  sequence {loc['sequence']}, tokens "
                     f"[{loc['token_range'][0]:,}, {loc['token_range'][1]:,})" if loc else "  (not found in documents/)")
    st = r.get("sample_stream")
    if st:
        lines += ["", "in the manifest's sample stream"]
        if st.get("note"):
            lines.append(f"  {st['note']}")
        for ep in st.get("epochs", []):
            served = [s for s in ep["samples"] if s["sample"] is not None]
            lines.append(f"  epoch {ep['epoch']}: stream tokens [{ep['stream_tokens'][0]:,}, {ep['stream_tokens'][1]:,}), "
                         f"stream samples {ep['samples'][0]['stream_sample']}-{ep['samples'][-1]['stream_sample']}; "
                         + (", ".join(f"sample {s['sample']}" + (f" (step {s['step']})" if s["step"] is not None else "")
                                      for s in served[:8]) + (" ..." if len(served) > 8 else "")
                            if served else "not served within the run's samples"))
    lines += ["", f"read {len(r['read']['files'])} data files{' via stats/id_index' if r['read']['indexed'] else ' (no index: scanned)'} "
              f"in {r['read']['seconds']:.3f} s"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from pipelines.config import options as cli_options

    args, beam_args = _parser().parse_known_args(argv)
    try:
        cli_options.use_filesystem_options(cli_options.pipeline_options_for_io(beam_args))
        if (args.id is None) == (args.url is None):
            raise ExplainError("give one document: an ID or --url URL")
        report = explain(args.run, args.id, args.url, args.manifest, _stream(args))
    except (ExplainError, cli_options.OptionError) as e:
        print(f"mtnlg explain: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=1, default=str) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
