"""Build the compiled modules: the decoders' generated Cython readers (decoders/accel/*.pyx), the typed native
modules (decoders/native, inspector/native) and the hot path's plain-Python modules, compiled by Cython.

Everything else is in pyproject.toml. A C compiler is required (README.md, "Requirements"): a failed build fails
the install. Each built folder gets a manifest of the sources its extensions were compiled from
(``decoders/_sources.py``); the test suite fails on an extension built from other sources. Nothing checks at
run time: ``make setup`` rebuilds what changed.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# The build's record of its sources (standard library only: loaded by path, without the package).
_spec = importlib.util.spec_from_file_location("_sources", ROOT / "decoders" / "_sources.py")
assert _spec is not None and _spec.loader is not None
_sources = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sources)
# Plain-Python modules compiled by Cython, by package (the .py is their only source; a .pxd beside it, when it has
# one, types it).
COMPILED = {
    "inspector.capture": ("packets", "parser", "file"),
    "inspector.tcp": ("stream_events", "stream_state", "reassembly"),
    "inspector.tls": ("tls_records", "cipher", "tls_events", "session"),
    "inspector.kafka": ("framing", "connection", "pipeline", "topic_names", "tls_stream"),
    "inspector.rows": ("event_table", "summary"),
    "inspector.read": ("reader",),
    "decoders": ("api", "_runtime", "element_budget", "records", "record_header", "record_batches", "record_codecs",
                 "record_budget", "checksums", "guess", "embedded", "topics"),
}
#: The plain modules whose annotations are C types (Cython's default: ``x: int`` a C-checked int, ``b: bytes`` a
#: bytes object); the others are compiled with their annotations not taken as C types (their .pxd, when they have
#: one, says which types matter; an ``int`` annotation would clash with it; those with none are typed nowhere).
ANNOTATIONS_AS_TYPES = {"decoders/_runtime.py", "decoders/record_header.py"}
#: The typed native modules (*.pyx): hand-written, but decoders/native/_records.pyx, rendered from its model.
NATIVE_DIRS = ("decoders/native", "inspector/native")
#: Added after Python's own compiler flags (its ``-O3``, ``-DNDEBUG``, ``-fwrapv``, ``-g``): no debugging
#: information. gcc makes the same machine code without it, and writing it is a quarter of the build's time and
#: five sixths of the modules' size (docs/performance.md). A ``CFLAGS`` in the environment replaces Python's
#: flags, ``-O3`` included (setuptools' rule), and these too: build with debugging information by giving them
#: all, ``CFLAGS='-DNDEBUG -g -fwrapv -O3'``.
COMPILE_ARGS = [] if "CFLAGS" in os.environ else ["-g0"]
#: Every source compiled, for the manifests.
COMPILED_SOURCES: list[Path] = []


class BuildExt(build_ext):
    """Build the extensions in parallel, then record what they were built from.

    In place (``pip install -e``, ``setup.py build_ext --inplace``) each extension is written straight beside its
    source and only when older than its sources, so ``make setup`` after the editable install compiles nothing
    again (setuptools' own in-place build compiles into a scratch folder and copies: every module twice).
    """

    def initialize_options(self) -> None:
        super().initialize_options()
        self.parallel = os.cpu_count() or 1

    def run(self) -> None:
        if self.inplace or self.editable_mode:
            self.inplace = True
            super(build_ext, self).run()  # distutils' own: in place, skipping what is up to date
        else:
            super().run()
        _sources.write_manifests(COMPILED_SOURCES, ROOT if self.inplace else Path(self.build_lib), ROOT)


def extensions() -> list:
    from Cython.Build import cythonize

    recorded = sorted((ROOT / "decoders" / "accel").glob("*.pyx"))
    recorded += [path for folder in NATIVE_DIRS for path in sorted((ROOT / folder).glob("*.pyx"))]
    recorded += [ROOT.joinpath(*package.split("."), f"{name}.py")
                 for package, names in COMPILED.items() for name in names]
    COMPILED_SOURCES.extend(recorded)
    sources = [str(path.relative_to(ROOT)) for path in recorded]
    annotations_not_types = [path for path in sources if path.endswith(".py") and path not in ANNOTATIONS_AS_TYPES]
    options = {"language_level": 3, "quiet": True, "nthreads": os.cpu_count() or 1}
    built = (cythonize([path for path in sources if path not in annotations_not_types], **options)
             + cythonize(annotations_not_types, compiler_directives={"annotation_typing": False}, **options))
    for extension in built:
        extension.extra_compile_args = [*extension.extra_compile_args, *COMPILE_ARGS]
    return built


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildExt})
