"""The uses of a load's tile that a slot in shared memory can answer: as operand ``a`` or
``b`` of matrix products, directly or through a ``reshape`` of an N-D tile to its two axes
(:func:`plane_axes`) and a ``transpose``; and the facts of a load call those questions need
(its bound arguments, a zero padding). Asked by the pipelining analysis (``pipeline.py``) and
the placement of loop-invariant product operands (``resident.py``). Pure questions of the
IR, except :func:`as_matmul_call`, which rewrites a bare ``x @ y`` as the same product
called by name.
"""

from __future__ import annotations

import operator as _operator

from numba.cuda import types
from numba.cuda.core import ir

from .. import dtypes
from .loop_ir import _op
from .types import TileType


#: dtypes a staged load reads back into registers (16-byte copies of any of them)
REGISTER_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64,
                   dtypes.int8, dtypes.int32, dtypes.int64)
#: dtypes whose staged tiles a product reads from the slots
PRODUCT_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float8_e4m3fn, dtypes.float8_e5m2)


def is_transpose(typemap, expr) -> bool:
    """``transpose(x)`` or ``permute(x, (1, 0))`` of a 2-D tile."""
    d = _op(typemap, expr)
    if d is None or expr.kws or expr.vararg:
        return False
    if d.name in ("transpose", "_attr_T") and len(expr.args) == 1:
        return isinstance(typemap.get(expr.args[0].name), TileType)
    if d.name == "permute" and len(expr.args) == 2:
        dims = typemap.get(expr.args[1].name)
        lit = getattr(dims, "literal_value", None) if dims is not None else None
        if lit is None and isinstance(dims, types.BaseTuple):
            lit = tuple(getattr(t, "literal_value", None) for t in dims)
        return lit is not None and tuple(lit) == (1, 0)
    return False


def plane_axes(shape):
    """The two axes a staged tile of ``shape`` spans, ``(p, last)``: every other axis has
    extent 1 (the copies walk the plane of those axes at fixed coordinates on the others,
    ``lowering/pipeline.PlaneView``); ``p`` the one non-unit axis before the last, or the one
    before the last where there is none. None for a tile with two or more non-unit axes before
    its last."""
    n = len(shape)
    if n < 2:
        return None
    lead = [d for d in range(n - 1) if shape[d] != 1]
    if len(lead) > 1:
        return None
    return (lead[0] if lead else n - 2, n - 1)


def is_squeeze(typemap, expr) -> bool:
    """``reshape(x, shape)`` of an N-D tile with extent 1 on all but two axes to those two."""
    d = _op(typemap, expr)
    if d is None or d.name != "reshape" or expr.kws or expr.vararg or len(expr.args) != 2:
        return False
    src = typemap.get(expr.args[0].name)
    if not (isinstance(src, TileType) and src.ndim > 2):
        return False
    plane = plane_axes(src.shape)
    return plane is not None and _reshaped_to(typemap, expr) == tuple(src.shape[a]
                                                                      for a in plane)


def _reshaped_to(typemap, expr):
    shape = typemap.get(expr.args[1].name)
    if isinstance(shape, types.BaseTuple):
        lit = tuple(getattr(t, "literal_value", None) for t in shape)
    else:
        lit = getattr(shape, "literal_value", None)
        lit = tuple(lit) if isinstance(lit, tuple) else None
    return lit


