"""``mtnlg dashboard RUN [RUN2] --output dashboard.html [--manifest manifest.json]``.

Local: ``python -m mtnlg.dashboard runs/demo --output dashboard.html``.
Compare two runs: ``python -m mtnlg.dashboard runs/before runs/after --output diff.html``.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from .loader import load_manifest, load_run
from .render import build_report, render_html


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mtnlg dashboard", description="Render a self-contained HTML dashboard "
                                "of one curation run, or a side-by-side comparison of two.")
    p.add_argument("runs", nargs="+", metavar="RUN", help="a curation output directory (one, or two to compare)")
    p.add_argument("--output", "-o", default="dashboard.html", help="HTML file to write (default: %(default)s)")
    p.add_argument("--manifest", help="a blend manifest.json: show tokens per source against its target weights")
    return p


def write_atomically(path: Path, text: str) -> None:
    """Write to a temporary file beside ``path`` and rename, so readers never see half a page."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a report is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def build_dashboard(runs: list[str | Path], output: str | Path, manifest: str | Path | None = None) -> Path:
    """Load the runs (and manifest), render the page and write it; returns the output path."""
    loaded = [load_run(r) for r in runs]
    report = build_report(loaded, load_manifest(manifest) if manifest else None)
    out = Path(output)
    write_atomically(out, render_html(report))
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if len(args.runs) > 2:
        print("mtnlg dashboard: give one RUN, or two to compare", file=sys.stderr)
        return 2
    missing = [r for r in args.runs if not Path(r).is_dir()]
    if missing:
        print(f"mtnlg dashboard: not a run directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        out = build_dashboard(args.runs, args.output, args.manifest)
    except (OSError, ValueError) as err:
        print(f"mtnlg dashboard: {err}", file=sys.stderr)
        return 1
    print(f"dashboard written to {out.resolve()}")
    return 0
