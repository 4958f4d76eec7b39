"""Reading (``pipelines.read``) against hostile files (issue 15): nothing blocks, nothing vanishes,
and a record that Beam could not encode is a dead letter instead of a dead job."""
from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from curation.document import Document
from pipelines.config.job import InputSpec
from pipeline_fixtures import english, read_inputs


@contextlib.contextmanager
def opened_fifos(*fifos):
    """The FIFOs some reader opened while the block ran.  A FIFO opened for reading blocks its
    reader until a writer comes: here a writer comes at once (and leaves: the reader gets EOF),
    so a reader that should never have opened one ends, and is caught, however slow the machine."""
    opened, stop = [], threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for path in fifos:
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO while no reader has it
                except OSError:
                    continue
                opened.append(os.path.basename(path))
                os.close(fd)
            stop.wait(0.01)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield opened
    finally:
        stop.set()
        watcher.join()


def _outputs(pipeline, spec, root):
    return read_inputs(pipeline, [spec], root)


def test_special_files_are_dead_letters_and_never_opened(pipeline, tmp_path):
    root = tmp_path / "raw"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    good = json.dumps({"text": english(1)}) + "\n"
    (root / "a" / "x.jsonl").write_text(good)
    (root / "b" / "x.jsonl").write_text(good)  # same base name: ids must still differ
    os.mkfifo(root / "a" / "pipe.jsonl")
    os.symlink(root / "nowhere", root / "a" / "broken.jsonl")
    os.symlink(root / "a" / "loop2.jsonl", root / "a" / "loop1.jsonl")
    os.symlink(root / "a" / "loop1.jsonl", root / "a" / "loop2.jsonl")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "a" / "sock.jsonl"))
    (root / "dir.jsonl").mkdir()
    spec = InputSpec("realnews", [str(root / "*" / "*.jsonl"), str(root / "dir.jsonl")], "realnews")
    try:
        with opened_fifos(str(root / "a" / "pipe.jsonl")) as opened, pipeline as p:
            out = _outputs(p, spec, str(root))
            assert_that(out["docs"] | beam.Map(lambda d: d.id),
                        equal_to(["realnews/a/x.jsonl:0", "realnews/b/x.jsonl:0"]), label="ids")
            assert_that(out["dead_letter"] | beam.Map(lambda d: (os.path.basename(d.location),
                                                                 d.error.split(":")[0])),
                        equal_to([("pipe.jsonl:0", "not_a_regular_file"),
                                  ("broken.jsonl:0", "not_a_regular_file"),
                                  ("loop1.jsonl:0", "not_a_regular_file"),
                                  ("loop2.jsonl:0", "not_a_regular_file"),
                                  ("sock.jsonl:0", "not_a_regular_file"),
                                  ("dir.jsonl:0", "not_a_regular_file")]), label="dead")
        assert opened == []  # the pipeline ran when its block ended
    finally:
        sock.close()


def test_fifo_matched_by_a_warc_glob_does_not_block(pipeline, tmp_path):
    os.mkfifo(tmp_path / "a.warc.gz")
    spec = InputSpec("warc", [str(tmp_path / "*.warc.gz")], "cc_2020_50")
    with opened_fifos(str(tmp_path / "a.warc.gz")) as opened, pipeline as p:
        out = _outputs(p, spec, str(tmp_path))
        assert_that(out["dead_letter"] | beam.Map(lambda d: (d.location.endswith("a.warc.gz#0"),
                                                             d.error)),
                    equal_to([(True, "not_a_regular_file: a FIFO (named pipe)")]))
    assert opened == []


def _deep_meta_reader(fileobj, file_name, source="realnews", *, id_path=None, **_):
    """A reader that forgot to bound its metadata (the pipeline must not trust readers)."""
    deep: dict = {}
    node = deep
    for _ in range(800):
        node["a"] = {}
        node = node["a"]
    yield Document(f"{source}/{id_path}:0", source, english(2), meta={"deep": deep})
    yield Document(f"{source}/{id_path}:1", source, english(3), meta={"surrogate": "\udc80"})
    yield Document(f"{source}/{id_path}:2", source, english(4))


