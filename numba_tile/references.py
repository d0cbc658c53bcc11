"""Pickling kernel objects (``Kernel``, ``Autotuned``) by reference, as Python pickles functions.

A kernel object stands for the function it decorated, fixed when it was made, so it copies and
pickles as that function does: ``copy.copy`` and ``copy.deepcopy`` return the object itself,
and ``pickle`` records the module and qualified name it is defined under, looked up again when
loaded (as a Numba dispatcher of a module-level function pickles). Nothing of the function is
serialized: no code, no source text to be read again, so a loaded kernel is the one its module
defines in the loading process.

A kernel object that is not the module-level object of its name (made inside a function, a
``with_options`` variant, the kernel an autotuner wraps, a kernel of a module that cannot be
imported) is refused when pickled, with a TileArgumentError (a TypeError, as Python's own
"cannot pickle" refusals) that says what to do instead.
"""

from __future__ import annotations

import importlib

from .errors import TileArgumentError, shown

__all__ = ["load", "reduce"]


def _lookup(module: str, qualname: str):
    """The object named ``qualname`` in module ``module`` (imported if need be).

    Raises:
        ImportError, AttributeError: no such module or name.
    """
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _why_not(obj, module: str | None, qualname: str) -> str | None:
    """Why ``obj`` cannot be pickled as ``module.qualname``, or None when it can."""
    if "<locals>" in qualname.split("."):
        return "it is defined inside a function, where loading cannot find it"
    if not module:
        return "it has no module to be found in"
    try:
        found = _lookup(module, qualname)
    except Exception:  # noqa: BLE001 - any failure to find it: refused with the name
        return f"no object is named {module}.{qualname}"
    if found is not obj:
        return f"{module}.{qualname} is another object, {shown(found)}"
    return None


def reduce(obj, what: str, module: str | None, qualname: str, cls) -> tuple:
    """``obj.__reduce__()``: loading calls :func:`load` with its module and name.

    Args:
        obj: the kernel object pickled.
        what: how messages name it (``"kernel"``, ``"autotuned kernel"``).
        module, qualname: where it is defined (its function's).
        cls: the class the loaded object must be an instance of.

    Raises:
        TileArgumentError: ``obj`` is not the object of that name, at the user's line.
    """
    why = _why_not(obj, module, qualname)
    if why is not None:
        from .options import at_user_line
        raise at_user_line(
            TileArgumentError,
            f"{what} '{qualname}' cannot be pickled: a numba_tile kernel is pickled by "
            f"reference, as a function is (its module and name, looked up again on loading), "
            f"and {why}; define it at the top level of an importable module, or pickle what "
            f"builds it (the function and its options) and decorate it after loading")
    return load, (module, qualname, cls)


def load(module: str, qualname: str, cls):
    """The kernel object named ``qualname`` in ``module``: what :func:`reduce` pickled.

    Raises:
        TileArgumentError: the name is no longer an instance of ``cls``.
    """
    obj = _lookup(module, qualname)
    if not isinstance(obj, cls):
        raise TileArgumentError(
            f"unpickling the numba_tile kernel {module}.{qualname}: that name is now "
            f"{type(obj).__name__}, not a {cls.__name__}")
    return obj
