"""GPT-2 byte-level BPE tokenization with HuggingFace ``tokenizers``.

MT-NLG used the GPT-2 vocabulary (50257 tokens, ``<|endoftext|>`` = 50256 separates
documents). The original GPT-2 ``vocab.json``/``merges.txt`` ship inside the package
(``pkg://data_manifests/tokenizers/gpt2``, see ``infra.resources``) together with a
``tokenizer.json`` built from them, so no download happens at run time.

``load_tokenizer`` accepts any of:

* a ``tokenizer.json`` file (any HF fast tokenizer),
* a directory containing ``tokenizer.json``,
* a directory containing ``vocab.json`` + ``merges.txt`` (GPT-2 style byte-level BPE),

each as a local path or a ``pkg://`` reference to a shipped tokenizer (resolved against the
installation of the process that loads it; ``path`` keeps the reference).  Remote URLs are
staged to a local copy by the caller (``infra.storage.staging.local_copy``).

A ``TextTokenizer`` pickles as its path and reloads lazily, so Beam can ship it to workers.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any, Iterable, Sequence

import numpy as np

from infra import resources

EOD_TOKEN = "<|endoftext|>"
TOKENIZER_JSON = "tokenizer.json"
VOCAB_JSON = "vocab.json"
MERGES_TXT = "merges.txt"

#: The shipped GPT-2 tokenizer: the reference configs and run records use, and its folder in
#: this installation.
GPT2 = resources.GPT2_TOKENIZER
GPT2_DIR = resources.local_path(GPT2)


def build_bpe_tokenizer(vocab_path: str, merges_path: str) -> Any:
    """A GPT-2 style byte-level BPE ``tokenizers.Tokenizer`` from vocab + merges files.

    No prefix space (GPT-2 does not add one), byte-level decoder, ``<|endoftext|>``
    registered as a special token so ``token_to_id`` and decoding treat it as one token.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    tok = Tokenizer(models.BPE.from_file(vocab_path, merges_path))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_special_tokens([EOD_TOKEN])
    return tok


def tokenizer_json_bytes(tok: Any) -> bytes:
    """The canonical serialization we hash and save (pretty JSON, as ``Tokenizer.save``)."""
    return tok.to_str(pretty=True).encode("utf-8")


def save_tokenizer_json(tok: Any, path: str) -> str:
    """Write ``tok`` as ``tokenizer.json`` atomically; returns the sha256 of the bytes."""
    data = tokenizer_json_bytes(tok)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()


class TokenizerError(ValueError):
    """A tokenizer path that does not hold a usable tokenizer (missing, empty folder, a
    ``tokenizer.json`` that does not parse)."""


class TokenizerNotFound(TokenizerError, FileNotFoundError):
    """The path, or the files a tokenizer folder must hold, do not exist."""


def _resolve(path: str) -> tuple[str, str | None, tuple[str, str] | None]:
    """(path, tokenizer.json file or None, (vocab, merges) or None) for a user path."""
    path = os.fspath(path)
    local = resources.local_path(path)  # a pkg:// reference -> this installation's folder
    if os.path.isfile(local):
        return path, local, None
    if os.path.isdir(local):
        tj = os.path.join(local, TOKENIZER_JSON)
        if os.path.isfile(tj):
            return path, tj, None
        vocab, merges = os.path.join(local, VOCAB_JSON), os.path.join(local, MERGES_TXT)
        if os.path.isfile(vocab) and os.path.isfile(merges):
            return path, None, (vocab, merges)
        raise TokenizerNotFound(f"tokenizer directory {path!r} has neither {TOKENIZER_JSON} "
                                f"nor {VOCAB_JSON} + {MERGES_TXT}")
    raise TokenizerNotFound(f"tokenizer path {path!r} does not exist")


# Tokenizers loaded in this process, by their files and the files' size and mtime: the driver,
# the pipeline's construction and an in-process runner's DoFns each hold a TextTokenizer of the
# same files, and a load (parse, sha256, WordEncoder) costs about a second.
_LOADED: dict[tuple, tuple[Any, str, Any]] = {}


