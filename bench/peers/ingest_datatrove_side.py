"""datatrove's side of bench/ingest/ingest_datatrove.py (run in datatrove's own venv, never ours).

    /tmp/dtvenv/bin/python bench/peers/ingest_datatrove_side.py INPUT OUT --lid MODEL [--workers 2]

The same steps as our restricted curate job, with datatrove's stock blocks: readers (JSONL for
Pile + RealNews, WARC for Common Crawl), HTML extraction with jusText and the same English
stoplist (a small ``BaseExtractor``: datatrove 0.10.1 ships no jusText extractor), ftfy
(``FTFYFormatter``), fastText lid.176 from the SAME file as ours (``LanguageFilter`` with its
model pointed at it, English >= 0.65), ``GopherRepetitionFilter`` + ``GopherQualityFilter`` at
their (Gopher) defaults, and ``JsonlWriter``.  One executor per input kind (an extractor would
otherwise run on JSONL text), each with one task per file on ``--workers`` processes.
Prints one JSON line: documents read, documents written.
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import os


def main() -> None:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.extractors.base import BaseExtractor
    from datatrove.pipeline.filters import GopherQualityFilter, GopherRepetitionFilter, LanguageFilter
    from datatrove.pipeline.formatters import FTFYFormatter
    from datatrove.pipeline.readers import JsonlReader, WarcReader
    from datatrove.pipeline.writers import JsonlWriter
    from datatrove.utils.lid import FT176LID

    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("out")
    ap.add_argument("--lid", required=True, help="lid.176 fastText model file (ours)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--extractor", choices=["justext", "trafilatura"], default="justext",
                    help="jusText = the same extraction as ours; trafilatura = datatrove's stock one")
    args = ap.parse_args()
    lid_path = os.path.abspath(args.lid)

    class LocalFT176(FT176LID):
        """lid.176 loaded from a local file instead of downloaded."""

        @property
        def model(self):
            if self._model is None:
                from fasttext.FastText import _FastText

                self._model = _FastText(lid_path)
            return self._model

    class JusText(BaseExtractor):
        name = "jusText"

        def __init__(self, timeout: float = 300):  # generous: a loaded machine must not drop pages
            super().__init__(timeout)

        def extract(self, text: str) -> str:
            import justext

            try:
                paragraphs = justext.justext(text, justext.get_stoplist("English"))
            except Exception:  # noqa: BLE001 - e.g. an empty page; raising here kills datatrove's
                return ""      # extraction process and costs the whole timeout (ours drops the page too)
            return "\n\n".join(p.text for p in paragraphs if not p.is_boilerplate)

    def filters(kind: str) -> list:
        lang = LanguageFilter(languages=["en"], language_threshold=0.65)
        lang.model = LocalFT176(["en"])
        return [FTFYFormatter(), lang, GopherRepetitionFilter(), GopherQualityFilter(),
                JsonlWriter(f"{args.out}/kept/{kind}")]

    jsonl = sorted(glob.glob(f"{args.input}/pile/*.jsonl*")) + sorted(glob.glob(f"{args.input}/realnews/*.jsonl*"))
    warcs = sorted(glob.glob(f"{args.input}/common_crawl/*/*.warc.gz"))
    runs = [
        ("jsonl", [JsonlReader(f"{args.input}/pile", glob_pattern="*.jsonl.zst", compression="zstd"),
                   JsonlReader(f"{args.input}/realnews", glob_pattern="*.jsonl", compression=None)],
         len(jsonl)),
        ("warc", [WarcReader(f"{args.input}/common_crawl", glob_pattern="*/*.warc.gz"),
                  JusText() if args.extractor == "justext" else Trafilatura(timeout=300)], len(warcs)),
    ]
    for kind, head, n_files in runs:
        LocalPipelineExecutor(pipeline=head + filters(kind), tasks=max(1, n_files), workers=args.workers,
                              logging_dir=f"{args.out}/logs/{kind}").run()

    read = 0
    for kind, *_ in runs:
        with open(f"{args.out}/logs/{kind}/stats.json") as f:
            for step in json.load(f):
                if "READER" in step["name"].upper() or "Reader" in step["name"]:
                    read += step["stats"].get("documents", {}).get("total", 0) if isinstance(
                        step["stats"].get("documents"), dict) else step["stats"].get("documents", 0)
    kept = 0
    for path in glob.glob(f"{args.out}/kept/*/*.jsonl.gz"):
        with gzip.open(path, "rt") as f:
            kept += sum(1 for _ in f)
    print(json.dumps({"side": "datatrove", "read": read, "kept": kept}))


if __name__ == "__main__":  # datatrove's executor spawns processes
    main()
