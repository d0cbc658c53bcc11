"""Variables read where no assignment may have reached them: what both backends give them.

Python raises ``UnboundLocalError`` for a variable read before any assignment; Numba gives
it the zero value of its type (``lowering.py``: "Numba does not raise an UnboundLocalError
for undefined variables. The variable is set to zero."). The case arises in every kernel
that reads, after a loop, a variable the loop assigns, on a block where the loop ran zero
times: ``for idx in tiles(z): ...`` then ``store(z, t, idx)`` with more blocks than tiles.

numba_tile keeps Numba's rule where the zero value means the same on both backends, and the
interpreter reproduces it (``interpreter/typed_ir.null_value``): a number is 0 (``False``),
a tile is all zeros (a masked tile has no valid element), a tile index of ``tiles()`` or
``strips()`` is not valid (a load at it gives padding, a store writes nothing, ``idx[d]`` is
-1), a tuple of those is a tuple of zeros. A read of any other type (a tensor or partition
alias, an iterator, a function) on such a path is refused while compiling, on both paths,
naming the variable and the line that reads it: :class:`~numba_tile.errors.TileTypingError`.
"""

from __future__ import annotations

from numba.cuda import types
from numba.cuda.core import ir

from ..errors import TileTypingError
from .types import PartitionIndexType, TileType

__all__ = ["has_zero_value", "check_unassigned_reads"]


def has_zero_value(ty) -> bool:
    """Whether a variable of type ``ty`` read before any assignment has a zero value both
    backends agree on (see the module docstring)."""
    if isinstance(ty, (types.Number, types.Boolean, TileType, PartitionIndexType,
                       types.NoneType, types.Omitted)):
        return True
    if isinstance(ty, types.BaseTuple):
        return all(has_zero_value(t) for t in ty.types)
    return False


def _user_name(name: str) -> str:
    """``acc.2`` -> ``acc`` (Numba's SSA versions of a variable)."""
    return name.split(".")[0]


def check_unassigned_reads(func_ir, typemap, kernel: str) -> None:
    """Refuse a read, on a path where no assignment reached it, of a variable whose type has
    no zero value both backends agree on.

    In Numba's SSA form such a read goes through a phi node with an undefined incoming value
    (or an ``undef``/``null`` expression); only phi nodes whose value some statement uses
    (directly or through other phi nodes) count.

    Raises:
        TileTypingError: naming the variable, its type and the line of the read.
    """
    phis, uses = {}, {}
    for block in func_ir.blocks.values():
        for inst in block.body:
            if isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr) \
                    and inst.value.op == "phi":
                phis[inst.target.name] = inst
                continue
            if isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr) \
                    and inst.value.op in ("undef", "null"):
                _check(inst.target.name, typemap, inst.loc, kernel)
            target = inst.target.name if isinstance(inst, ir.Assign) else None
            for v in inst.list_vars():
                if v.name != target:
                    uses.setdefault(v.name, inst.loc)
    live = [name for name in phis if name in uses]
    seen = set(live)
    while live:
        name = live.pop()
        for v in phis[name].value.incoming_values:
            if isinstance(v, ir.Var) and v.name in phis and v.name not in seen:
                seen.add(v.name)
                uses.setdefault(v.name, uses[name])
                live.append(v.name)
    for name in seen:
        phi = phis[name].value
        if any(not isinstance(v, ir.Var) for v in phi.incoming_values):
            _check(name, typemap, uses.get(name, phis[name].loc), kernel)


def _check(name, typemap, loc, kernel):
    ty = typemap.get(name)
    if ty is None or has_zero_value(ty):
        return
    shown = _user_name(name)
    raise TileTypingError(
        f"kernel '{kernel}': variable '{shown}' ({ty}) may be read where no assignment "
        f"reached it (after a loop that ran zero times, or a branch that did not assign "
        f"it); Numba would give it a zero value, which means nothing for this type, and the "
        f"interpreter could not agree with the GPU on it. Assign '{shown}' on every path "
        f"before the read",
        filename=getattr(loc, "filename", None), lineno=getattr(loc, "line", None))
