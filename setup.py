"""Build of lakebench: pure Python package plus two Cython modules.

All metadata lives in pyproject.toml; this file only declares the compiled
extensions: the store core, which links the system LMDB (Debian: liblmdb-dev).  Override the
header / library location with LMDB_INCLUDEDIR and LMDB_LIBDIR.  And the
generator of the data set's random literals, which needs nothing but Python.
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

# The data set's random literals (lakebench/workload.py is its facade).
workload = Extension("lakebench._workload", sources=["ext/_workload.pyx"], extra_compile_args=["-O3"])

setup(
    ext_modules=cythonize(
        [store, workload],
        include_path=["ext"],
        compiler_directives={"language_level": "3", "embedsignature": True},
    ),
)
