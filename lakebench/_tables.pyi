"""Type stubs of ext/lakebench/_tables.pyx: no Python API (its C API is in _tables.pxd)."""
