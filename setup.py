"""Build the compiled decoders (decoders/accel/*.pyx, generated) when the package is installed.

Everything else is in pyproject.toml. The extensions are optional: without Cython or a C compiler
the install still succeeds and the pure-Python decoders (same results, slower) do the work.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class OptionalBuildExt(build_ext):
    """Build the extensions in parallel; on a failure, warn and install the pure-Python package."""

    def initialize_options(self) -> None:
        super().initialize_options()
        self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        try:
            super().run()
        except Exception as err:  # noqa: BLE001 - any build failure leaves the pure-Python decoders
            print(f"warning: compiled decoders not built ({err}); using the pure-Python decoders",
                  file=sys.stderr)


def extensions() -> list:
    if os.environ.get("KAFKA_INSPECTOR_PURE") == "1":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("warning: Cython not available; using the pure-Python decoders", file=sys.stderr)
        return []
    sources = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "decoders" / "accel").glob("*.pyx"))
    return cythonize(sources, language_level=3, quiet=True, nthreads=os.cpu_count() or 1)


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})
