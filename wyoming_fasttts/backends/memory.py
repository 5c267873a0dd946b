"""Process and device memory readings shared by every engine and the watchdog."""

from __future__ import annotations

import os
import resource


def process_rss_bytes() -> int:
    """Resident set size now (Linux /proc), falling back to the peak where /proc is absent."""
    try:
        with open(f"/proc/{os.getpid()}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def process_peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
