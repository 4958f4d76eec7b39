"""text_signatures (the pipeline's batched path) is bitwise text_signature, text by text."""
import numpy as np
import pytest

from curation.minhash import text_signature, text_signatures

TEXTS = [
    "", "a b", "one two three four five", "x " * 3, "repeat " * 300,
    "Héllo\u00a0World  tab\tA B C D E F G H I J K L", "  lead  TRAIL ", "w " * 40,
    " ".join(f"w{i}" for i in range(12)), "ÀÉ\u2003b c d e f g h i j k l m n",
    "The quick brown fox jumps over the lazy dog\n\n" * 20,
] + [" ".join(f"t{(i * 7 + j) % 97}" for j in range(300)) for i in range(20)]


@pytest.mark.parametrize("batch", [1, 3, len(TEXTS)])
@pytest.mark.parametrize("min_shingles", [1, 10])
def test_batch_matches_single(batch, min_shingles):
    got = []
    for k in range(0, len(TEXTS), batch):
        got += text_signatures(TEXTS[k : k + batch], min_shingles=min_shingles)
    for text, sig in zip(TEXTS, got):
        ref = text_signature(text, min_shingles=min_shingles)
        assert (sig is None) == (ref is None), text[:30]
        if ref is not None:
            assert sig.dtype == ref.dtype and np.array_equal(sig, ref), text[:30]


def test_batch_other_settings_fall_back():
    for kind, scheme in [("char", "affine32"), ("word", "legacy")]:
        got = text_signatures(TEXTS[-3:], 5, kind, 64, 3, scheme)
        for text, sig in zip(TEXTS[-3:], got):
            assert np.array_equal(sig, text_signature(text, 5, kind, 64, 3, scheme))
