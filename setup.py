"""Build the Cython kernels: every cython/NAME.pyx becomes linalg_io._kernels.NAME.

Compiled with OpenMP (-fopenmp in compile and link flags) and -O3 -march=native by
default; set LINALG_IO_CFLAGS to replace the optimisation flags (for example
"-O3 -march=x86-64-v3" to build once for a whole cluster).
"""
import os
from pathlib import Path

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

OPT_FLAGS = os.environ.get("LINALG_IO_CFLAGS", "-O3 -march=native").split()
OPENMP = ["-fopenmp"]


def kernel_extensions() -> list[Extension]:
    sources = sorted(Path("cython").glob("*.pyx"))
    if not sources:
        # a source tree without the kernels' sources would install a package that
        # cannot run; stop the build instead (MANIFEST.in puts them in the sdist)
        raise SystemExit("setup.py: no cython/*.pyx here: the compiled kernels cannot be built")
    return [
        Extension(
            f"linalg_io._kernels.{pyx.stem}",
            [str(pyx)],
            depends=[str(header) for header in Path("cython").glob("*.h")],
            include_dirs=[numpy.get_include()],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            extra_compile_args=OPT_FLAGS + OPENMP,
            extra_link_args=OPENMP,
        )
        for pyx in sources
    ]


setup(
    ext_modules=cythonize(
        kernel_extensions(),
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    )
)
