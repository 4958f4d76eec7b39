"""`mtnlg takedown`: remove listed documents from a curated RUN without rebuilding it.

    mtnlg takedown --run RUN (--ids FILE | --urls FILE) [--manifest manifest.json] [--allow-unknown]

1. Pre-flight (nothing changes; any problem is one line on stderr and exit 2): RUN is a finished
   curate run; the request file holds at least one id (or URL), one per line (blank lines and
   ``#`` comments ignored); every id/URL names a kept document (found through the ``id``/``url``
   columns of ``documents/``), else the unknown ones are listed (``--allow-unknown`` goes on
   without them; ids of documents the run had already removed are reported, not errors); the
   affected shards match the sha256s recorded in ``stats/shards.parquet``; ``--manifest``
   verifies against the run as it is now.
2. New versions of only the affected files, under temporary names: the shards that held the
   documents (``.bin``/``.idx``) and their ``documents/`` parts, the per-document stats files
   holding their rows (outcome ``removed``, stage and reason ``takedown``), the aggregate tables,
   ``stats/shards.parquet`` (new sha256s), ``removed/takedown/`` (ids, no text), the ``stages/``
   document parts and ``removed/`` rows that still held their text, and ``run.json``
   (accounting + a ``takedowns`` entry with the request file's sha256).  Every other shard stays
   byte-identical; the shard layout (which hash range each shard covers) is kept, so a shard may
   end up smaller; a shard left with no document is deleted with its part and row (curate
   writes none for an empty range).
3. The renames, from a journal (``pipelines.runfolder.takedown_files``), ``run.json`` last; then the run's
   dedup index (``takedown_files.remove_from_index``, when the run has one) and, with
   ``--manifest M``, a new manifest version next to M (``blending.revise``).  The old manifest
   then fails the trainer's checksum check against the rewritten shards.
"""
from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import logging
import sys
import time
import uuid

import pyarrow as pa
import pyarrow.compute as pc

from infra.storage.files import file_exists, join, list_files, read_bytes

log = logging.getLogger("mtnlg.takedown")
REASON = "takedown"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mtnlg takedown",
        description="Remove documents from a curated RUN, rewriting only the shards that held "
                    "them (atomically, new checksums), their documents/ parts, the stats and "
                    "run.json accounting (reason 'takedown', with the request file's sha256) and "
                    "the run's dedup index, and dropping their text from everything else under "
                    "RUN; every other shard stays byte-identical.  Exit 2, with "
                    "nothing changed, on a missing run, an empty or malformed request, unknown "
                    "ids/URLs (unless --allow-unknown) or a shard whose checksum does not match.")
    p.add_argument("--run", required=True, help="the curated RUN (local folder or s3://, gs:// URL)")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--ids", metavar="FILE", help="document ids to remove, one per line, exactly as "
                   "in RUN/documents (e.g. 'realnews/realnews/part-0.jsonl:17')")
    g.add_argument("--urls", metavar="FILE", help="URLs to remove, one per line; every kept "
                   "document with that URL is removed")
    p.add_argument("--manifest", metavar="M", help="a blend manifest made from RUN: writes the "
                   "next version next to it (manifest.json -> manifest.v2.json -> manifest.v3.json) "
                   "with the rewritten shards' checksums")
    p.add_argument("--allow-unknown", action="store_true", help="report ids/URLs that match no "
                   "kept document and go on with the rest (default: exit 2 before any change)")
    p.epilog = ("Other options are Beam file-system options for a remote RUN, e.g. "
                "--s3_endpoint_url URL (credentials from the environment).")
    return p


