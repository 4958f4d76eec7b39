import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "training"))  # training_fixtures

from eval_fixtures import make_checkpoint  # noqa: E402


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> str:
    """A trainer checkpoint (tp 1) of a tiny GPT over the GPT-2 vocabulary, 2 steps trained."""
    return make_checkpoint(str(tmp_path_factory.mktemp("ckpt")))
