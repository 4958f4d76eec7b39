import hashlib
import os
import pickle
import struct

import numpy as np
import pytest

from blending.indexed_dataset import (IndexedDataset, IndexedDatasetError, IndexedDatasetWriter,
                                      dtype_for_vocab)

DOCS = [[1, 2, 3], [10, 11, 12, 13, 14], [65000, 7]]

# The full .idx for DOCS as uint16: header (magic, version 1, dtype code 8, 3 sequences,
# 4 document indices), lengths, byte pointers, document indices.
GOLDEN_IDX = (
    b"MMIDIDX\x00\x00" + b"\x01\x00\x00\x00\x00\x00\x00\x00" + b"\x08"
    + b"\x03\x00\x00\x00\x00\x00\x00\x00" + b"\x04\x00\x00\x00\x00\x00\x00\x00"
    + b"\x03\x00\x00\x00" b"\x05\x00\x00\x00" b"\x02\x00\x00\x00"
    + b"\x00" * 8 + b"\x06" + b"\x00" * 7 + b"\x10" + b"\x00" * 7
    + b"\x00" * 8 + b"\x01" + b"\x00" * 7 + b"\x02" + b"\x00" * 7 + b"\x03" + b"\x00" * 7
)


def _write(prefix, docs=DOCS, dtype=np.uint16):
    with IndexedDatasetWriter(str(prefix), dtype) as w:
        for d in docs:
            w.add_document(np.array(d))
    return w.finalize()


def test_dtype_for_vocab_matches_megatron():
    assert dtype_for_vocab(50257) == np.uint16
    assert dtype_for_vocab(65499) == np.uint16
    assert dtype_for_vocab(65500) == np.int32
    assert dtype_for_vocab(None) == np.int32


def test_golden_bytes(tmp_path):
    info = _write(tmp_path / "s")
    idx = (tmp_path / "s.idx").read_bytes()
    assert idx == GOLDEN_IDX and len(idx) == 102
    assert (tmp_path / "s.bin").read_bytes() == np.array(sum(DOCS, []), "<u2").tobytes()
    assert info.documents == 3 and info.tokens == 10
    assert info.idx_sha256 == hashlib.sha256(GOLDEN_IDX).hexdigest()
    assert info.bin_sha256 == hashlib.sha256((tmp_path / "s.bin").read_bytes()).hexdigest()


def test_round_trip_and_api(tmp_path):
    _write(tmp_path / "s")
    ds = IndexedDataset(str(tmp_path / "s"))
    assert len(ds) == 3 and ds.documents == 3 and ds.num_tokens == 10
    assert ds.dtype == np.uint16
    for i, d in enumerate(DOCS):
        assert ds[i].tolist() == d
    assert ds[-1].tolist() == DOCS[-1]
    assert ds.get(1, 2, 2).tolist() == [12, 13]
    assert ds.get(1, 3).tolist() == [13, 14]
    assert ds.sequence_lengths.tolist() == [3, 5, 2]
    assert ds.sequence_pointers.tolist() == [0, 6, 16]
    assert ds.document_indices.tolist() == [0, 1, 2, 3]
    with pytest.raises(IndexError):
        ds[3]
    with pytest.raises(IndexError):
        ds.get(0, 2, 5)
    again = pickle.loads(pickle.dumps(ds))
    assert again[1].tolist() == DOCS[1] and len(pickle.dumps(ds)) < 200


def test_int32_round_trip(tmp_path):
    docs = [[0, 100000, 2**31 - 1], [5]]
    _write(tmp_path / "w", docs, np.int32)
    ds = IndexedDataset(str(tmp_path / "w"))
    assert ds.dtype == np.int32 and [ds[i].tolist() for i in range(2)] == docs
    assert (tmp_path / "w.idx").read_bytes()[17] == 4  # Megatron's int32 code


def test_rewrite_is_byte_identical(tmp_path):
    a, b = _write(tmp_path / "a"), _write(tmp_path / "b")
    assert (a.bin_sha256, a.idx_sha256) == (b.bin_sha256, b.idx_sha256)
    assert (tmp_path / "a.idx").read_bytes() == (tmp_path / "b.idx").read_bytes()


def test_interrupted_write_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError):
        with IndexedDatasetWriter(str(tmp_path / "s"), np.uint16) as w:
            w.add_document(np.array([1, 2, 3]))
            raise RuntimeError("worker died")
    assert os.listdir(tmp_path) == []


def test_out_of_range_token_refused(tmp_path):
    with pytest.raises(ValueError, match="uint16"):
        with IndexedDatasetWriter(str(tmp_path / "s"), np.uint16) as w:
            w.add_document(np.array([70000]))
    assert os.listdir(tmp_path) == []


def test_empty_shard(tmp_path):
    info = _write(tmp_path / "e", [])
    ds = IndexedDataset(str(tmp_path / "e"))
    assert len(ds) == 0 and info.tokens == 0 and ds.document_indices.tolist() == [0]


@pytest.mark.parametrize("corrupt,match", [
    (lambda b: b"XXIDIDX\x00\x00" + b[9:], "magic"),
    (lambda b: b[:9] + struct.pack("<Q", 2) + b[17:], "version"),
    (lambda b: b[:17] + b"\x09" + b[18:], "dtype code"),
    (lambda b: b[:-8], "truncated"),
])
def test_header_validation(tmp_path, corrupt, match):
    _write(tmp_path / "s")
    p = tmp_path / "s.idx"
    p.write_bytes(corrupt(p.read_bytes()))
    with pytest.raises(IndexedDatasetError, match=match):
        IndexedDataset(str(tmp_path / "s"))


def test_bin_size_mismatch_and_missing(tmp_path):
    _write(tmp_path / "s")
    with open(tmp_path / "s.bin", "ab") as f:
        f.write(b"\x00\x00")
    with pytest.raises(IndexedDatasetError, match="bytes"):
        IndexedDataset(str(tmp_path / "s"))
    with pytest.raises(IndexedDatasetError, match="does not exist"):
        IndexedDataset(str(tmp_path / "nope"))


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(docs=st.lists(st.lists(st.integers(0, 65535), max_size=50), max_size=20),
       wide=st.booleans())
def test_round_trip_property(tmp_path_factory, docs, wide):
    d = tmp_path_factory.mktemp("h")
    dtype = np.int32 if wide else np.uint16
    info = _write(d / "s", docs, dtype)
    ds = IndexedDataset(str(d / "s"))
    assert [ds[i].tolist() for i in range(len(ds))] == docs
    assert info.tokens == sum(map(len, docs)) == ds.num_tokens
    expected_ptrs = np.cumsum([0] + [len(x) for x in docs])[:-1] * np.dtype(dtype).itemsize
    assert ds.sequence_pointers.tolist() == expected_ptrs.tolist()
