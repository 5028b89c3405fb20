"""Type stubs of ext/lakebench/_check.pyx: no Python API (its C API is in _check.pxd)."""
