"""Folders of the shipped data in THIS installation (not a checkout): kept for callers that
join paths under ``data_manifests/``.  New code should use ``mtnlg.resources`` (``pkg://``
references, which travel to workers, and shipped configs by name)."""
from __future__ import annotations

from pathlib import Path

from mtnlg import resources

DATA_MANIFESTS = Path(resources.local_path(resources.ref("data_manifests")))
DEMO_SOURCE_CONFIG = Path(resources.config_path("sources", "demo"))
DEMO_BLEND_SPEC = Path(resources.config_path("blends", "demo"))
DEMO_QUALITY_CONFIG = Path(resources.config_path("quality", "demo"))
DEMO_TRAIN_CONFIG = Path(resources.config_path("train", "demo"))
