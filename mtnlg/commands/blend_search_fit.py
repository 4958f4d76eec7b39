"""The end of ``mtnlg blend search``: fit, held-out rank correlation, proposal, verification.

Kept apart from the command's setup and execution (``mtnlg.commands.blend_search``) so each
reads top to bottom.  Everything it computes lands in ``OUTPUT/results.json``, which the report
page (``mtnlg.dashboard.blend_search_page``) renders.
"""
from __future__ import annotations

import datetime
import os

import numpy as np


def _proxy_rows(jobs, records, kind, detail) -> list[dict]:
    from blending.search import target_value

    rows = []
    for job in jobs:
        rec = records[job.name]
        rows.append({"name": job.name, "role": job.role, "seed": job.seed,
                     "weights": list(job.weights), "seconds": rec["seconds"],
                     "target": target_value(rec["result"], kind, detail),
                     "per_source": rec["result"].get("per_source", {}),
                     "eval": rec["result"].get("eval")})
    return rows


def verification(prep: dict, proposal, args, execute, first) -> tuple[list[dict], list[dict]]:
    """The proposal and the spec's weights trained like the proxies (same budget and config),
    for ``--verify-seeds`` seeds: the measured comparison the proposal is judged by, and the
    runs' rows (never fitted)."""
    from blending.search import make_job, target_value

    kind, detail, _ = prep["target"]
    spec_w = np.array(prep["spec"].weights, float)
    seeds = [prep["seed"] + k for k in range(args.verify_seeds)]
    jobs = []
    for s in seeds:
        # the spec's weights are proxy p0000 when they lie in the region: same key, reused
        same = s == prep["seed"] and np.allclose(first.weights, spec_w, rtol=0, atol=1e-9)
        jobs.append(first if same else make_job(f"verify-spec-s{s}", "spec", spec_w, s,
                                                prep["fingerprint"]))
        jobs.append(make_job(f"verify-proposal-s{s}", "proposal", proposal, s,
                             prep["fingerprint"]))
    records = execute(jobs)
    if records is None:
        return [], []
    rows = _proxy_rows([j for j in jobs if j is not first], records, kind, detail)
    out = []
    for s in seeds:
        a, b = records[jobs[2 * seeds.index(s)].name]["result"], \
            records[f"verify-proposal-s{s}"]["result"]
        out.append({"seed": s, "spec": target_value(a, kind, detail),
                    "proposal": target_value(b, kind, detail),
                    "spec_per_source": a.get("per_source"),
                    "proposal_per_source": b.get("per_source")})
    return out, rows


