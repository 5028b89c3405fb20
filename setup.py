"""Build of lakebench: pure Python package plus the Cython LMDB store core.

All metadata lives in pyproject.toml; this file only declares the compiled
extension, which links the system LMDB (Debian: liblmdb-dev).  Override the
header / library location with LMDB_INCLUDEDIR and LMDB_LIBDIR.
"""
from setuptools import setup

setup()