def read_request(path: str) -> tuple[list[str], str]:
    """(entries, sha256 of the file's bytes); ``TakedownError`` when unreadable or empty."""
    from pipelines.runfolder.takedown_files import TakedownError

    try:
        data = read_bytes(path)
    except Exception as e:  # noqa: BLE001 - missing file, object store error
        raise TakedownError(f"request file {path!r} cannot be read ({type(e).__name__}: {e})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TakedownError(f"request file {path!r} is not UTF-8 text ({e})") from None
    if "\x00" in text:
        raise TakedownError(f"request file {path!r} contains NUL bytes; expected one entry a line")
    entries = [ln.strip() for ln in text.splitlines()]
    entries = list(dict.fromkeys(e for e in entries if e and not e.startswith("#")))
    if not entries:
        raise TakedownError(f"request file {path!r} lists no ids or URLs (one a line, # comments)")
    return entries, hashlib.sha256(data).hexdigest()


def load_run(run_dir: str) -> tuple[dict, list[dict]]:
    """run.json and the shard rows; ``TakedownError`` unless RUN is a finished curate run."""
    from pipelines.runfolder.takedown_files import TakedownError, read_table

    path = join(run_dir, "run.json")
    if not file_exists(path):
        raise TakedownError(f"--run {run_dir!r} has no run.json: not a finished `mtnlg curate` run")
    try:
        info = json.loads(read_bytes(path))
        shards = read_table(join(run_dir, "stats", "shards.parquet")).to_pylist()
    except Exception as e:  # noqa: BLE001
        raise TakedownError(f"--run {run_dir!r}: run.json or stats/shards.parquet is unreadable "
                            f"({type(e).__name__}: {e})") from None
    if not isinstance(info, dict) or "sources" not in info:
        raise TakedownError(f"{path} is not a curate run.json (no 'sources')")
    for stage in ("read", "dedup", "decontaminate", "tokenize"):
        if file_exists(join(run_dir, "_curate", f"{stage}.commit.json")):
            raise TakedownError(f"--run {run_dir!r} has an unfinished commit of stage {stage!r}; "
                                "finish it with `mtnlg curate --resume` first")
    return info, shards


def resolve(run_dir: str, entries: list[str], by: str, shards: list[dict]) -> dict:
    """Which kept documents the request names: ``{"targets": {(source, shard): ids},
    "ids": [...], "unknown": [...], "not_kept": {id: "stage/reason"}}``; reads only the
    ``id``/``url`` columns of the documents parts."""
    from pipelines.runfolder.takedown_files import read_table

    wanted = pa.array(entries)
    targets: dict[tuple[str, int], set[str]] = {}
    matched: set[str] = set()
    for sh in shards:
        path = join(run_dir, "documents", sh["source"], f"part-{sh['shard']:05d}.parquet")
        t = read_table(path, ["id", "url"])
        hit = pc.fill_null(pc.is_in(t.column(by), value_set=wanted), False)
        if pc.any(hit).as_py():
            sub = t.filter(hit)
            targets[(sh["source"], sh["shard"])] = set(sub.column("id").to_pylist())
            matched |= set(sub.column(by).to_pylist())
    missing = [e for e in entries if e not in matched]
    not_kept = _not_kept(run_dir, missing) if by == "id" and missing else {}
    return {"targets": targets, "ids": sorted(set().union(*targets.values())),
            "unknown": [e for e in missing if e not in not_kept], "not_kept": not_kept}


def _not_kept(run_dir: str, ids: list[str]) -> dict[str, str]:
    """ids among ``ids`` that the run read but did not keep -> ``stage/reason``."""
    from pipelines.plumbing.stats import DOCUMENTS_DIR
    from pipelines.runfolder.takedown_files import read_table

    out, value_set = {}, pa.array(ids)
    for path in list_files(join(run_dir, *DOCUMENTS_DIR.split("/"))):
        t = read_table(path, ["id", "outcome", "stage", "reason"])
        for row in t.filter(pc.fill_null(pc.is_in(t.column("id"), value_set=value_set), False)).to_pylist():
            out[row["id"]] = f"{row['stage']}/{row['reason']}" if row["outcome"] != "kept" else "kept?"
    return out


def takedown(run_dir: str, request: str, by: str = "id", manifest: str | None = None,
             allow_unknown: bool = False) -> dict:
    """Do the takedown; returns the ``takedowns`` entry written to run.json."""
    from pipelines.runfolder.report import AccountingError, accounting, write_run_json
    from pipelines.tokenize.shards import SHARD_SCHEMA
    from infra.storage.files import json_line, parquet_bytes
    from pipelines.plumbing.stats import AGGREGATE_TABLES, GRID_FILE, grid_table_bytes
    from pipelines.runfolder.takedown_files import (Staged, TakedownError, finish_pending, read_table,
                                          rewrite_shard, rewrite_stats_rows, scrub_removed_text,
                                          scrub_stage_parts, updated_aggregates)

    started = time.perf_counter()
    run_dir = run_dir.rstrip("/") if "://" in run_dir else run_dir
    if finish_pending(run_dir):
        log.warning("finished the renames of an interrupted earlier takedown of %s", run_dir)
    info, shards = load_run(run_dir)
    entries, request_sha = read_request(request)
    found = resolve(run_dir, entries, by, shards)
    for e, why in sorted(found["not_kept"].items()):
        log.warning("not in any shard (the run had already removed it: %s): %s", why, e)
    if found["unknown"]:
        shown = ", ".join(found["unknown"][:5]) + (" ..." if len(found["unknown"]) > 5 else "")
        msg = (f"{len(found['unknown'])} of {len(entries)} {by}s in {request} match no document "
               f"of {run_dir}: {shown}")
        if not allow_unknown:
            raise TakedownError(msg + " (nothing changed; fix the request or pass --allow-unknown)")
        log.warning("%s; going on without them (--allow-unknown)", msg)
    plan_manifest = None
    if manifest:
        from blending.manifest import ManifestError
        from blending.revise import check_manifest

        try:
            plan_manifest = check_manifest(manifest, run_dir)
        except ManifestError as e:
            raise TakedownError(f"--manifest: {e}") from None
    ids = set(found["ids"])
    scrub = ids | set(found["not_kept"])
    if not scrub:
        return _unchanged(run_dir, found, started)
    staged = Staged(run_dir, uuid.uuid4().hex[:12])
    by_key = {(r["source"], r["shard"]): r for r in shards}
    try:
        new_rows = {key: rewrite_shard(run_dir, by_key[key], read_table(join(
                        run_dir, "documents", key[0], f"part-{key[1]:05d}.parquet")),
                        found["targets"][key], staged)
                    for key in sorted(found["targets"])}
        shard_rows = [new_rows.get(k, r) for k, r in sorted(by_key.items())]
        shard_rows = [r for r in shard_rows if r is not None]  # emptied shards are deleted
        old_stats, new_stats = rewrite_stats_rows(run_dir, ids, staged)
        if len(old_stats) != len(ids):
            raise TakedownError(f"{len(ids)} documents to remove but {len(old_stats)} kept rows for "
                                "them in stats/documents; the run's stats are incomplete")
        if ids:
            tables = updated_aggregates(run_dir, old_stats, new_stats)
            for name, (file_name, schema) in AGGREGATE_TABLES.items():
                staged.write(f"stats/{file_name}", parquet_bytes(tables[name], schema))
            if tables["grid_spec"] is not None:
                staged.write(f"stats/{GRID_FILE}", grid_table_bytes(tables["grid"], tables["grid_spec"]))
            staged.write("stats/shards.parquet",
                         parquet_bytes(sorted(shard_rows, key=lambda r: r["prefix"]), SHARD_SCHEMA))
            removed = [{"id": r["id"], "source": r["source"], "stage": REASON, "reason": REASON,
                        "detail": {"request_sha256": request_sha}, "text": None} for r in new_stats]
            staged.write(f"removed/{REASON}/part-{staged.token}.jsonl.gz", gzip.compress(
                "".join(json_line(r) + "\n" for r in removed).encode(), mtime=0))
            try:
                acc = accounting(tables["counts"], tables["read"], shard_rows)
            except AccountingError as e:
                raise TakedownError(f"the run's accounting would not hold after the takedown: "
                                    f"{' '.join(str(e).split())}") from None
            info.update(sources=acc["sources"], totals=acc["totals"], accounting_ok=True)
        scrub_stage_parts(run_dir, ids, staged)
        scrubbed = scrub_removed_text(run_dir, scrub, staged)
        if not ids and not scrubbed:  # only ids whose text is gone already: nothing to change
            staged.discard()
            return _unchanged(run_dir, found, started)
        entry = {"at": dt.datetime.now(dt.timezone.utc).isoformat(), "by": by, "request": request,
                 "request_sha256": request_sha, "requested": len(entries),
                 "documents": len(ids), "ids": sorted(ids), "unknown": found["unknown"],
                 "not_kept": found["not_kept"], "removed_text_scrubbed": scrubbed,
                 "shards_rewritten": sorted(by_key[k]["prefix"] for k in new_rows),
                 "shards_deleted": sorted(by_key[k]["prefix"] for k, r in new_rows.items() if r is None),
                 "tokens_removed": sum(by_key[k]["tokens"] - (r["tokens"] if r else 0)
                                       for k, r in new_rows.items())}
        info.setdefault("takedowns", []).append(entry)
        staged.write("run.json", (json.dumps(info, indent=2, default=str) + "\n").encode())
    except BaseException:
        staged.discard()
        raise
    staged.commit()
    entry["dedup_index_removed"] = _remove_from_index(run_dir, sorted(ids)) if ids else None
    if plan_manifest is not None and ids:
        from blending.revise import write_next_version

        entry["manifest"] = write_next_version(plan_manifest, run_dir)
    entry["seconds"] = round(time.perf_counter() - started, 3)
    info["takedowns"][-1] = entry
    write_run_json(run_dir, info)
    return entry


def _unchanged(run_dir: str, found: dict, started: float) -> dict:
    """Nothing left to remove.  Ids an earlier takedown removed are still offered to the dedup
    index: a takedown interrupted after its commit is completed by running it again."""
    log.warning("no document to remove; the shards and stats of %s are unchanged", run_dir)
    done = sorted(i for i, why in found["not_kept"].items() if why == f"{REASON}/{REASON}")
    return {"documents": 0, "tokens_removed": 0, "shards_rewritten": [], **found, "targets": None,
            "dedup_index_removed": _remove_from_index(run_dir, done) if done else None,
            "seconds": round(time.perf_counter() - started, 3)}


def _remove_from_index(run_dir: str, ids: list[str]) -> int | None:
    """Take the documents out of ``RUN/dedup_index/`` (``takedown_files.remove_from_index``);
    None when the run has no index."""
    from pipelines.runfolder.takedown_files import remove_from_index

    if not list_files(join(run_dir, "dedup_index")):
        log.info("no dedup_index/ in %s: nothing to remove there", run_dir)
        return None
    return int(remove_from_index(run_dir, ids))


def main(argv: list[str] | None = None) -> int:
    from pipelines.runfolder.takedown_files import TakedownError

    from pipelines.config import options as cli_options

    args, beam_args = _parser().parse_known_args(argv)
    try:  # e.g. --s3_endpoint_url for an s3:// RUN, as for `mtnlg stage`
        cli_options.use_filesystem_options(cli_options.pipeline_options_for_io(beam_args))
    except cli_options.OptionError as e:
        print(f"mtnlg takedown: error: {e}", file=sys.stderr)
        return 2
    cli_options.console_logging()  # as `mtnlg takedown` has it when run as python -m
    by, request = ("id", args.ids) if args.ids else ("url", args.urls)
    try:
        entry = takedown(args.run, request, by, args.manifest, args.allow_unknown)
    except TakedownError as e:
        print(f"mtnlg takedown: error: {e}", file=sys.stderr)
        return 2
    print(f"took down {entry['documents']} documents ({entry['tokens_removed']} tokens) from "
          f"{args.run}: rewrote {len(entry['shards_rewritten'])} shards "
          f"({', '.join(entry['shards_rewritten']) or '-'}) in {entry['seconds']:.2f} s"
          + (f"; new manifest {entry['manifest']['path']}" if entry.get("manifest") else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
