"""Type stubs of ext/lakebench/_txncore.pyx: no Python API (its C API is in _txncore.pxd)."""