def product_uses(st, label, typemap, calltypes, uses, same_block=True):
    """``[(product expr, operand index, via), ...]`` when every use of the load's tile is as
    operand a or b of an mma/matmul/@ in the same block, directly or through statements the
    slot already answers, whose every use is such a use too: a ``reshape`` of an N-D tile
    with extent 1 on all but two axes to those two, then a ``transpose`` (as operand b only:
    the slot then holds b as N rows of K). One tile may feed several products (an attention
    backward's query tile: ``k q^T`` and ``ds^T q``): each reads the slot, which no copy
    overwrites before the iteration's last product (``lowering/pipeline.py``). ``via``: a
    product's path of those statements (empty: none). None where any use is no such use.
    16-bit operands either way; FP8 ones as a, or as a transposed b (FP8 ``wgmma`` reads both
    operands K-major). ``same_block=False``: the uses may lie in any block (a tile made
    before a loop and read by its products)."""
    out = []

    def walk(name, via, squeezed, transposed) -> bool:
        users = uses.get(name, [])
        if not users or (same_block and any(lb != label for lb, _ in users)):
            return False
        seen = set()
        for _lb, user in users:
            if id(user) in seen:
                continue
            seen.add(id(user))
            if not (isinstance(user, ir.Assign) and isinstance(user.value, ir.Expr)):
                return False
            value = user.value
            if value.op == "call" and value.args and value.args[0].name == name:
                if not (squeezed or transposed) and is_squeeze(typemap, value):
                    if not walk(user.target.name, via + [user], True, False):
                        return False
                    continue
                if not transposed and is_transpose(typemap, value):
                    if not walk(user.target.name, via + [user], squeezed, True):
                        return False
                    continue
            pd = _op(typemap, value) if value.op == "call" else None
            if value.op == "binop" and value.fn is _operator.matmul:
                operands = [value.lhs, value.rhs]
            elif pd is not None and pd.name in ("mma", "matmul") and not value.vararg:
                operands = list(value.args[:2])
                # the accumulator (or any other argument) reads the tile's registers
                if any(v.name == name for v in value.args[2:]) or \
                        any(v.name == name for _k, v in value.kws):
                    return False
            else:
                return False
            hits = [i for i, v in enumerate(operands) if v.name == name]
            if len(hits) != 1 or value not in calltypes:
                return False
            if transposed and hits[0] != 1:
                return False
            dt = calltypes[value].args[0].dtype
            if dt not in PRODUCT_DTYPES:
                return False
            if dtypes.is_float8(dt) and (hits[0] == 1) != transposed:
                return False
            out.append((value, hits[0], via))
        return True

    return out if walk(st.target.name, [], False, False) and out else None


def as_matmul_call(binop, block, typemap, calltypes, typingctx):
    """Replace the binop ``x @ y`` (its statement in ``block``) by the call ``matmul(x, y)``,
    typed; returns the call, or None (no typing context, or it does not type: the caller then
    leaves the load unstaged for the product, reading it back into registers)."""
    from .. import language
    if typingctx is None:
        return None
    stmt = next((st for st in block.body if isinstance(st, ir.Assign) and st.value is binop),
                None)
    if stmt is None:
        return None
    fnty = typingctx.resolve_value_type(language.matmul)
    sig = fnty.get_call_type(typingctx, (typemap[binop.lhs.name], typemap[binop.rhs.name]), {})
    if sig is None or sig.return_type != typemap[stmt.target.name]:
        return None
    fn_var = block.scope.redefine("$matmul_fn", stmt.loc)
    call = ir.Expr.call(fn_var, [binop.lhs, binop.rhs], (), stmt.loc)
    typemap[fn_var.name] = fnty
    dict.__setitem__(calltypes, call, sig)
    i = block.body.index(stmt)
    block.body.insert(i, ir.Assign(ir.Global("matmul", language.matmul, stmt.loc), fn_var,
                                   stmt.loc))
    stmt.value = call            # the same statement: the caller's use lists still find it
    return call


def zero_padding(pty):
    lit = getattr(pty, "literal_value", None) if isinstance(pty, types.Literal) else None
    return lit is not None and not isinstance(lit, bool) and lit == 0


def bound_args(expr, index_name: str = "index"):
    """``(tensor, index)`` variables of a ``load`` call (``load_at``: ``index_name`` is
    ``"offset"``), or None (keywords other than ``padding``/``shape``/the index, or star
    arguments, are not analysed)."""
    if expr.vararg or expr.varkwarg:
        return None
    names = ["x", index_name, "shape", "padding"]
    bound = dict(zip(names, expr.args))
    for k, v in expr.kws:
        if k not in names or k in bound:
            return None
        bound[k] = v
    if "x" not in bound or index_name not in bound:
        return None
    return bound["x"], bound[index_name]
