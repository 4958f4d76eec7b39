"""``mtnlg tokenizer train``: train a byte-level BPE tokenizer on curated text
(``curation.tokenizer_train`` does the work)."""
from __future__ import annotations

import argparse
import os
import sys

from curation import tokenizer_train
from curation.tokenizer import load_tokenizer, save_tokenizer_json


def dispatch(argv: list[str]) -> int:
    """`mtnlg tokenizer train ...`: the subcommand layer over ``curation.tokenizer_train``."""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: mtnlg tokenizer train INPUT [INPUT ...] --output DIR|FILE [options]\n\n"
              "Train a byte-level BPE tokenizer (tokenizer.json) on text files or RUN/documents\n"
              "Parquet. Run `mtnlg tokenizer train --help` for the options.")
        return 0
    if argv[0] != "train":
        print(f"mtnlg tokenizer: unknown subcommand {argv[0]!r} (expected: train)", file=sys.stderr)
        return 2
    return main(argv[1:])


def build_parser(prog: str = "mtnlg tokenizer train") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=tokenizer_train.__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="Parquet files (text column), text files, folders or globs, e.g. "
                        "'RUN/documents/*/*.parquet'")
    p.add_argument("--output", required=True, metavar="PATH",
                   help="tokenizer.json to write (a folder means FOLDER/tokenizer.json)")
    p.add_argument("--vocab-size", type=int, default=50257,
                   help="vocabulary size including <|endoftext|> (default 50257, GPT-2's)")
    p.add_argument("--min-frequency", type=int, default=2,
                   help="a pair must occur this often to be merged (default 2)")
    p.add_argument("--text-column", default="text", help="Parquet column holding the text")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    output = args.output
    if os.path.isdir(output) or output.endswith(os.sep):
        output = os.path.join(output, "tokenizer.json")
    try:
        files = tokenizer_train.expand_inputs(args.inputs)
        tok = tokenizer_train.train_bpe(tokenizer_train.iter_texts(files, args.text_column), args.vocab_size, args.min_frequency)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    sha = save_tokenizer_json(tok, output)
    info = load_tokenizer(output).info()
    assert info["sha256"] == sha
    print(f"trained on {len(files)} file(s): vocab_size={info['vocab_size']} "
          f"eod_id={info['eod_id']} sha256={sha}")
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
