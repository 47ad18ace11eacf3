#!/usr/bin/env python3
"""The nightly rebuild scheduler: rebuild the brain index every day at 03:00 local time.

    python cron/nightly_rebuild.py --root ~/notes             # foreground, every day at 03:00
    python cron/nightly_rebuild.py --root ~/notes --at 04:30  # another time
    python cron/nightly_rebuild.py --root ~/notes --once      # one rebuild now (for cron, systemd, launchd)

The same as `brain schedule`; each run is logged to stderr and to
<notes>/.brain/schedule.log with its scan report, and `brain status` shows the
last rebuild and how it ended. See HOOKS.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run from a source checkout without installing: the library lives in tools/lib.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools" / "lib"))

from brain.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["schedule", *sys.argv[1:]]))
