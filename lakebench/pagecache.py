"""The OS page cache, dropped for a cold read (``--cold``): the drivers and the
``read`` workload both need it, so it lives below both."""
from __future__ import annotations

import os


def drop_page_cache() -> bool:
    """Write dirty pages and drop the OS page cache (root only); whether it was done.

    Pages a process has mapped and touched (an in-process LMDB store's) may
    stay resident: the kernel drops only what nobody maps.
    """
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        return False
    return True
