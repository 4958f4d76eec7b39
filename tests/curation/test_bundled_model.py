"""The shipped language-id model is the unmodified fastText lid.176.ftz."""
import hashlib

from curation.language import LanguageIdentifier, bundled_model_path

LID_176_FTZ_SHA256 = "8f3472cfe8738a7b6099e8e999c3cbfae0dcd15696aac7d7738a8039db603e83"


def test_lid_model_checksum():
    with open(bundled_model_path(), "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == LID_176_FTZ_SHA256


def test_lid_model_loads_and_predicts():
    lang, score = LanguageIdentifier().predict("The quick brown fox jumps over the lazy dog again.")
    assert lang == "en" and score > 0.5
