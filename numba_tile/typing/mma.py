"""Typing rules of the matrix products: ``mma(a, b, acc)``, ``matmul(a, b)`` and ``a @ b``.

The result is a tile in the accumulator layout (:class:`~numba_tile.layout.MmaLayout`),
whatever layouts the operands come in. The dtype table and precision rules are in
:func:`numba_tile.language.mma`'s docstring; :func:`plan` is the one place they are
decided, for the typing, the lowering and the interpreter alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from numba.cuda import types

from .. import compiler_context, dtypes
from .._registry import typing_rule
from ..errors import TileTypingError
from ..layout import MmaLayout
from .common import REGISTER_ELEMS_PER_THREAD, dtype_arg, fail, is_omitted
from .pipeline import ws_fits
from .types import TileType

#: smallest M, N, K (the issue's contract; the m16n8 atom needs M >= 16, N >= 8)
MIN_DIM = 16

PRECISIONS = ("ieee", "tf32")


@dataclass(frozen=True)
class MmaPlan:
    """How one matrix product is computed.

    Attributes:
        in_dtype: the dtype of ``a`` and ``b``.
        acc_dtype: the accumulator's (and the result's) dtype.
        kind: ``"f16"``, ``"bf16"``, ``"f16acc"`` (float16 accumulation), ``"s8"``,
            ``"e4m3"``, ``"e5m2"`` (FP8), ``"tf32"`` (tensor-core instructions) or ``"fma"``
            (IEEE fused multiply-adds).
        k_step: K of one instruction (16, 32 or 8; 1 for ``"fma"``).
    """

    in_dtype: object
    acc_dtype: object
    kind: str
    k_step: int

    @property
    def tensor_cores(self) -> bool:
        return self.kind != "fma"


def precision_value(opname, precision) -> str:
    if is_omitted(precision):
        return "ieee"
    if isinstance(precision, types.StringLiteral) and precision.literal_value in PRECISIONS:
        return precision.literal_value
    got = (repr(precision.literal_value) if isinstance(precision, types.StringLiteral)
           else f"a run-time value of type {precision}")
    raise fail(opname, "precision", 'None, "ieee" or "tf32", written in the kernel', got)


def plan(opname: str, in_dt, acc_dt, precision: str) -> MmaPlan:
    """The computation for inputs of ``in_dt`` accumulated in ``acc_dt``.

    Raises:
        TileTypingError: a pair the dtype table does not list, or ``"tf32"`` for inputs
            that are not float32.
    """
    if precision == "tf32" and in_dt != dtypes.float32:
        raise fail(opname, "precision", '"tf32" only with float32 inputs',
                   f'"tf32" with {dtypes.name(in_dt)} inputs')
    table = {
        (dtypes.float16, dtypes.float32): ("f16", 16),
        (dtypes.float16, dtypes.float16): ("f16acc", 16),
        (dtypes.bfloat16, dtypes.float32): ("bf16", 16),
        (dtypes.int8, dtypes.int32): ("s8", 32),
        (dtypes.float8_e4m3fn, dtypes.float32): ("e4m3", 32),
        (dtypes.float8_e5m2, dtypes.float32): ("e5m2", 32),
        (dtypes.float32, dtypes.float32): ("tf32", 8) if precision == "tf32" else ("fma", 1),
        (dtypes.float64, dtypes.float64): ("fma", 1),
    }
    hit = table.get((in_dt, acc_dt))
    if hit is None:
        allowed = sorted({dtypes.name(a) for (i, a) in table if i == in_dt})
        if not allowed:
            raise fail(opname, "a", "float16, bfloat16, float8_e4m3fn, float8_e5m2, int8, "
                       "float32 or float64 operands", dtypes.name(in_dt))
        raise fail(opname, "acc", f"an accumulator of {' or '.join(allowed)} for "
                   f"{dtypes.name(in_dt)} inputs", dtypes.name(acc_dt))
    if hit[0] in FP8_KINDS:
        from .common import FLOAT8_MIN_CC, target_cc
        cc = target_cc()
        if cc < FLOAT8_MIN_CC:
            raise TileTypingError(
                f"{opname}(): a product of {dtypes.name(in_dt)} tiles needs sm_89 or later "
                f"(mma.sync ... .{hit[0]}, wgmma ... k32 on sm_90a); the kernel is compiled "
                f"for sm_{cc[0]}{cc[1]}. Convert the operands to float16 or bfloat16 with "
                f"astype on the host (FP8 conversions need sm_89 too), or run on an sm_89+ GPU")
    return MmaPlan(in_dt, acc_dt, *hit)


#: the FP8 products (``mma.sync ... m16n8k32 .e4m3/.e5m2``, sm_89; ``wgmma ... k32``, sm_90a)
FP8_KINDS = ("e4m3", "e5m2")


def default_acc_dtype(in_dt):
    if dtypes.is_half(in_dt) or dtypes.is_float8(in_dt):
        return dtypes.float32
    if in_dt == dtypes.int8:
        return dtypes.int32
    return in_dt


def check_operands(opname, a, b):
    """``(M, K, N)`` of two operand tiles.

    Raises:
        TileTypingError: not 2-D tiles of one dtype with matching K, or a dimension below 16.
    """
    for arg, t in (("a", a), ("b", b)):
        if not isinstance(t, TileType):
            raise fail(opname, arg, "a tile", t)
        if t.ndim != 2:
            raise fail(opname, arg, "a 2-D tile (batched products: loop over the batch)",
                       f"a tile of shape {t.shape}")
    if a.dtype != b.dtype:
        raise fail(opname, "b", f"a tile of a's dtype {dtypes.name(a.dtype)} (cast one "
                   f"operand with astype)", dtypes.name(b.dtype))
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise fail(opname, "b", f"a ({k}, N) tile for a of shape {a.shape}",
                   f"a tile of shape {b.shape}")
    lo_k = 32 if dtypes.itemsize(a.dtype) == 1 else MIN_DIM
    for what, v, lo in (("M", m, MIN_DIM), ("K", k, lo_k), ("N", n, MIN_DIM)):
        if v < lo:
            raise fail(opname, "a" if what != "N" else "b",
                       f"{what} of at least {lo}", f"{what} = {v} (shapes {a.shape} @ {b.shape})")
    return m, k, n


#: registers a ``wgmma`` needs beside its accumulator (descriptors, addresses, the loop):
#: ptxas asks for 154 for an ``n = 256`` instruction (128 accumulator registers), C7602
WGMMA_EXTRA_REGISTERS = 32


def register_cap(threads: int, min_blocks: int) -> int:
    """The registers a thread may have under the launch bounds ``(threads, min_blocks)``:
    the 65,536 of an SM shared by ``threads * min_blocks`` threads, rounded down to ptxas's
    allocation unit of 8, at most 255."""
    return min(255, 65536 // (threads * max(1, min_blocks)) // 8 * 8)


def wgmma_fits_registers(n: int, slabs: int = 1) -> bool:
    """Whether ``slabs`` ``wgmma`` slabs of ``n`` columns (``slabs * n / 2`` float32
    accumulator registers a thread) assemble within the kernel's register cap: the launch bounds' (``num_warps`` and
    ``min_blocks_per_sm``), or, where a producer warpgroup may join the block
    (``typing/pipeline.ws_fits``), the cap with its 128 threads counted (ptxas assembles the
    consumers' code under it). Past the cap ptxas refuses the instruction (C7602: a 256-wide
    tile at 16 warps, or at 8 warps with ``min_blocks_per_sm=2``); the product then lowers
    to ``mma.sync``, which spills instead."""
    ctx = compiler_context.current()
    blocks = getattr(ctx, "min_blocks_per_sm", None) or 1
    threads = ctx.num_threads + (128 if ws_fits() else 0)
    return slabs * n // 2 + WGMMA_EXTRA_REGISTERS <= register_cap(threads, blocks)


def use_wgmma(kind: str, m: int, k: int, n: int, a=None) -> bool:
    """Whether an ``(m, k) @ (k, n)`` product of ``kind`` lowers to Hopper's ``wgmma`` here
    (``lowering/wgmma.py``): the compile context's ``mma_impl`` is ``"wgmma"`` (the default;
    ``NUMBA_TILE_MMA=sync`` says no), on cc 9.0, for float16, bfloat16 and FP8 inputs with a
    float32 accumulator, ``m`` a multiple of ``16 * num_warps`` with whole warpgroups (each
    warpgroup multiplies ``m / (4 num_warps)`` slabs of 64 rows: ``layout.MmaLayout``),
    ``k`` whole 64-byte swizzle atoms (a multiple of 32 for 16-bit inputs, of 64 for FP8;
    operands whose rows are whole 128-byte atoms take the 128-byte swizzle, others the 64-byte
    one: ``lowering/wgmma.atom_width``), ``n`` a multiple of 32 and at most 256 (one
    instruction), and the instruction's registers
    within the block's cap (:func:`wgmma_fits_registers`). Operands come from registers or
    from a pipelined load's slots (``num_stages > 1``); ``a`` (the operand's tile type) in an
    accumulator's layout is read from registers as it is (``lowering/wgmma.registers_a``),
    which the note says."""
    why = wgmma_refusal(kind, m, k, n)
    from .._registry import _typing_loc
    in_regs = (a is not None and isinstance(a.layout, MmaLayout) and a.layout.wgmma
               and tuple(a.shape) == (m, k) and not a.masked
               and a.dtype in (dtypes.float16, dtypes.bfloat16))
    compiler_context.note("mma", _typing_loc(),
                          f"wgmma m64n{n}k{32 if kind in FP8_KINDS else 16}"
                          f"{', operand a from registers' if in_regs else ''}" if why is None
                          else f"mma.sync: {why}")
    if why is None:
        compiler_context.current().uses_wgmma = True  # lowering/memory.own_tile_index
    return why is None


def wgmma_refusal(kind: str, m: int, k: int, n: int) -> str | None:
    """Why an ``(m, k) @ (k, n)`` product of ``kind`` does not lower to ``wgmma`` here (the
    first rule of :func:`use_wgmma` it breaks), or None where it does."""
    ctx = compiler_context.current()
    nw = ctx.num_warps
    per_atom = 64 if kind in FP8_KINDS else 32         # 64 bytes of K
    checks = (
        (ctx.mma_impl == "wgmma", "NUMBA_TILE_MMA=sync"),
        (tuple(ctx.cc[:2]) == (9, 0), f"wgmma needs compute capability 9.0, compiling for "
                                      f"{ctx.cc[0]}.{ctx.cc[1]}"),
        (kind in ("f16", "bf16") + FP8_KINDS, f"{kind} inputs (wgmma here: float16, bfloat16 "
                                              f"and FP8 with a float32 accumulator)"),
        (nw % 4 == 0, f"num_warps={nw} is not whole warpgroups (a multiple of 4)"),
        (m % (16 * nw) == 0, f"M = {m} is not a multiple of 16 * num_warps = {16 * nw} "
                             f"(64-row slabs, the same number for every warpgroup)"),
        (k % per_atom == 0, f"K = {k} is not a multiple of {per_atom} (whole 64-byte "
                            f"swizzle atoms)"),
        (n % 32 == 0 and n <= 256, f"N = {n} is not a multiple of 32 up to 256"),
        (wgmma_fits_registers(n, max(1, m // (16 * nw))),
         f"its {max(1, m // (16 * nw)) * n // 2} accumulator registers a thread and the "
         f"instruction's pass the block's register cap"),
    )
    return next((why for ok, why in checks if not ok), None)


def result_type(opname, dt, shape, masked=False, wgmma=False) -> TileType:
    ctx = compiler_context.current()
    layout = MmaLayout(tuple(shape), ctx.num_threads, wgmma)
    if layout.elems_per_thread > REGISTER_ELEMS_PER_THREAD:
        raise TileTypingError(
            f"{opname}(): a {tuple(shape)} accumulator over {ctx.num_threads} threads puts "
            f"{layout.elems_per_thread} elements in each thread's registers, more than "
            f"{REGISTER_ELEMS_PER_THREAD}: use a smaller tile or more warps (num_warps)")
    return TileType(dt, tuple(shape), layout, masked)


@typing_rule("mma")
def type_mma(a, b, acc, precision):
    m, _k, n = check_operands("mma", a, b)
    if not isinstance(acc, TileType):
        raise fail("mma", "acc", "a tile (e.g. zeros((M, N), float32))", acc)
    if acc.shape != (m, n):
        raise fail("mma", "acc", f"a tile of shape {(m, n)} for {a.shape} @ {b.shape}",
                   f"a tile of shape {acc.shape}")
    p = plan("mma", a.dtype, acc.dtype, precision_value("mma", precision))
    return result_type("mma", acc.dtype, (m, n), acc.masked,
                       use_wgmma(p.kind, m, a.shape[1], n, a))


@typing_rule("_wgmma_wait")
def type_wgmma_wait(acc):
    if not isinstance(acc, TileType):
        raise fail("_wgmma_wait", "acc", "a tile", acc)
    return acc


@typing_rule("_ws_post")
def type_ws_post(n, z):
    from .types import PartitionType
    if not isinstance(n, types.Integer):
        raise fail("_ws_post", "n", "an integer", n)
    if not (is_omitted(z) or isinstance(z, PartitionType)):
        raise fail("_ws_post", "z", "a partition", z)
    return types.none


@typing_rule("_wgmma_drain")
def type_wgmma_drain(acc, k, n):
    if not isinstance(acc, TileType):
        raise fail("_wgmma_drain", "acc", "a tile", acc)
    for name, v in (("k", k), ("n", n)):
        if not isinstance(v, types.Integer):
            raise fail("_wgmma_drain", name, "an integer", v)
    return acc


@typing_rule("matmul")
def type_matmul(a, b, out_dtype, precision):
    m, _k, n = check_operands("matmul", a, b)
    dt = default_acc_dtype(a.dtype) if is_omitted(out_dtype) else \
        dtype_arg(out_dtype, "matmul", "out_dtype")
    p = plan("matmul", a.dtype, dt, precision_value("matmul", precision))
    return result_type("matmul", dt, (m, n), False, use_wgmma(p.kind, m, a.shape[1], n, a))


@typing_rule("matmul_operator")
def type_matmul_operator(a, b):
    if not (isinstance(a, TileType) or isinstance(b, TileType)):
        return None
    m, _k, n = check_operands("@", a, b)
    dt = default_acc_dtype(a.dtype)
    p = plan("@", a.dtype, dt, "ieee")
    return result_type("@", dt, (m, n), False, use_wgmma(p.kind, m, a.shape[1], n, a))


def _defs_and_uses(func_ir):
    """``(defs, uses)``: per variable name, the assignments to it and the statements reading
    it (an assignment does not read its own target)."""
    from numba.cuda.core import ir
    defs, uses = {}, {}
    for blk in func_ir.blocks.values():
        for st in blk.body:
            if isinstance(st, ir.Assign):
                defs.setdefault(st.target.name, []).append(st)
            for v in st.list_vars():
                if not (isinstance(st, ir.Assign) and v.name == st.target.name):
                    uses.setdefault(v.name, []).append(st)
    return defs, uses


def place_constant_tiles(func_ir, typemap, calltypes) -> int:
    """Create ``zeros``/``full`` tiles directly in the layout of the variable they flow into.

    ``acc = zeros((BM, BN), float32)`` before a K loop is typed in the blocked layout, and the
    loop's accumulator (``acc = mma(x, y, acc)``) in :class:`MmaLayout`: the assignment would
    convert the constant tile through shared memory (as much as the whole accumulator, which
    then bounds the kernel's occupancy). Likewise a loop's state made by ``full`` and updated
    from loaded data whose layout won the merge (``TileType.unify``). A constant tile holds the
    same value in every slot of any layout, so when every use of such a tile is an assignment
    or loop phi into a variable of the same tile type in another layout, the call is retyped
    to produce that layout and no conversion remains. Returns how many calls were retyped.
    """
    from numba.cuda.core import ir

    from .._registry import op_for_key
    defs, uses = _defs_and_uses(func_ir)
    count = 0
    for name, ds in defs.items():
        if len(ds) != 1:
            continue
        st = ds[0]
        expr = st.value
        if not (isinstance(expr, ir.Expr) and expr.op == "call"):
            continue
        d = op_for_key(getattr(typemap.get(expr.func.name), "typing_key", None))
        ty = typemap.get(name)
        if d is None or d.name not in ("zeros", "full") or not isinstance(ty, TileType):
            continue
        targets = set()
        for use in uses.get(name, []):
            if not isinstance(use, ir.Assign):
                break
            v = use.value
            if isinstance(v, ir.Var) or (isinstance(v, ir.Expr) and v.op == "phi"):
                targets.add(typemap.get(use.target.name))
            else:
                break
        else:
            if len(targets) == 1:
                (t,) = targets
                if (isinstance(t, TileType) and t.layout != ty.layout
                        and t.dtype == ty.dtype and t.shape == ty.shape
                        and t.masked == ty.masked):
                    typemap.pop(name)
                    typemap[name] = t
                    sig = calltypes[expr]
                    dict.__setitem__(calltypes, expr, sig.replace(return_type=t))
                    count += 1
    return count


def fuse_accumulating_products(func_ir, typemap, calltypes, typingctx) -> int:
    """Rewrite ``acc + a @ b`` (also ``acc += a @ b``, ``acc + matmul(a, b)``, in either order)
    as ``mma(a, b, acc)`` where the product's tile is used by that sum only and the product,
    the accumulator and the sum are tiles of one type: what the pipelining of a K loop
    (``typing/pipeline.py``: TMA, warp specialization) and the register budget ask for, and
    what Triton's ``acc += tl.dot(a, b)`` compiles to. ``mma`` adds the product into the
    accumulator inside its own accumulation, where the sum rounded the product first: the
    same value to rounding, on both paths (the rewrite runs before the interpreter's program
    is built). ``matmul`` with an ``out_dtype`` or ``precision`` argument is left as written.
    Returns how many sums were rewritten."""
    import operator

    from numba.cuda.core import ir

    from .. import language
    from .._registry import op_for_key
    defs, uses = _defs_and_uses(func_ir)

    def product_operands(name, block):
        """``(a, b, its statement)`` if ``name`` is a plain tile product defined once, in
        ``block``, and used once."""
        ds = defs.get(name, [])
        if len(ds) != 1 or len(uses.get(name, [])) != 1 or ds[0] not in block.body:
            return None
        expr = ds[0].value
        if not isinstance(expr, ir.Expr):
            return None
        if expr.op == "binop" and expr.fn is operator.matmul:
            return expr.lhs, expr.rhs, ds[0]
        if expr.op == "call" and len(expr.args) == 2 and not expr.kws and expr.vararg is None:
            d = op_for_key(getattr(typemap.get(expr.func.name), "typing_key", None))
            if d is not None and d.name == "matmul":
                return expr.args[0], expr.args[1], ds[0]
        return None

    count = 0
    fnty = None
    for blk in func_ir.blocks.values():
        for st in list(blk.body):
            if not (isinstance(st, ir.Assign) and isinstance(st.value, ir.Expr)
                    and st.value.op == "binop" and st.value.fn is operator.add):
                continue
            expr = st.value
            out = typemap.get(st.target.name)
            if not isinstance(out, TileType):
                continue
            for acc, prod in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
                found = product_operands(prod.name, blk)
                if found is None:
                    continue
                a, b, prod_st = found
                if not (typemap.get(acc.name) == out == typemap.get(prod.name)
                        and isinstance(typemap.get(a.name), TileType)
                        and isinstance(typemap.get(b.name), TileType)):
                    continue
                if blk.body.index(prod_st) > blk.body.index(st):
                    continue
                if fnty is None:
                    fnty = typingctx.resolve_value_type(language.mma)
                try:
                    sig = typingctx.resolve_function_type(
                        fnty, (typemap[a.name], typemap[b.name], out), {})
                except Exception:  # noqa: BLE001 - mma refuses these operands: leave the sum
                    sig = None
                if sig is None or sig.return_type != out:
                    continue
                callee = ir.Var(st.target.scope, f"$mma_fused.{count}", expr.loc)
                typemap[callee.name] = fnty
                call = ir.Expr.call(callee, [a, b, acc], (), expr.loc)
                dict.__setitem__(calltypes, call, sig)
                # ``acc += a @ b`` assigns a temporary, then copies it into ``acc``: the
                # product assigns ``acc`` itself (the form a pipelined K loop's drain asks)
                target = st.target
                copies = uses.get(target.name, [])
                if (len(copies) == 1 and copies[0] in blk.body
                        and isinstance(copies[0].value, ir.Var)
                        and len(defs.get(copies[0].target.name, [])) == 1
                        and typemap.get(copies[0].target.name) == typemap.get(target.name)):
                    blk.body.remove(copies[0])
                    typemap.pop(target.name, None)
                    target = copies[0].target
                i = blk.body.index(st)
                blk.body[i:i + 1] = [ir.Assign(ir.Global("mma", language.mma, expr.loc),
                                               callee, expr.loc),
                                     ir.Assign(call, target, st.loc)]
                blk.body.remove(prod_st)
                typemap.pop(prod.name, None)
                count += 1
                break
    if count:
        from numba.cuda.core.ir_utils import build_definitions
        func_ir._definitions = build_definitions(func_ir.blocks)
    return count


