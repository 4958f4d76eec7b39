"""`mtnlg stage RUN_URL LOCAL_DIR`: copy a curated run from object storage to a POSIX folder,
verifying every shard against the checksums the run recorded.

``mtnlg curate`` may write its RUN to ``s3://``/``gs://``/``hdfs://``; ``mtnlg blend`` and
``mtnlg train`` (like Megatron-LM) memory-map shards from a POSIX path that every rank sees
(a local disk per node, or a shared file system).  This is the one step between them::

    mtnlg stage s3://BUCKET/runs/r1 /data/runs/r1 [--s3_endpoint_url ...]
    mtnlg blend --spec mtnlg-530b --run /data/runs/r1 --output /data/manifest.json
    mtnlg train --manifest /data/manifest.json ...

Every file under RUN is copied through Beam's FileSystems (so the same ``--s3_*``/GCS options
and credentials as curate apply), each to a temporary name renamed when complete.  Each shard
``.bin``/``.idx`` is checked against ``stats/shards.parquet`` (sha256) on the way, and the run is
refused when a shard is missing or differs.  ``run.json`` is written last: a LOCAL_DIR without it
is not a staged run.  A tokenizer the run names by URL is staged into LOCAL_DIR/tokenizer
(checked against run.json's sha256) and run.json points at it.  Files already in LOCAL_DIR
with the right checksum are not copied again, so an interrupted stage resumes.

Every verified shard gets a verification stamp (``PREFIX.stamp.json``, ``blending.stamps``):
``mtnlg blend`` and every ``mtnlg train`` launch then trust the checksum verified here as long as
the file is unchanged (same size, mtime, ctime, inode) instead of reading the corpus again.
Stamps of the remote run (another machine's inodes) are not copied.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import time

from infra.hashing import file_sha256

_CHUNK = 1 << 20


class StageError(RuntimeError):
    """The remote run is incomplete or a file differs from its recorded checksum."""


def _parse(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(prog="mtnlg stage", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", help="the curated RUN (s3://, gs://, hdfs:// or a local path)")
    p.add_argument("output", help="local folder to stage it into (created; visible to all ranks)")
    return p.parse_known_args(argv)


def _copy(url: str, local: str) -> str:
    """Copy one file to ``local`` (temporary name, then rename); returns its sha256."""
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.io.filesystems import FileSystems

    os.makedirs(os.path.dirname(local), exist_ok=True)
    tmp = f"{local}.tmp-{os.getpid()}"
    h = hashlib.sha256()
    with FileSystems.open(url, compression_type=CompressionTypes.UNCOMPRESSED) as src, \
            open(tmp, "wb") as dst:
        for chunk in iter(lambda: src.read(_CHUNK), b""):
            h.update(chunk)
            dst.write(chunk)
    os.replace(tmp, local)
    return h.hexdigest()


def _expected_shards(run: str) -> dict[str, str]:
    """relative path -> sha256 for every shard file, from RUN/stats/shards.parquet."""
    import pyarrow.parquet as pq
    from apache_beam.io.filesystems import FileSystems

    path = FileSystems.join(run, "stats", "shards.parquet")
    try:
        with FileSystems.open(path) as f:
            table = pq.read_table(io.BytesIO(f.read()))
    except Exception as e:
        raise StageError(f"{path}: cannot read the shard table ({type(e).__name__}: {e}); is "
                         f"{run!r} a finished `mtnlg curate` run?") from None
    out = {}
    for row in table.to_pylist():
        out[row["prefix"] + ".bin"] = row["bin_sha256"]
        out[row["prefix"] + ".idx"] = row["idx_sha256"]
    return out


def _stage_tokenizer(run_json: str, output: str) -> dict:
    """A tokenizer the run names by URL is staged into ``output/tokenizer`` and checked against
    the sha256 in run.json, so blend and train find and verify it; returns run.json's content
    with the local path (a ``pkg://`` or local path is kept: it resolves on this machine)."""
    import json
    import shutil

    from curation.tokenizer import load_tokenizer
    from infra.storage.staging import is_url, local_copy

    with open(run_json, encoding="utf-8") as f:
        info = json.load(f)
    os.remove(run_json)
    tok = info.get("tokenizer") or {}
    url = tok.get("path") or ""
    if not is_url(url):
        return info
    local = local_copy(url)
    target = os.path.join(output, "tokenizer")
    shutil.rmtree(target, ignore_errors=True)
    if os.path.isdir(local):
        shutil.copytree(local, target)
    else:
        os.makedirs(target)
        shutil.copyfile(local, os.path.join(target, "tokenizer.json"))
    got = load_tokenizer(target).sha256
    if got != tok.get("sha256"):
        raise StageError(f"tokenizer {url}: sha256 {got} differs from {tok.get('sha256')} "
                         "recorded in run.json")
    info["tokenizer"] = {**tok, "path": "tokenizer", "staged_from": url}
    return info


def _write_run_json(path: str, info: dict) -> None:
    import json

    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(info, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def stage(run: str, output: str) -> dict:
    """Copy ``run`` into ``output``; returns ``{files, bytes, skipped, shards}``."""
    from apache_beam.io.filesystems import FileSystems

    from blending.stamps import STAMP_SUFFIX, stamp_verified, stamped_sha256

    run = run.rstrip("/")
    expected = _expected_shards(run)
    listing = FileSystems.match([run + "/**"])[0].metadata_list
    files = {m.path[len(run) + 1:]: m for m in listing if m.path.startswith(run + "/")}
    if "run.json" not in files:
        raise StageError(f"{run}/run.json is missing: the run did not finish")
    missing = sorted(set(expected) - set(files))
    if missing:
        raise StageError(f"{run}: {len(missing)} shard file(s) listed in stats/shards.parquet are "
                         f"missing, e.g. {missing[0]}")
    os.makedirs(output, exist_ok=True)
    marker = os.path.join(output, "run.json")
    if os.path.exists(marker):
        os.remove(marker)  # the folder is not a staged run until run.json is back
    def fetch(rel: str) -> int:
        """Copy one file unless a verified copy is there; 1 if copied, 0 if skipped."""
        local = os.path.join(output, *rel.split("/"))
        want = expected.get(rel)
        if want and os.path.isfile(local):
            # a stamp from an earlier stage spares reading the file again
            have = stamped_sha256(local[:-4], local[-3:]) or file_sha256(local)
            if have == want:
                return 0
        got = _copy(files[rel].path, local)
        if want and got != want:
            os.remove(local)
            raise StageError(f"{run}/{rel}: sha256 {got} differs from {want} recorded in "
                             "stats/shards.parquet; the run is corrupt or was rewritten")
        return 1

    # Object stores serve many small reads in parallel; the files are independent.
    from concurrent.futures import ThreadPoolExecutor

    rels = sorted(r for r in files if r != "run.json" and not r.endswith(STAMP_SUFFIX))
    with ThreadPoolExecutor(max_workers=8) as pool:
        done = list(pool.map(fetch, rels))
    for rel in sorted(r for r in expected if r.endswith(".bin")):  # every shard file verified
        prefix = os.path.join(output, *rel[:-4].split("/"))
        stamp_verified(prefix, {"bin": expected[rel], "idx": expected[rel[:-4] + ".idx"]})
    copied, skipped = sum(done), len(done) - sum(done)
    size = sum(files[r].size_in_bytes for r, d in zip(rels, done) if d)
    marker_tmp = marker + ".remote"  # run.json last: the folder is a staged run from here on
    _copy(files["run.json"].path, marker_tmp)
    _write_run_json(marker, _stage_tokenizer(marker_tmp, output))
    return {"files": copied, "bytes": size, "skipped": skipped, "shards": len(expected) // 2}


def main(argv: list[str] | None = None) -> int:
    from pipelines.config import options as cli_options

    args, beam_args = _parse(argv)
    try:
        options = cli_options.pipeline_options_for_io(beam_args)
    except cli_options.OptionError as e:
        print(f"mtnlg stage: {e}", file=sys.stderr)
        return 2
    cli_options.use_filesystem_options(options)
    t0 = time.perf_counter()
    try:
        out = stage(args.run, args.output)
    except StageError as e:
        print(f"mtnlg stage: {e}", file=sys.stderr)
        return 1
    print(f"staged {args.run} -> {args.output}: {out['files']} files ({out['bytes']:,} bytes) "
          f"copied, {out['skipped']} already there; {out['shards']} shards verified (sha256) "
          f"in {time.perf_counter() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    from pipelines.config.options import console_logging

    console_logging()
    sys.exit(main())
