"""Build of lakebench: pure Python package plus its Cython modules.

All metadata lives in pyproject.toml; this file only declares the compiled
extensions:

* the store core, one extension per module of ext/lakebench/ (split by
  concern; see docs/store.rst), each linked to the system LMDB (Debian:
  liblmdb-dev; override the header / library location with LMDB_INCLUDEDIR
  and LMDB_LIBDIR).  ext/lakebench/ mirrors the package so that a module's
  cimports (``from lakebench._codec cimport ...``) name the module imported
  at run time;
* the generator of the data set's random literals, which needs nothing but
  Python;
* lakebench._sparql (Rust, ext/sparql/): SPARQL Update checked on the parse
  of spargebra, pyoxigraph's own parser, and the sandbox of the process that
  evaluates it (lakebench/server/sandbox.py); cargo builds it.
"""
import os
from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools_rust import Binding, RustExtension

include_dirs = [d for d in [os.environ.get("LMDB_INCLUDEDIR")] if d]
library_dirs = [d for d in [os.environ.get("LMDB_LIBDIR")] if d]

store_core = [
    Extension(
        f"lakebench.{source.stem}",
        sources=[str(source)],
        include_dirs=include_dirs,
        library_dirs=library_dirs,
        runtime_library_dirs=library_dirs,
        libraries=["lmdb"],
        extra_compile_args=["-O2"],
    )
    for source in sorted(Path("ext/lakebench").glob("*.pyx"))
]

# The data set's random literals (lakebench/workload.py is its facade).
workload = Extension("lakebench._workload", sources=["ext/_workload.pyx"], extra_compile_args=["-O3"])

setup(
    ext_modules=cythonize(
        [*store_core, workload],
        include_path=["ext"],
        compiler_directives={"language_level": "3", "embedsignature": True},
    ),
    # debug=False: an editable install would otherwise build it unoptimized (10x slower PATCHes).
    rust_extensions=[RustExtension("lakebench._sparql", path="ext/sparql/Cargo.toml", binding=Binding.PyO3,
                                   debug=False)],
)
