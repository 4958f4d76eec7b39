"""Shipped files found through the installed package (infra.resources), never the checkout."""
from __future__ import annotations

import hashlib
import os
import pickle

import pytest

from infra import resources


def test_shipped_configs_are_addressable_by_name():
    assert {"demo", "mtnlg"} <= set(resources.shipped_configs("sources"))
    assert {"demo", "mtnlg-530b"} <= set(resources.shipped_configs("blends"))
    assert "demo" in resources.shipped_configs("quality")
    assert "demo" in resources.shipped_configs("train")
    for kind in resources.CONFIG_DIRS:
        for name in resources.shipped_configs(kind):
            path = resources.config_path(kind, name)
            assert os.path.isfile(path) and path.endswith(f"{name}.yaml")
            assert resources.config_path(kind, name + ".yaml") == path


def test_config_path_keeps_files_and_urls_and_names_what_ships(tmp_path):
    own = tmp_path / "mine.yaml"
    own.write_text("name: x\n")
    assert resources.config_path("sources", str(own)) == str(own)
    assert resources.config_path("sources", "s3://b/cfg.yaml") == "s3://b/cfg.yaml"
    with pytest.raises(resources.ResourceError, match=r"--spec: 'dmeo'.*shipped blends configs: demo"):
        resources.config_path("blends", "dmeo", "--spec")


def test_package_references_resolve_in_this_installation():
    lid = resources.local_path(resources.LANGUAGE_MODEL)
    with open(lid, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest().startswith("8f3472cfe873")
    assert os.path.isfile(os.path.join(resources.local_path(resources.GPT2_TOKENIZER), "tokenizer.json"))
    assert resources.local_path("/some/local/path") == "/some/local/path"
    assert resources.local_path("s3://b/k") == "s3://b/k"
    assert not resources.exists("pkg://data_manifests/models/missing.bin")
    with pytest.raises(resources.ResourceError, match="not shipped"):
        resources.local_path("pkg://data_manifests/models/missing.bin")
    with pytest.raises(resources.ResourceError):
        resources.local_path("pkg://data_manifests/../setup.py")


def test_tokenizer_travels_as_its_reference():
    from curation.tokenizer import GPT2, load_tokenizer

    tok = load_tokenizer(GPT2)
    assert tok.info()["path"] == "pkg://data_manifests/tokenizers/gpt2" and tok.vocab_size == 50257
    state = pickle.dumps(tok)
    assert resources.local_path(GPT2).encode() not in state  # no driver path inside the pickle
    back = pickle.loads(state)
    assert back.encode("hello world").tolist() == tok.encode("hello world").tolist()
