"""Calls numba-cuda implements with CUDA C++ linked at load time: refused on both paths.

numba-cuda implements float16 and bfloat16 scalar math (``math.exp(h)``, ``math.sqrt(h)``,
``cuda.fp16.hexp(h)``, bfloat16 arithmetic) and FP8 conversions as calls into CUDA C++
(``cuda_fp16.h``, ``cuda_bf16.h``...) that it compiles and links when it loads a module.
numba_tile assembles the PTX its compiler writes and links nothing else, so a kernel making
such a call would fail at its first launch (an undefined reference), and only on a GPU.
:func:`linked_call` tells such a call from its typing (the implementation Numba chose lives
in one of numba-cuda's linked-code modules); the typed IR's builder refuses it on both paths
(``interpreter/typed_ir.py``), and ``lowering/linked.py`` refuses any other lowering that
asks numba-cuda to link code. float16 scalar arithmetic and comparisons need no linking:
numba_tile lowers them itself (``lowering/scalars.py``).
"""

from __future__ import annotations

from numba.cuda import types

__all__ = ["LINKED_MODULES", "linked_call", "refusal"]

#: numba-cuda's modules whose implementations call linked CUDA C++
LINKED_MODULES = ("numba.cuda.fp16", "numba.cuda.bf16", "numba.cuda._internal.")


def _linked_module(obj) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return any(module == m or module.startswith(m) for m in LINKED_MODULES)


def linked_call(fnty, sig, overload=None) -> str | None:
    """The name of the function a call of function type ``fnty`` typed as ``sig`` reaches,
    if numba-cuda implements it with linked CUDA C++, else None. ``overload`` is the
    ``(dispatcher, compile result)`` of the ``@overload`` Numba chose, if any."""
    if not isinstance(fnty, types.Function):
        return None
    key = fnty.typing_key
    name = getattr(key, "__name__", None) or str(key)
    if _linked_module(key):                 # cuda.fp16.hexp(h), cuda.bf16 functions
        return name
    if overload is not None:
        disp = overload[0]
        if _linked_module(getattr(disp, "py_func", None)):   # math.exp(h): fp16's @overload
            args = ", ".join(str(t) for t in sig.args) if sig is not None else ""
            return f"{getattr(key, '__module__', '') or ''}.{name}({args})".lstrip(".")
    return None


def refusal(what: str) -> str:
    """The message of a refused linked-code call ``what``."""
    return (f"{what} is one numba-cuda implements by linking CUDA C++ into the module at load "
            f"time, and numba_tile links only the PTX it compiles: for a float16 or bfloat16 "
            f"scalar, compute in float32 (np.float32(x), then convert back) or use numba_tile's "
            f"op on the scalar or a tile (nt.exp(x), nt.sqrt(x)...)")
