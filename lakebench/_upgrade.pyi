"""Type stubs of ext/lakebench/_upgrade.pyx: no Python API (its C API is in _upgrade.pxd)."""
