"""Where the project's data files live (``data_manifests/``: configs, blends, tokenizers)."""
from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_MANIFESTS = REPO_ROOT / "data_manifests"
DEMO_SOURCE_CONFIG = DATA_MANIFESTS / "sources" / "demo.yaml"
DEMO_BLEND_SPEC = DATA_MANIFESTS / "blends" / "demo.yaml"
DEMO_TRAIN_CONFIG = REPO_ROOT / "training" / "configs" / "demo.yaml"
DEMO_QUALITY_CONFIG = DATA_MANIFESTS / "quality" / "demo.yaml"