def test_record_that_cannot_be_encoded_is_a_dead_letter_not_a_dead_job(pipeline, tmp_path, monkeypatch):
    import curation.readers

    monkeypatch.setattr(curation.readers, "read_realnews", _deep_meta_reader)
    (tmp_path / "n.jsonl").write_text("{}\n")
    spec = InputSpec("realnews", [str(tmp_path / "n.jsonl")], "realnews")
    with pipeline as p:
        out = _outputs(p, spec, str(tmp_path))
        assert_that(out["docs"] | beam.Map(lambda d: d.id), equal_to(["realnews/n.jsonl:2"]), label="docs")
        assert_that(out["dead_letter"] | beam.Map(lambda d: (os.path.basename(d.location), d.error)),
                    equal_to([("n.jsonl:0", "unencodable_record: meta: nested deeper than 32 levels"),
                              ("n.jsonl:1", "unencodable_record: meta: lone surrogate in a string")]),
                    label="dead")


def test_a_name_holding_a_backslash_is_read_not_skipped(pipeline, tmp_path):
    """Beam's glob ``*`` stops at ``\\`` (as at a Windows separator): such a file matched no
    glob and vanished without a row, a dead letter or a warning.  Matching, planning and the
    read stage now see it like any other file."""
    from pipelines.config.inputs import match_pattern, plan_inputs

    (tmp_path / "a\\b.jsonl").write_text(json.dumps({"text": english(5)}) + "\n")
    (tmp_path / "c.jsonl").write_text(json.dumps({"text": english(6)}) + "\n")
    pattern = str(tmp_path / "*.jsonl")
    assert [os.path.basename(p) for p in match_pattern(pattern)] == ["a\\b.jsonl", "c.jsonl"]
    spec = InputSpec("realnews", [pattern], "realnews")
    (plan,) = plan_inputs([spec], str(tmp_path))
    assert [f.id_path for f in plan] == ["a\\b.jsonl", "c.jsonl"]
    with pipeline as p:
        out = _outputs(p, spec, str(tmp_path))
        assert_that(out["docs"] | beam.Map(lambda d: d.id),
                    equal_to(["realnews/a\\b.jsonl:0", "realnews/c.jsonl:0"]))


@pytest.mark.parametrize("pattern", ["/d/*.jsonl", "/d/**", "/d/a?c", "/d/[ab]*.txt", "/d/[!a]*",
                                     "/d/[]x]", "/d/[", "/d/x*/y*.gz", "/d/a+b(c).txt", "gs://b/p/*.zst"])
def test_glob_regex_agrees_with_beam_except_at_backslashes(pattern):
    from apache_beam.io.filesystem import FileSystem

    from pipelines.config.inputs import glob_regex

    paths = ["/d/a.jsonl", "/d/sub/a.jsonl", "/d/abc", "/d/a/c", "/d/b.txt", "/d/ab.txt", "/d/x",
             "/d/]", "/d/[", "/d/xy/yz.gz", "/d/a+b(c).txt", "gs://b/p/x.zst", "gs://b/p/q/x.zst"]
    beam_re, ours = re.compile(FileSystem.translate_pattern(pattern)), glob_regex(pattern)
    assert [bool(beam_re.match(p)) for p in paths] == [bool(ours.match(p)) for p in paths]


@pytest.mark.parametrize("pattern, path", [("/d/*.jsonl", "/d/a\\b.jsonl"), ("/d/[ab]*.txt", "/d/a\\x.txt"),
                                           ("/d/x*/y*.gz", "/d/x\\1/y\\2.gz")])
def test_glob_star_matches_a_backslash_where_beams_does_not(pattern, path):
    from apache_beam.io.filesystem import FileSystem

    from pipelines.config.inputs import glob_regex

    assert glob_regex(pattern).match(path) and not re.match(FileSystem.translate_pattern(pattern), path)
    assert not glob_regex(pattern).match(path.replace("\\", "/", 1))  # "/" still separates
