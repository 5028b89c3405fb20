"""Type stubs of ext/lakebench/_termids.pyx: no Python API (its C API is in _termids.pxd)."""
