"""Build of lakebench: pure Python package plus the Cython LMDB store core.

All metadata lives in pyproject.toml; this file only declares the compiled
extension, which links the system LMDB (Debian: liblmdb-dev).  Override the
header / library location with LMDB_INCLUDEDIR and LMDB_LIBDIR.
"""
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

include_dirs = [d for d in [os.environ.get("LMDB_INCLUDEDIR")] if d]
library_dirs = [d for d in [os.environ.get("LMDB_LIBDIR")] if d]

store = Extension(
    "lakebench._store",
    sources=["ext/_store.pyx"],
    include_dirs=include_dirs,
    library_dirs=library_dirs,
    runtime_library_dirs=library_dirs,
    libraries=["lmdb"],
    extra_compile_args=["-O2"],
)

setup(
    ext_modules=cythonize(
        [store],
        include_path=["ext"],
        compiler_directives={"language_level": "3", "embedsignature": True},
    ),
)