def _loaded(path: str, json_path: str | None, vocab_merges: tuple[str, str] | None) -> tuple:
    """(tokenizers.Tokenizer, sha256, WordEncoder or None) of these files, loaded once per
    process while the files are unchanged."""
    files = [json_path] if json_path is not None else list(vocab_merges)
    key = (tuple(files), tuple((st.st_size, st.st_mtime_ns) for st in map(os.stat, files)))
    if key not in _LOADED:
        from tokenizers import Tokenizer

        what = json_path or " + ".join(vocab_merges)
        try:
            if json_path is not None:
                with open(json_path, "rb") as f:
                    data = f.read()
                tok = Tokenizer.from_str(data.decode("utf-8"))
            else:
                tok = build_bpe_tokenizer(*vocab_merges)
                data = tokenizer_json_bytes(tok)
        except Exception as e:  # tokenizers raises a bare Exception for a file that does not parse
            detail = " ".join(str(e).split())[:300]
            raise TokenizerError(f"tokenizer {path!r}: {what} cannot be loaded "
                                 f"({type(e).__name__}: {detail})") from None
        tok.encode_special_tokens = True  # literal "<|endoftext|>" in text is just text
        from curation.bpe_words import WordEncoder, applies

        words = WordEncoder(tok) if applies(tok) else None  # same ids, less CPU (bench/RESULTS.md, "Tokenization and shards")
        _LOADED.clear()  # one tokenizer per job: keep only the newest
        _LOADED[key] = (tok, hashlib.sha256(data).hexdigest(), words)
    return _LOADED[key]


class TextTokenizer:
    """Text → token ids, plus the facts a manifest records (sha256, vocab size, EOD id).

    ``sha256`` is the sha256 of the ``tokenizer.json`` bytes (for a vocab + merges directory,
    of the canonical ``tokenizer.json`` built from them, which equals the shipped file).
    Literal ``<|endoftext|>`` text inside a document is encoded as ordinary text, never as
    the EOD id: only the writer's appended EOD may mark a document boundary.
    """

    def __init__(self, path: str) -> None:
        self.path, self._json_path, self._vocab_merges = _resolve(path)
        self._tok: Any = None
        self._sha256: str | None = None
        self._words: Any = None

    # -- lazy state: loaded on first use, dropped when pickled -------------------------------
    def _load(self) -> Any:
        if self._tok is None:
            if self._json_path is None and self._vocab_merges is None:  # unpickled: resolve here
                _, self._json_path, self._vocab_merges = _resolve(self.path)
            self._tok, self._sha256, self._words = _loaded(self.path, self._json_path,
                                                           self._vocab_merges)
        return self._tok

    def __getstate__(self) -> dict:
        # Only the path as the user gave it travels: files are found again in the process that
        # unpickles (a pkg:// reference resolves against that process's installation).
        return {"path": self.path, "_sha256": self._sha256}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._json_path = self._vocab_merges = None
        self._tok = self._words = None

    # -- facts -------------------------------------------------------------------------------
    @property
    def sha256(self) -> str:
        self._load()
        assert self._sha256 is not None
        return self._sha256

    @property
    def vocab_size(self) -> int:
        """Number of token ids including added/special tokens (50257 for GPT-2)."""
        return int(self._load().get_vocab_size(with_added_tokens=True))

    @property
    def eod_id(self) -> int:
        tid = self._load().token_to_id(EOD_TOKEN)
        if tid is None:
            raise TokenizerError(f"tokenizer {self.path!r} has no {EOD_TOKEN!r} token to end documents")
        return int(tid)

    def info(self) -> dict[str, Any]:
        """The ``tokenizer`` block of run.json / the manifest."""
        return {"path": self.path, "sha256": self.sha256, "vocab_size": self.vocab_size,
                "eod_id": self.eod_id}

    # -- encoding ----------------------------------------------------------------------------
    def encode(self, text: str, append_eod: bool = False) -> np.ndarray:
        return self.encode_batch([text], append_eod=append_eod)[0]

    def encode_batch(self, texts: Sequence[str] | Iterable[str],
                     append_eod: bool = False) -> list[np.ndarray]:
        """Token ids (int32) per text; ``append_eod`` adds the EOD id to each."""
        tok = self._load()
        eod = [self.eod_id] if append_eod else []
        texts = list(texts)
        ids = [self._words.encode(t) for t in texts] if self._words is not None else [None] * len(texts)
        rest = [t for t, i in zip(texts, ids) if i is None]
        if rest:  # encode_batch_fast (tokenizers >= 0.21) skips the character offsets: same ids
            encode = getattr(tok, "encode_batch_fast", tok.encode_batch)
            done = iter(e.ids for e in encode(rest, add_special_tokens=False))
            ids = [i if i is not None else next(done) for i in ids]
        return [np.array(i + eod, dtype=np.int32) for i in ids]

    def decode(self, ids: Sequence[int] | np.ndarray) -> str:
        return self._load().decode([int(i) for i in ids], skip_special_tokens=False)

    def __repr__(self) -> str:
        return f"TextTokenizer({self.path!r})"


def load_tokenizer(path: str) -> TextTokenizer:
    """Open a tokenizer from a tokenizer.json file, or a directory (see module docstring)."""
    return TextTokenizer(path)
