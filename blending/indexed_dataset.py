"""Megatron-Core indexed datasets: a byte-compatible writer and a memory-mapped reader.

A shard is a pair of files sharing a prefix. ``PREFIX.bin`` holds the tokens of every
sequence back to back (little-endian, one dtype for the whole shard). ``PREFIX.idx`` says
where each sequence starts::

    offset  size        field
    0       9           magic  b"MMIDIDX\\x00\\x00"
    9       8  <u8      version = 1
    17      1  u8       dtype code (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64,
                                    6 float64, 7 float32, 8 uint16)
    18      8  <u8      sequence count S
    26      8  <u8      document-index count D = documents + 1
    34      4*S <i4     sequence lengths (elements, not bytes)
    ..      8*S <i8     sequence pointers (byte offsets into .bin)
    ..      8*D <i8     document indices (sequence ranges [d[k], d[k+1]) per document)

Worked numbers: three documents of 3, 5 and 2 uint16 tokens give lengths ``[3, 5, 2]``,
pointers ``[0, 6, 16]``, document indices ``[0, 1, 2, 3]``, a 20-byte .bin and a
34 + 12 + 24 + 32 = 102-byte .idx. Here one document is one sequence (the caller has already
appended the EOD token), exactly what Megatron-LM's ``preprocess_data.py`` writes without
sentence splitting, so Megatron-LM can read these shards unchanged.
"""
from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np

INDEX_MAGIC = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
_HEADER = struct.Struct("<9sQBQQ")  # magic, version, dtype code, sequence count, doc-index count
HEADER_SIZE = _HEADER.size  # 34 bytes

# Megatron's DType enum values; they are written into every .idx, so never renumber them.
DTYPE_CODES: dict[type, int] = {
    np.uint8: 1,
    np.int8: 2,
    np.int16: 3,
    np.int32: 4,
    np.int64: 5,
    np.float64: 6,
    np.float32: 7,
    np.uint16: 8,
}
_CODE_TO_DTYPE = {code: np.dtype(t) for t, code in DTYPE_CODES.items()}

# Megatron switches to int32 a little below 65536 (its threshold is 65500), so use the same
# cut-off: a vocabulary Megatron stores as int32 must also be int32 here.
_UINT16_VOCAB_LIMIT = 65500


def dtype_for_vocab(vocab_size: int | None) -> np.dtype:
    """The token dtype Megatron picks: uint16 when ``vocab_size < 65500``, else int32."""
    if vocab_size is not None and vocab_size < _UINT16_VOCAB_LIMIT:
        return np.dtype(np.uint16)
    return np.dtype(np.int32)


def _dtype_code(dtype: Any) -> int:
    dt = np.dtype(dtype)
    for t, code in DTYPE_CODES.items():
        if np.dtype(t) == dt:
            return code
    raise ValueError(f"dtype {dt} is not a Megatron indexed-dataset dtype; use one of "
                     f"{sorted(np.dtype(t).name for t in DTYPE_CODES)}")


def bin_path(prefix: str) -> str:
    return prefix + ".bin"


def idx_path(prefix: str) -> str:
    return prefix + ".idx"


@dataclass(frozen=True)
class ShardInfo:
    """What ``IndexedDatasetWriter.finalize`` wrote: enough for a manifest entry."""

    prefix: str
    documents: int
    tokens: int
    bin_sha256: str
    idx_sha256: str


def encode_index(dtype: Any, sequence_lengths: np.ndarray, document_indices: np.ndarray) -> bytes:
    """The exact bytes of a .idx file (pointers are derived from the lengths)."""
    dt = np.dtype(dtype)
    lengths = np.asarray(sequence_lengths, dtype="<i4")
    pointers = np.zeros(len(lengths), dtype="<i8")
    if len(lengths) > 1:
        np.cumsum(lengths[:-1].astype(np.int64) * dt.itemsize, out=pointers[1:])
    doc_idx = np.asarray(document_indices, dtype="<i8")
    header = _HEADER.pack(INDEX_MAGIC, INDEX_VERSION, _dtype_code(dt), len(lengths), len(doc_idx))
    return header + lengths.tobytes() + pointers.tobytes() + doc_idx.tobytes()


