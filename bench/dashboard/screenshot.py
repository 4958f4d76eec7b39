"""Screenshot of the demo run's dashboard for the README (docs/dashboard.png).

    .venv/bin/mtnlg demo --workdir /tmp/demo_for_shot --skip-train
    .venv/bin/python -m bench.dashboard.screenshot /tmp/demo_for_shot/run \
        --manifest /tmp/demo_for_shot/manifest.json --output docs/dashboard.png

Renders the dashboard, opens it in headless Chromium, opens the first drop-down entries as a
reader would see them, and captures the page down to ``--height`` pixels, downscaled by the
browser (``--scale``) so the PNG stays well under 1 MB.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.common import test_helpers  # noqa: E402

test_helpers("dashboard")

from mtnlg.dashboard import build_dashboard  # noqa: E402
from chromium_driver import Chromium  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+")
    p.add_argument("--manifest")
    p.add_argument("--output", default="docs/dashboard.png")
    p.add_argument("--width", type=int, default=1300)
    p.add_argument("--height", type=int, default=5200, help="CSS pixels of the page captured from the top")
    p.add_argument("--scale", type=float, default=0.5, help="device scale factor of the capture")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, Chromium() as browser:
        html = build_dashboard(args.runs, Path(tmp) / "dashboard.html", args.manifest)
        page = browser.open(html.resolve().as_uri())
        page.wait_for("window.__dashboardReady === true")
        assert not page.errors, page.errors
        page.call("Emulation.setDeviceMetricsOverride", {"width": args.width, "height": args.height,
                                                         "deviceScaleFactor": args.scale, "mobile": False})
        import base64
        shot = page.call("Page.captureScreenshot", {"format": "png", "clip": {
            "x": 0, "y": 0, "width": args.width, "height": args.height, "scale": 1}})
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(shot["data"]))
        page.close()
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
