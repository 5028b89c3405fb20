"""Type stubs of ext/lakebench/_termgc.pyx: no Python API (its C API is in _termgc.pxd)."""
