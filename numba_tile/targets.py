"""The compute capabilities a kernel compiles for, as :meth:`Kernel.ptx` and
:meth:`Kernel.compiled` take them (``cc=(major, minor)``).

A target is a tuple of two ints that the CUDA toolkit compiles for: numba-cuda maps any other
onto the nearest one it knows (``nvrtc.find_closest_arch``), so ``cc=(9, 7)`` produced sm_90
code while numba_tile's typing and shared-memory limits took it for 9.7, and a malformed one
(``(9,)``, ``"9.0"``) failed deep in numba-cuda with a bare TypeError. A target below 8.0 is
refused by the compile (``compiler.MIN_CC``, a TileTypingError naming what numba_tile needs).
"""

from __future__ import annotations

from .compiler import MIN_CC
from .errors import TileArgumentError, shown
from .options import at_user_line

__all__ = ["check_target", "known_targets"]

_UNKNOWN = object()
_TARGETS = _UNKNOWN


def known_targets() -> tuple | None:
    """The compute capabilities numba-cuda compiles for with this CUDA toolkit (NVRTC's list,
    onto which numba-cuda maps a target), sorted; None when the toolkit cannot say."""
    global _TARGETS
    if _TARGETS is _UNKNOWN:
        try:
            from numba.cuda.cudadrv import nvrtc
            _TARGETS = tuple(sorted(tuple(int(v) for v in cc)
                                    for cc in nvrtc.get_supported_ccs()))
        except Exception:  # noqa: BLE001 - no toolkit: the compile reports it
            _TARGETS = None
    return _TARGETS


def check_target(kernel_name: str, cc) -> tuple:
    """``cc`` given to kernel ``kernel_name``'s ``ptx()`` or ``compiled()``, checked.

    Args:
        kernel_name: the kernel's qualified name, for the message.
        cc: the target asked for.

    Returns:
        ``cc``: a tuple of two ints, one the CUDA toolkit compiles for (or below 8.0: the
        compile refuses it).

    Raises:
        TileArgumentError: anything else, naming the kernel, at the user's line.
    """
    if type(cc) is not tuple or len(cc) != 2 or any(type(v) is not int for v in cc) \
            or cc[0] < 0 or cc[1] < 0:
        raise at_user_line(
            TileArgumentError,
            f"kernel '{kernel_name}': cc: expected a compute capability (major, minor), a "
            f"tuple of two ints such as (9, 0), got {shown(cc, with_type=True, qualified=False)}")
    known = known_targets()
    if cc >= MIN_CC and known and cc not in known:
        targets = ", ".join(f"{a}.{b}" for a, b in known if (a, b) >= MIN_CC)
        raise at_user_line(
            TileArgumentError,
            f"kernel '{kernel_name}': cc: {cc[0]}.{cc[1]} is not a compute capability this CUDA "
            f"toolkit compiles for; numba_tile targets {targets}")
    return cc