class IndexedDatasetWriter:
    """Write one shard; files appear under their final names only when complete.

    Tokens go to a temporary file next to the target; ``finalize`` writes the index, then
    renames ``.bin`` and, last, ``.idx`` into place (a reader keys on the ``.idx``, so it
    never sees a half-written shard). Leaving a ``with`` block by an exception removes the
    temporary files and writes nothing. Same documents in, same bytes out.
    """

    def __init__(self, prefix: str, dtype: Any) -> None:
        self.prefix = str(prefix)
        self.dtype = np.dtype(dtype).newbyteorder("<")
        _dtype_code(self.dtype)  # validate early
        directory = os.path.dirname(os.path.abspath(self.prefix))
        os.makedirs(directory, exist_ok=True)
        base = os.path.basename(self.prefix)
        fd, self._tmp_bin = tempfile.mkstemp(prefix=f".{base}.", suffix=".bin.tmp", dir=directory)
        self._bin = os.fdopen(fd, "wb")
        self._bin_hash = hashlib.sha256()
        self._lengths: list[int] = []
        self._tokens = 0
        self._info: ShardInfo | None = None
        self._closed = False
        if np.issubdtype(self.dtype, np.integer):
            info = np.iinfo(self.dtype)
            self._range: tuple[int, int] | None = (int(info.min), int(info.max))
        else:
            self._range = None

    def add_document(self, tokens: np.ndarray) -> None:
        """Append one document (one sequence; the EOD token is already included)."""
        if self._closed:
            raise RuntimeError(f"writer for {self.prefix!r} is already finalized or aborted")
        arr = np.asarray(tokens)
        if arr.ndim != 1:
            raise ValueError(f"a document must be a 1-D token array, got shape {arr.shape}")
        if self._range is not None and arr.size:
            lo, hi = int(arr.min()), int(arr.max())
            if lo < self._range[0] or hi > self._range[1]:
                raise ValueError(f"token ids [{lo}, {hi}] do not fit shard dtype {self.dtype.name} "
                                 f"of {self.prefix!r}; pick the dtype with dtype_for_vocab()")
        if arr.size > np.iinfo(np.int32).max:
            raise ValueError("a document longer than 2**31-1 tokens cannot be indexed")
        data = arr.astype(self.dtype, copy=False).tobytes()
        self._bin.write(data)
        self._bin_hash.update(data)
        self._lengths.append(int(arr.size))
        self._tokens += int(arr.size)

    def finalize(self) -> ShardInfo:
        """Write the index and move both files into place; returns the shard's summary."""
        if self._info is not None:
            return self._info
        if self._closed:
            raise RuntimeError(f"writer for {self.prefix!r} was aborted")
        self._closed = True
        try:
            self._bin.flush()
            os.fsync(self._bin.fileno())
            self._bin.close()
            n = len(self._lengths)
            index = encode_index(self.dtype, np.array(self._lengths, dtype=np.int64),
                                 np.arange(n + 1, dtype=np.int64))
            directory = os.path.dirname(os.path.abspath(self.prefix))
            fd, tmp_idx = tempfile.mkstemp(prefix=f".{os.path.basename(self.prefix)}.",
                                           suffix=".idx.tmp", dir=directory)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(index)
                    f.flush()
                    os.fsync(f.fileno())
                # mkstemp creates 0600 files; shards are shared data, so make them world-readable.
                os.chmod(self._tmp_bin, 0o644)
                os.chmod(tmp_idx, 0o644)
                os.replace(self._tmp_bin, bin_path(self.prefix))
                os.replace(tmp_idx, idx_path(self.prefix))
            except BaseException:
                _remove_quietly(tmp_idx)
                raise
        except BaseException:
            _remove_quietly(self._tmp_bin)
            raise
        self._info = ShardInfo(self.prefix, n, self._tokens, self._bin_hash.hexdigest(),
                               hashlib.sha256(index).hexdigest())
        return self._info

    def abort(self) -> None:
        """Discard everything written so far; no file appears under the final names."""
        if self._closed:
            return
        self._closed = True
        self._bin.close()
        _remove_quietly(self._tmp_bin)

    @property
    def documents(self) -> int:
        return len(self._lengths)

    @property
    def tokens(self) -> int:
        return self._tokens

    def __enter__(self) -> "IndexedDatasetWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.finalize()
        else:
            self.abort()


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


class IndexedDatasetError(ValueError):
    """A shard's files are missing, truncated or not a Megatron indexed dataset."""


