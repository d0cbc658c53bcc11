"""numba-cuda operations implemented as CUDA C++ linked at load time, refused in numba_tile's code.

numba-cuda implements some operations (float16 and bfloat16 scalar math such as
``math.exp(h)``, FP8 conversions, functions declared with ``cuda.declare_device(...,
link=...)``) as calls into CUDA C++ that it compiles and links when it loads the module.
numba_tile assembles and loads the PTX its compiler writes and links nothing else, so such a
call would only fail at load time (an undefined reference, at the first launch on a GPU).
:func:`install` makes the lowering of such an operation in numba_tile's code (a kernel, or the
device functions it calls: ``compiler_context.own_code``) raise a :class:`TileTypingError`
naming the C++ function, at the statement that uses it, while the kernel compiles: before
any GPU work, and the same on a machine without a GPU. numba_tile's own float16 scalar
arithmetic, comparisons and its math functions' float16 forms need no linking
(``lowering/scalars.py``).
"""

from __future__ import annotations

import re
import sys

__all__ = ["install", "cxx_name"]

_OPERATORS = {"pl": "operator+", "mi": "operator-", "ml": "operator*", "dv": "operator/",
              "ng": "operator- (negation)", "ps": "operator+ (unary)", "eq": "operator==",
              "ne": "operator!=", "lt": "operator<", "le": "operator<=", "gt": "operator>",
              "ge": "operator>=", "pL": "operator+=", "mI": "operator-=", "mL": "operator*=",
              "dV": "operator/="}


def cxx_name(symbol: str) -> str:
    """A readable name for the C++ function behind numba-cuda's shim ``symbol``
    (``_ZL4hexp6__half_nbst`` -> ``hexp``, ``_ZplRK6__halfS1__nbst`` -> ``operator+``)."""
    m = re.match(r"_ZN(\d+)(\w+)", symbol)             # _ZN13__nv_bfloat16C1Ef: a constructor
    if m:
        n = int(m.group(1))
        return m.group(2)[:n] + (" constructor" if m.group(2)[n:].startswith("C1") else "")
    m = re.match(r"_ZL?(\d+)(\w+)", symbol)
    if m:
        return m.group(2)[:int(m.group(1))]
    m = re.match(r"_Z([a-zA-Z]{2})", symbol)
    if m and m.group(1) in _OPERATORS:
        return _OPERATORS[m.group(1)]
    return symbol


def _caller_symbol() -> str | None:
    """The shim symbol of the numba-cuda lowering that is adding a linked file: its
    implementation's enclosing function is named ``_lower_<symbol>``."""
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            break
        name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
        m = re.match(r"_lower_(\w+?)(?:_nbst)?\.", name)
        if m:
            return m.group(1)
        frame = frame.f_back
    return None


def install() -> None:
    """Refuse linked code in numba_tile's code (module docstring); idempotent."""
    from numba.cuda.codegen import CUDACodeLibrary
    original = CUDACodeLibrary.add_linking_file
    if getattr(original, "_numba_tile_refuses", False):
        return

    def add_linking_file(self, path_or_obj):
        from ..compiler_context import in_own_code
        if in_own_code():
            from ..errors import TileTypingError
            from ..typing.linked import refusal
            symbol = _caller_symbol()
            what = (f"CUDA C++ '{cxx_name(symbol)}' ({symbol})" if symbol
                    else f"linked code ({path_or_obj!r})")
            raise TileTypingError(refusal(f"this operation ({what})"))
        return original(self, path_or_obj)

    add_linking_file._numba_tile_refuses = True
    CUDACodeLibrary.add_linking_file = add_linking_file
