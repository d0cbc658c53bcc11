"""A kernel's options: their checks, and the attributes fixed when a kernel is made.

:func:`check_options` refuses an option of the wrong type or out of range (``numba_tile.jit``,
``Kernel.with_options``, the autotuner's configurations). A kernel's function, parameters and
options are fixed once it is made (:data:`FIXED`): its compiled code, checks, launch plans and
caches all depend on them, so ``kernel.unchecked = False`` after one acknowledged launch would
otherwise let an unchecked kernel's atomics run without ``unchecked=True``.
:func:`fixed_error` is the refusal, naming the way to get a kernel with another value.
"""

from __future__ import annotations

from .errors import FixedAttributeError, TileArgumentError, shown
from .layout import is_pow2

__all__ = ["FIXED", "VARIANT_OPTIONS", "at_user_line", "check_options", "check_variant_options",
           "fixed_error"]

#: the attributes of a ``Kernel`` set once, in its constructor (``Kernel.with_options`` sets
#: them on its new kernel before returning it)
FIXED = frozenset({"fn", "params", "num_warps", "num_stages", "min_blocks_per_sm",
                   "unchecked", "interpret", "_fn", "_roles", "_source", "__wrapped__"})


def fixed_error(kernel, name: str) -> FixedAttributeError:
    """The refusal of an assignment to (or a deletion of) fixed attribute ``name`` of
    ``kernel``: what to do instead, at the user's line."""
    qual = kernel.__dict__.get("__qualname__", "?")
    if name in ("num_warps", "num_stages", "min_blocks_per_sm"):
        how = f"kernel.with_options({name}=...) makes a kernel with another {name}"
    elif name == "unchecked":
        how = "decorate the function again, numba_tile.jit(unchecked=...)(kernel.fn)"
    elif name == "interpret":
        how = ("decorate the function again, numba_tile.jit(interpret=...)(kernel.fn), or pass "
               "interpret=True / False to a launch")
    else:
        how = "decorate another function with numba_tile.jit for another kernel"
    return at_user_line(
        FixedAttributeError,
        f"kernel '{qual}': '{name}' is fixed when the kernel is made (its compiled code, "
        f"checks and launch plans depend on it) and cannot be changed; {how}")


def at_user_line(cls, message: str):
    """An error of class ``cls`` (a TileError) pointing at the user's line."""
    from .runtime.call_site import user_call_site
    site = user_call_site() or (None, None)
    return cls(message, filename=site[0], lineno=site[1])


def _arg_error(message: str) -> TileArgumentError:
    return at_user_line(TileArgumentError, message)


#: the options ``Kernel.with_options`` changes (the others are the function's: decorate again)
VARIANT_OPTIONS = ("num_warps", "num_stages", "min_blocks_per_sm")


def check_variant_options(kernel_name: str, options: dict) -> None:
    """Refuse an option ``Kernel.with_options`` does not take, naming the kernel, the option and
    the options it takes (``unchecked`` and ``interpret`` say how to get them instead).

    Raises:
        TileArgumentError: at the user's line.
    """
    for name in options:
        if name in VARIANT_OPTIONS:
            continue
        how = ""
        if name in ("unchecked", "interpret"):
            how = (f"; for another {name}=, decorate the function again: "
                   f"numba_tile.jit({name}=...)(kernel.fn)")
        raise _arg_error(f"kernel '{kernel_name}': with_options() has no option "
                         f"{shown(name)}: it takes {', '.join(VARIANT_OPTIONS[:-1])} and "
                         f"{VARIANT_OPTIONS[-1]}{how}")


def check_options(num_warps, interpret, unchecked, min_blocks_per_sm, num_stages=1, *,
                  where: str = "numba_tile.jit") -> None:
    """The options of ``numba_tile.jit``, with exact types (a bool is an int to Python, not
    here).

    Args:
        where: what the message names first (``numba_tile.jit``, or ``kernel 'k':
            with_options()``).

    Raises:
        TileArgumentError: an option of the wrong type or out of range, at the user's line.
    """
    if type(num_stages) is not int or not 1 <= num_stages <= 8:
        raise _arg_error(f"{where}: num_stages: expected an int from 1 to 8, got "
                         f"{shown(num_stages, with_type=True, qualified=False)}")
    if type(num_warps) is not int or not (is_pow2(num_warps) and num_warps <= 32):
        raise _arg_error(f"{where}: num_warps: expected a power of two from 1 to 32 (an "
                         f"int), got {shown(num_warps, with_type=True, qualified=False)}")
    if min_blocks_per_sm is not None and (type(min_blocks_per_sm) is not int
                                          or not 1 <= min_blocks_per_sm <= 32):
        raise _arg_error(f"{where}: min_blocks_per_sm: expected an int from 1 to 32 or "
                         f"None, got {shown(min_blocks_per_sm, with_type=True, qualified=False)}")
    if interpret is not True and interpret is not False:
        raise _arg_error(f"{where}: interpret: expected True or False, got "
                         f"{shown(interpret, with_type=True, qualified=False)}")
    if unchecked is not True and unchecked is not False:
        raise _arg_error(f"{where}: unchecked: expected True or False, got "
                         f"{shown(unchecked, with_type=True, qualified=False)}; it turns "
                         f"numba_tile's checks off, so only the bool True asks for that")