class IndexedDataset:
    """Read-only, memory-mapped view of a shard written by Megatron or by this module.

    ``ds[i]`` is the i-th sequence (here: document) as a zero-copy array of the shard dtype.
    Pickles as its prefix and reopens on unpickle, so DataLoader workers do not copy tokens.
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = str(prefix)
        self._open()

    def _open(self) -> None:
        ipath, bpath = idx_path(self.prefix), bin_path(self.prefix)
        for p in (ipath, bpath):
            if not os.path.isfile(p):
                raise IndexedDatasetError(f"shard file {p!r} does not exist")
        idx_size = os.path.getsize(ipath)
        if idx_size < HEADER_SIZE:
            raise IndexedDatasetError(f"{ipath!r} is {idx_size} bytes, shorter than the "
                                      f"{HEADER_SIZE}-byte header")
        self._idx = np.memmap(ipath, dtype=np.uint8, mode="r")
        magic, version, code, n_seq, n_doc = _HEADER.unpack(bytes(self._idx[:HEADER_SIZE]))
        if magic != INDEX_MAGIC:
            raise IndexedDatasetError(f"{ipath!r} has magic {magic!r}, expected {INDEX_MAGIC!r} "
                                      "(not a Megatron mmap indexed dataset)")
        if version != INDEX_VERSION:
            raise IndexedDatasetError(f"{ipath!r} has index version {version}, only "
                                      f"{INDEX_VERSION} is supported")
        if code not in _CODE_TO_DTYPE:
            raise IndexedDatasetError(f"{ipath!r} has unknown dtype code {code}")
        self.dtype: np.dtype = _CODE_TO_DTYPE[code].newbyteorder("<")
        expected = HEADER_SIZE + 4 * n_seq + 8 * n_seq + 8 * n_doc
        # Multimodal Megatron indexes append one int8 mode per sequence; accept and ignore.
        if idx_size not in (expected, expected + n_seq):
            raise IndexedDatasetError(f"{ipath!r} is {idx_size} bytes but its header "
                                      f"({n_seq} sequences, {n_doc} document indices) needs "
                                      f"{expected}; the file is truncated or corrupt")
        off = HEADER_SIZE
        self.sequence_lengths = np.frombuffer(self._idx, dtype="<i4", count=n_seq, offset=off)
        off += 4 * n_seq
        self.sequence_pointers = np.frombuffer(self._idx, dtype="<i8", count=n_seq, offset=off)
        off += 8 * n_seq
        self.document_indices = np.frombuffer(self._idx, dtype="<i8", count=n_doc, offset=off)
        if n_doc < 1 or self.document_indices[0] != 0 or self.document_indices[-1] != n_seq:
            raise IndexedDatasetError(f"{ipath!r} document indices must run from 0 to {n_seq}")
        n_elems = int(self.sequence_lengths.sum(dtype=np.int64))
        bin_size = os.path.getsize(bpath)
        if bin_size != n_elems * self.dtype.itemsize:
            raise IndexedDatasetError(f"{bpath!r} is {bin_size} bytes but {ipath!r} indexes "
                                      f"{n_elems} {self.dtype.name} tokens "
                                      f"({n_elems * self.dtype.itemsize} bytes)")
        # np.memmap cannot map an empty file; an empty shard is still a valid shard.
        # Viewed as a plain ndarray: slices then skip np.memmap's per-slice subclass overhead.
        self._bin = (np.memmap(bpath, dtype=self.dtype, mode="r").view(np.ndarray) if n_elems
                     else np.empty(0, dtype=self.dtype))
        self.num_tokens = n_elems

    def __len__(self) -> int:
        return len(self.sequence_lengths)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.get(i)

    def get(self, i: int, offset: int = 0, length: int | None = None) -> np.ndarray:
        """Tokens ``[offset, offset + length)`` of sequence ``i`` (to its end if no length)."""
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"sequence {i} out of range for {n} sequences in {self.prefix!r}")
        size = int(self.sequence_lengths[i])
        if length is None:
            length = size - offset
        if offset < 0 or length < 0 or offset + length > size:
            raise IndexError(f"[{offset}, {offset + length}) is outside sequence {i} "
                             f"of length {size}")
        start = int(self.sequence_pointers[i]) // self.dtype.itemsize + offset
        return self._bin[start:start + length]

    @property
    def documents(self) -> int:
        return len(self.document_indices) - 1

    @staticmethod
    def exists(prefix: str) -> bool:
        return os.path.isfile(idx_path(prefix)) and os.path.isfile(bin_path(prefix))

    def __getstate__(self) -> dict:
        return {"prefix": self.prefix}

    def __setstate__(self, state: dict) -> None:
        self.prefix = state["prefix"]
        self._open()

    def __repr__(self) -> str:
        return (f"IndexedDataset({self.prefix!r}, sequences={len(self)}, "
                f"tokens={self.num_tokens}, dtype={self.dtype.name})")
