"""The plain Python readers of any generated module: the reference the compiled readers are held to.

Each message layout ships one reader (``decoders.generated_modules``): compiled for the hot APIs and every header
and embedded structure, plain Python for the rare APIs. The tests hold the compiled ones to the plain readers the
other renderer makes of the same model (``decoders.codegen.generate.plain_sources``), rendered here, in the
tests, and run as they would run shipped: the same value and end offset, or the same failure."""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

from decoders.codegen.generate import plain_sources, schema_docs
from decoders.generated import registry
from decoders.spec.convert import SCHEMA_DIR


@cache
def _sources() -> dict[str, str]:
    _, apis, data_docs = schema_docs(SCHEMA_DIR)
    return plain_sources(apis, data_docs)


def plain_source(name: str) -> str:
    """The text of generated module ``name``'s plain readers."""
    return _sources()[name]


@cache
def plain_module(name: str) -> ModuleType:
    """The plain readers of generated module ``name`` (``api_011_join_group``): the shipped module for an API
    whose readers are plain (decoders/generated), else rendered from the model and executed as a module."""
    if name not in registry.ACCEL_MODULES:
        return importlib.import_module(f"decoders.generated.{name}")
    module = ModuleType(f"plain_readers.{name}", f"the plain readers of {name}, the compiled ones' reference")
    exec(compile(plain_source(name), f"<plain readers of {name}>", "exec"), module.__dict__)  # noqa: S102
    return module