def conclude(prep: dict, jobs, records, args, execute) -> int:
    from blending.build import build_manifest
    from blending.mixture_fit import fit_mixture_model, held_out_spearman, propose
    from blending.search import write_json_atomic
    from blending.search_outputs import weights_table, with_weights, write_spec_yaml
    from mtnlg.dashboard.blend_search_page import write_report

    kind, detail, minimize = prep["target"]
    spec, space, out = prep["spec"], prep["space"], prep["context"]["search_dir"]
    rows = _proxy_rows(jobs, records, kind, detail)
    usable = [r for r in rows if r["target"] is not None and np.isfinite(r["target"])]
    if len(usable) < 3:
        raise RuntimeError(f"only {len(usable)} proxies measured target {args.target}: too few "
                           "to fit (is the valid split empty for that source?)")
    W = np.array([r["weights"] for r in usable])
    y = np.array([r["target"] for r in usable])
    if np.ptp(y) == 0:
        raise RuntimeError(f"every proxy measured {args.target} = {y[0]:g}: nothing to fit (an "
                           "eval task's accuracy is often at chance at proxy scale; try "
                           "eval:TASK:ppl or a loss target)")
    held = held_out_spearman(W, y, args.holdout, args.model, args.seed)
    for i, p in zip(held["held_out"], held["predicted"]):
        usable[i]["held_out"], usable[i]["predicted"] = True, p
    model = fit_mixture_model(W, y, args.model, args.seed)  # the proposal uses every proxy
    rng = np.random.default_rng(args.seed + 1)
    centers = [spec.weights, None] + [w for w in W[np.argsort(y if minimize else -y)[:3]]]
    proposal = propose(model, space, rng, centers, minimize,
                       concentration=tuple(prep["concentration"]))
    spec_in = space.project(np.array(spec.weights))
    header = (f"Proposed by `mtnlg blend search` on {datetime.date.today().isoformat()}: "
              f"{len(usable)} proxies, target {args.target}, model {model.kind}, held-out "
              f"Spearman {_f(held['spearman'])} over {len(held['held_out'])} proxies.\n"
              f"Search folder: {out}")
    name = f"{spec.name}-searched"
    proposed = write_spec_yaml(with_weights(spec, proposal, name=name,
                                            description=f"{spec.name} reweighted by a blend "
                                            f"search (target {args.target})"),
                               os.path.join(out, "proposal", "spec.yaml"), header)
    manifest = build_manifest(proposed, prep["context"]["runs"],
                              os.path.join(out, "proposal", "manifest.json"))
    checks, check_rows = (verification(prep, proposal, args, execute, jobs[0]) if args.verify
                          else ([], []))
    results = {
        "format_version": 1, "spec": spec.name, "spec_path": prep["context"]["spec_path"],
        "runs": prep["context"]["runs"], "target": args.target, "minimize": minimize,
        "sources": list(space.names), "spec_weights": list(spec.weights),
        "lo": space.lo.tolist(), "hi": space.hi.tolist(), "why_hi": list(space.why_hi),
        "train_tokens_available": prep["available"], "proxies": rows + check_rows,
        "fit": {"kind": model.kind, "n_fit": len(y), "cv_spearman": model.cv_spearman,
                "held_out_kind": held["kind"], "held_out_spearman": held["spearman"],
                "n_held_out": len(held["held_out"]), "holdout": args.holdout},
        "proposal": {"weights": proposal.tolist(), "predicted": float(model.predict(proposal)[0]),
                     "spec_predicted": float(model.predict(spec_in)[0]),
                     "nearest_proxy_l1": float(np.abs(W - proposal).sum(axis=1).min()),
                     "spec": proposed.path, "manifest": manifest.path},
        "verification": checks, "settings": {
            "proxies": args.proxies, "seed": args.seed, "train": prep["train"],
            "split": prep["context"]["split"], "bounds": args.bound,
            "concentration": prep["concentration"], "uniform_share": args.uniform_share,
            "model": args.model, "valid_samples": args.valid_samples, "jobs": args.jobs},
        "proxy_seconds": sum(r["seconds"] for r in rows)}
    write_json_atomic(os.path.join(out, "results.json"), results)
    report = write_report(results, args.report or os.path.join(out, "report.html"))
    _print_summary(results, space, report)
    return 0


def _f(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _print_summary(results: dict, space, report) -> None:
    from blending.search_outputs import weights_table

    fit, prop = results["fit"], results["proposal"]
    print(weights_table(results["sources"], {"spec": results["spec_weights"],
                                             "proposal": prop["weights"]}, space.hi))
    print(f"fit: {fit['kind']} on {fit['n_fit']} proxies; held-out Spearman "
          f"{_f(fit['held_out_spearman'])} over {fit['n_held_out']} held-out proxies"
          + (f"; out-of-fold Spearman over all {fit['n_fit']}: "
             f"{_f(fit['cv_spearman'].get(fit['kind']))}" if fit["cv_spearman"] else ""))
    print(f"predicted {results['target']}: spec {prop['spec_predicted']:.4f}, proposal "
          f"{prop['predicted']:.4f} (nearest proxy at L1 {prop['nearest_proxy_l1']:.3f})")
    for v in results["verification"]:
        print(f"measured {results['target']} (seed {v['seed']}): spec {_f(v['spec'])}, "
              f"proposal {_f(v['proposal'])}")
    print(f"wrote {prop['spec']}\nwrote {prop['manifest']}\nwrote {report}")
