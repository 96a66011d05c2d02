"""A faster ``__init__`` for the frozen, slotted dataclasses of the hot path (packets, stream events)."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["fast_frozen_init"]

_T = TypeVar("_T")


def fast_frozen_init(cls: type[_T]) -> type[_T]:
    """Give a ``@dataclass(frozen=True, slots=True)`` class a faster ``__init__``.

    The dataclass-generated ``__init__`` of a frozen class sets every field with
    ``object.__setattr__(self, name, value)``, which costs about 80 ns per field. Setting the slots through
    their member descriptors does the same thing (the instance stays frozen: assigning an attribute
    afterwards still raises ``FrozenInstanceError``) at about half the cost, which matters for the
    per-packet objects of the hot path. Fields with ``init=False``, default factories or ``__post_init__``
    are not supported (the decorator refuses such classes). A class compiled as an extension type (a
    ``.pxd`` declares it; its fields are in the object, read-only to Python) is returned as it is.
    """
    if not cls.__flags__ & (1 << 9):  # not Py_TPFLAGS_HEAPTYPE: a compiled extension type
        return cls

    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__} must be a @dataclass(frozen=True, slots=True)")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: __post_init__ is not supported")
    ns: dict[str, Any] = {}
    args: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or f.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: only plain fields and plain defaults are supported")
        ns[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        if f.default is dataclasses.MISSING:
            args.append(f.name)
        else:
            ns[f"_default_{f.name}"] = f.default
            args.append(f"{f.name}=_default_{f.name}")
        body.append(f"    _set_{f.name}(self, {f.name})")
    src = f"def __init__(self, {', '.join(args)}):\n" + "\n".join(body or ["    pass"]) + "\n"
    exec(src, ns)  # noqa: S102 - same technique as dataclasses itself
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = getattr(cls.__init__, "__doc__", None)
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
