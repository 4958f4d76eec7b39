"""infra.compat.warcio: the warcio internals the WARC walk uses are checked, and a mismatch fails loudly."""
from __future__ import annotations

import io

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.limitreader import LimitReader

from infra.compat import warcio as compat


def test_the_installed_warcio_passes():
    compat.check()


@pytest.mark.parametrize("version", ["1.7.3", "1.9.0", "2.0", "0.9"])
def test_a_version_outside_the_checked_range_is_refused(version):
    with pytest.raises(compat.WarcioMismatch, match=f"warcio {version} is not supported"):
        compat.check(version)


def test_a_renamed_internal_is_named(monkeypatch):
    monkeypatch.delattr(ArchiveIterator, "INC_RECORD")
    original = LimitReader.__init__

    def no_limit(self, stream, limit):
        original(self, stream, limit)
        del self.limit

    monkeypatch.setattr(LimitReader, "__init__", no_limit)
    with pytest.raises(compat.WarcioMismatch) as e:
        compat.check()
    assert "ArchiveIterator.INC_RECORD" in str(e.value) and "LimitReader().limit" in str(e.value)


def test_the_accessors_read_what_the_walk_needs():
    it = compat.warc_iterator(io.BytesIO(b""))
    assert compat.record_offset(it) == 0 and compat.framing_errors(it) == 0
    assert compat.StrictWarcIterator.INC_RECORD == ""  # the per-record warning is silenced
    reader = LimitReader(io.BytesIO(b"abc"), 10)
    reader.read()
    assert compat.unread_bytes(reader) == 7 and compat.unread_bytes(io.BytesIO()) == 0
