"""Path listings as input (pipelines.config.listings): parsing, selecting, the config checks
that name the setting, ids that do not depend on the selector, and a Common-Crawl-sized
listing planned without asking anything of the files it names."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from http_server import FileServer
from infra.config import ConfigError
from pipelines.config.inputs import id_root, input_files, plan_inputs, work_patterns
from pipelines.config.job import config_from_dict
from pipelines.config.listings import (ListingError, ListingSelect, listed_files, parse_listing,
                                       segment_of, select_lines)
from infra.storage import http_filesystem

CRAWL = "crawl-data/CC-MAIN-2020-50"
SEGMENTS = ["1606141163411.0", "1606141163411.1", "1606141164014.4"]


def cc_lines(n: int = 12) -> list[str]:
    """Lines as Common Crawl's warc.paths.gz spells them, spread over three segments."""
    return [f"{CRAWL}/segments/{SEGMENTS[i * len(SEGMENTS) // n]}/warc/"
            f"CC-MAIN-20201123153826-20201123183826-{i:05d}.warc.gz" for i in range(n)]


def write_listing(path: Path, lines: list[str], gz: bool = True) -> Path:
    data = ("\n".join(lines) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_parse_reads_plain_and_gzip_and_skips_blank_lines():
    lines = cc_lines(3)
    text = ("\n".join(lines[:2]) + "\n\n  " + lines[2] + "  \r\n").encode()
    assert parse_listing(text, "x") == lines
    assert parse_listing(gzip.compress(text), "x.gz") == lines


@pytest.mark.parametrize("line,problem", [
    ("s3://commoncrawl/crawl-data/a.warc.gz", "is a URL"),
    ("/crawl-data/a.warc.gz", "absolute path"),
    ("crawl-data/../secret", "'..' component"),
    ("crawl-data//a.warc.gz", "empty"),
])
def test_a_line_that_is_not_a_relative_path_is_refused_with_its_number(line, problem):
    with pytest.raises(ListingError, match=rf"'x' line 2: .*{problem}"):
        parse_listing(f"{cc_lines(1)[0]}\n{line}\n".encode(), "x")


def test_broken_gzip_and_non_utf8_are_refused():
    with pytest.raises(ListingError, match="not a readable gzip"):
        parse_listing(gzip.compress(b"a\n")[:-6], "x.gz")
    with pytest.raises(ListingError, match="not UTF-8"):
        parse_listing(b"a/\xff.warc.gz\n", "x")


def test_selectors_apply_segments_then_every_then_first():
    lines = cc_lines(12)
    assert segment_of(lines[0]) == SEGMENTS[0] and segment_of("a/b.gz") is None
    assert select_lines(lines, None) == lines
    assert select_lines(lines, ListingSelect(first=3)) == lines[:3]
    assert select_lines(lines, ListingSelect(every=5, offset=2)) == [lines[2], lines[7]]
    assert select_lines(lines, ListingSelect(segments=[SEGMENTS[1]])) == lines[4:8]
    # every counts lines of the whole listing, so a file keeps its place whatever else is chosen
    both = ListingSelect(segments=[SEGMENTS[1], SEGMENTS[2]], every=2, offset=1, first=3)
    assert select_lines(lines, both) == [lines[5], lines[7], lines[9]]


def test_a_selector_that_keeps_nothing_or_names_a_missing_segment_is_refused():
    with pytest.raises(ListingError, match=r"inputs\[1\]\.select\.segments\[1\]: .*'99\.0'"):
        select_lines(cc_lines(), ListingSelect(segments=[SEGMENTS[0], "99.0"]), "inputs[1].select")
    with pytest.raises(ListingError, match="keeps no line of the listing"):
        select_lines(cc_lines(3), ListingSelect(every=10, offset=5))


@pytest.mark.parametrize("kw,field", [
    ({"first": 0}, "first"), ({"every": 0}, "every"), ({"offset": 1}, "offset"),
    ({"every": 3, "offset": 3}, "offset"), ({"segments": []}, "segments"),
    ({"segments": ["a/b"]}, r"segments\[0\]"),
])
def test_selector_settings_are_checked(kw, field):
    with pytest.raises(ValueError, match=rf"^{field}:"):
        ListingSelect(**kw)


def _cfg(root: Path, spec: dict, **top):
    return config_from_dict({"input_root": str(root), "inputs": [spec],
                             "decontamination": {"enabled": False}, **top})


def test_config_checks_name_the_setting(tmp_path):
    write_listing(tmp_path / "warc.paths.gz", cc_lines())
    warc = {"reader": "warc", "source": "cc_2020_50"}
    cases = [
        ({**warc, "listing": "warc.paths.gz", "paths": ["*.gz"]}, r"inputs\[0\]\.paths: not with 'listing'"),
        ({**warc, "paths": ["*.gz"], "base": "x"}, r"inputs\[0\]\.base: only used with 'listing'"),
        ({**warc, "paths": ["*.gz"], "select": {"first": 1}}, r"inputs\[0\]\.select: only used"),
        ({**warc, "listing": "missing.gz"}, r"inputs\[0\]\.listing: .*missing\.gz' cannot be read"),
        ({**warc, "listing": "warc.paths.gz", "select": {"segments": [1606141163411.0]}},
         r"inputs\[0\]\.select\.segments\[0\]: expected a string"),
        ({**warc, "listing": "warc.paths.gz", "select": {"segments": ["7.0"]}},
         r"inputs\[0\]\.select\.segments\[0\]: no line"),
        ({**warc, "listing": "warc.paths.gz", "select": {"every": 0}}, r"inputs\[0\]\.select\.every: must"),
    ]
    for spec, message in cases:
        with pytest.raises(ConfigError, match=message):
            _cfg(tmp_path, spec)
    with pytest.raises(ConfigError, match=r"http\.retries: must be >= 0"):
        _cfg(tmp_path, {**warc, "listing": "warc.paths.gz"}, http={"retries": -1})
    with pytest.raises(ConfigError, match=r"http\.ca_bundle: .*does not exist"):
        _cfg(tmp_path, {**warc, "listing": "warc.paths.gz"}, http={"ca_bundle": str(tmp_path / "no.pem")})
    (tmp_path / "bad.pem").write_text("not a certificate\n")
    with pytest.raises(ConfigError, match=r"http\.ca_bundle: .*holds no PEM certificate"):
        _cfg(tmp_path, {**warc, "listing": "warc.paths.gz"}, http={"ca_bundle": str(tmp_path / "bad.pem")})
    http_filesystem.configure(None)


def test_a_file_listed_twice_is_refused(tmp_path):
    lines = cc_lines(3)
    write_listing(tmp_path / "warc.paths.gz", lines + [lines[1]])
    with pytest.raises(ConfigError, match=r"inputs\[0\]\.listing: .* already matched by inputs\[0\]\.listing"):
        _cfg(tmp_path, {"reader": "warc", "source": "cc_2020_50", "listing": "warc.paths.gz"})


def test_ids_are_the_listing_lines_whatever_the_selector(tmp_path):
    lines = cc_lines(12)
    write_listing(tmp_path / "lists" / "warc.paths.gz", lines)
    base = "https://data.commoncrawl.org/"
    ids = {}
    for select in (None, {"every": 3, "offset": 1}, {"segments": [SEGMENTS[2]]}, {"first": 2}):
        spec = {"reader": "warc", "source": "cc_2020_50", "listing": "lists/warc.paths.gz",
                "base": base, **({"select": select} if select else {})}
        cfg = _cfg(tmp_path, spec)
        (plan,) = plan_inputs(cfg.inputs, cfg.input_root)
        assert id_root(cfg.inputs[0], cfg.input_root) == base
        for f in plan:
            assert f.path == base + f.id_path and f.id_path in lines
            assert ids.setdefault(f.path, f.id_path) == f.id_path
    assert len(ids) == len(lines)
    # the base defaults to input_root, and a relative base is relative to it
    cfg = _cfg(tmp_path, {"reader": "warc", "source": "cc_2020_50", "listing": "lists/warc.paths.gz"})
    assert cfg.inputs[0].base == str(tmp_path)
    cfg = config_from_dict({"input_root": str(tmp_path), "decontamination": {"enabled": False},
                            "inputs": [{"reader": "warc", "source": "cc_2020_50",
                                        "listing": "lists/warc.paths.gz", "base": "mirror"}]},
                           check_paths=False)
    assert cfg.inputs[0].base == str(tmp_path / "mirror")


def test_a_crawl_sized_listing_is_planned_without_asking_the_files(tmp_path):
    """72,000 lines over http: the driver's check and the plan's expansion read the listing and
    ask nothing of the files it names (no HEAD, no glob): their sizes are asked after the files
    are spread over the workers."""
    root = tmp_path / "site"
    lines = cc_lines(72_000)
    write_listing(root / CRAWL / "warc.paths.gz", lines)
    with FileServer(root) as srv:
        cfg = config_from_dict({"input_root": srv.url, "decontamination": {"enabled": False},
                                "inputs": [{"reader": "warc", "source": "cc_2020_50",
                                            "listing": f"{CRAWL}/warc.paths.gz",
                                            "select": {"every": 720}}]})
        spec, listing = cfg.inputs[0], f"/{CRAWL}/warc.paths.gz"
        assert spec.listing_sha256 and set(srv.stats.paths) == {listing}  # the driver: the listing
        assert work_patterns(cfg.inputs) == [(0, spec.listing)]  # ONE element in the job's graph
        files = input_files(spec, spec.listing)
        assert [f.path for f in files] == [f"{srv.url}/{line}" for line in lines[::720]]
        assert set(srv.stats.paths) == {listing}
        assert all(getattr(f, "listed", False) for f in files)
    http_filesystem.configure(None)


def test_a_worker_refuses_a_listing_that_changed_since_the_driver_read_it(tmp_path):
    write_listing(tmp_path / "warc.paths.gz", cc_lines(4))
    cfg = _cfg(tmp_path, {"reader": "warc", "source": "cc_2020_50", "listing": "warc.paths.gz"},)
    assert len(list(listed_files(cfg.inputs[0]))) == 4
    write_listing(tmp_path / "warc.paths.gz", cc_lines(5))
    with pytest.raises(ListingError, match="changed after the job was submitted"):
        list(listed_files(cfg.inputs[0]))
