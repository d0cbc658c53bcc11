"""Lowering of the reductions: sum, prod, max, min along one axis.

Along the last axis (rows: softmax, norms) the reduction is a tree: each thread combines
its own elements of a row in registers, the lanes holding one row combine with butterfly
``shfl.sync`` shuffles, and the warps holding one row combine through a small shared-memory
buffer (``_last_axis_tree``); a product's accumulator reduces in its own layout into the
slots of its rows (``_mma_row_tree``: attention's row maximum and sum). Along any other axis, where each thread holds the whole lines
of its result elements (``layout.local_lines``: a tile folded along its repetitions), each
thread combines its own registers; otherwise (and for argmax, argmin, cumsum) a first,
serial version stages the tile in shared memory (:func:`layouts.stage`) and each thread
reduces its output elements in a loop. Both accumulate in the compute type (float32
for 16-bit floats) and follow NumPy's NaN rules.
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba.cuda import cgutils, types

from .. import dtypes
from .._registry import lowering_rule
from ..typing.reduction import keepdims_value, reduction_axis
from ..layout import BlockedLayout, MmaLayout, SliceLayout
from .common import (I1, chunk_coords, const_i64, convert, fragment_elements, from_compute,
                     is_storing_thread, make_fragment, thread_index, tile_extents, to_compute,
                     umin)
from ..layout import local_lines
from .layouts import barrier, dst_slots, linear_of, stage


def _identity(name, ct, unsigned=False):
    """The identity of reduction ``name`` as an LLVM constant of type ``ct`` (``unsigned``: an
    unsigned integer dtype, whose max starts at 0 and min at ``2**bits - 1``)."""
    lt = ct
    if isinstance(lt, (ir.FloatType, ir.DoubleType)):
        return ir.Constant(lt, {"sum": 0.0, "prod": 1.0, "max": -math.inf, "min": math.inf}[name])
    if lt.width == 1:                      # bool max/min
        return ir.Constant(lt, 0 if name == "max" else 1)
    bits = lt.width
    if unsigned:
        return ir.Constant(lt, {"sum": 0, "prod": 1, "max": 0, "min": (1 << bits) - 1}[name])
    return ir.Constant(lt, {"sum": 0, "prod": 1, "max": -(1 << (bits - 1)),
                            "min": (1 << (bits - 1)) - 1}[name])


def _combine(builder, name, acc, v, unsigned=False):
    """``acc`` combined with ``v`` by reduction ``name`` (``unsigned``: integers compare as
    unsigned, ``icmp ugt``/``ult``)."""
    is_float = isinstance(acc.type, (ir.FloatType, ir.DoubleType))
    if name == "sum":
        return builder.fadd(acc, v) if is_float else builder.add(acc, v)
    if name == "prod":
        return builder.fmul(acc, v) if is_float else builder.mul(acc, v)
    if is_float:
        better = builder.fcmp_ordered(">" if name == "max" else "<", v, acc)
        r = builder.select(better, v, acc)
        return builder.select(builder.fcmp_unordered("uno", v, v), v, r)   # NaN propagates
    if acc.type.width == 1:
        return builder.or_(acc, v) if name == "max" else builder.and_(acc, v)
    cmp = builder.icmp_unsigned if unsigned else builder.icmp_signed
    better = cmp(">" if name == "max" else "<", v, acc)
    return builder.select(better, v, acc)


def _shfl_bfly(builder, value, offset: int):
    """``shfl.sync.bfly.b32`` over the full warp (64-bit values as two 32-bit halves)."""
    i32 = ir.IntType(32)
    asm = ir.InlineAsm(ir.FunctionType(i32, [i32, i32]),
                       "shfl.sync.bfly.b32 $0, $1, $2, 0x1f, 0xffffffff;", "=r,r,r",
                       side_effect=True)
    off = ir.Constant(i32, offset)
    t = value.type
    if isinstance(t, ir.IntType) and t.width < 32:
        return builder.trunc(builder.call(asm, [builder.zext(value, i32), off]), t)
    if isinstance(t, ir.FloatType):
        return builder.bitcast(builder.call(asm, [builder.bitcast(value, i32), off]), t)
    if isinstance(t, ir.IntType) and t.width == 32:
        return builder.call(asm, [value, off])
    i64 = ir.IntType(64)
    bits = builder.bitcast(value, i64) if not isinstance(t, ir.IntType) else value
    lo = builder.call(asm, [builder.trunc(bits, i32), off])
    hi = builder.call(asm, [builder.trunc(builder.lshr(bits, ir.Constant(i64, 32)), i32), off])
    out = builder.or_(builder.zext(lo, i64), builder.shl(builder.zext(hi, i64), ir.Constant(i64, 32)))
    return builder.bitcast(out, t) if not isinstance(t, ir.IntType) else out


def last_axis_plan(layout, C: int):
    """How a reduction along a last axis of extent ``C`` groups ``layout``'s threads.

    Returns:
        ``(group, reps_per_row, lanes, warps_per_row)``: threads holding one row, repetitions
        of a thread that hold one row, lanes combined by shuffles (at most a warp), and warps
        whose partials meet in shared memory.
    """
    K = C // layout.vec
    TU = layout.threads_used
    group, rpr = (K, 1) if K <= TU else (TU, K // TU)
    return group, rpr, min(group, 32), max(1, group // 32)


def row_of_partial(layout, C: int, thread: int, j: int) -> int:
    """Row whose partial ``j`` thread ``thread`` (< threads_used) holds."""
    K = C // layout.vec
    TU = layout.threads_used
    return j * (TU // K) + thread // K if K <= TU else j


def _last_axis_tree(context, builder, name, xty, res, elems, ct_ll, valid_cols=None):
    """Reduce along the last axis: registers, then butterfly shuffles among the lanes that
    hold one row, then shared memory across the warps that hold one row.

    Row-major blocked layout (``layout.py``): a row of ``C`` elements is ``K = C / vec``
    consecutive chunks. When ``K <= threads_used`` a row lies in one repetition, on ``K``
    consecutive threads; otherwise a row spans ``K / threads_used`` repetitions of every
    thread. Each thread first combines its own elements of a row, lanes of one warp combine
    with ``log2`` butterfly shuffles (after which every lane of the row holds the row's
    partial), and when a row spans several warps one lane per (row, warp) leaves its partial
    in shared memory and the partials are combined after a barrier.

    A result in a :class:`SliceLayout` (``keepdims``) is read off each thread's own partials
    (no shared memory at all when a row fits in a warp); a blocked result is read from the
    shared-memory buffer. ``valid_cols`` (i64, a masked tile's extent along the last axis)
    replaces the elements at or past it with the identity.
    """
    lay = xty.layout
    V, TU, R = lay.vec, lay.threads_used, lay.reps
    C = xty.shape[-1]
    K = C // V
    group, rpr, lanes, warps_per_row = last_axis_plan(lay, C)
    n_rows = lay.numel // C
    uns = dtypes.is_unsigned(res.dtype)
    ident = _identity(name, ct_ll, uns)

    tid = thread_index(builder, fresh=True) if valid_cols is not None else None

    def value(i):
        e = elems[i]
        if name in ("sum", "prod"):
            e = convert(context, builder, e, xty.dtype, res.dtype)
        e = to_compute(context, builder, e, res.dtype)
        if valid_cols is not None:
            r, v = divmod(i, V)
            col = builder.add(chunk_coords(builder, lay, r, tid)[-1], const_i64(v))
            e = builder.select(builder.icmp_unsigned("<", col, valid_cols), e, ident)
        return e

    partials = []
    for j in range(R // rpr):
        acc = ident
        for r in range(j * rpr, (j + 1) * rpr):
            for v in range(V):
                acc = _combine(builder, name, acc, value(r * V + v), uns)
        off = lanes // 2
        while off >= 1:
            acc = _combine(builder, name, acc, _shfl_bfly(builder, acc, off), uns)
            off //= 2
        partials.append(acc)

    slice_out = isinstance(res.layout, SliceLayout)
    if slice_out and warps_per_row == 1:
        return [from_compute(context, builder, partials[(i // V) // rpr], res.dtype)
                for i in range(res.layout.elems_per_thread)]

    # shared memory: partials[row * warps_per_row + warp_of_row]
    from .shared import pool
    is_bit = isinstance(ct_ll, ir.IntType) and ct_ll.width == 1
    slot_ty = ir.IntType(8) if is_bit else ct_ll
    nslots = n_rows * warps_per_row
    nbytes = nslots * max(1, slot_ty.width // 8 if isinstance(slot_ty, ir.IntType)
                          else (8 if isinstance(slot_ty, ir.DoubleType) else 4))
    base = builder.bitcast(pool().scratch(builder, nbytes, "reduction partials"),
                           slot_ty.as_pointer(3))
    t = thread_index(builder)
    t_eff = builder.and_(t, const_i64(TU - 1)) if TU < lay.num_threads else t
    owner = is_storing_thread(builder, lay)
    writer = builder.and_(owner, builder.icmp_unsigned(
        "==", builder.and_(t_eff, const_i64(lanes - 1)), const_i64(0)))
    warp_slot = builder.lshr(builder.and_(t_eff, const_i64(group - 1)), const_i64(5)) \
        if warps_per_row > 1 else const_i64(0)

    def row_of(j):
        if K <= TU:
            return builder.add(const_i64(j * (TU // K)), builder.lshr(t_eff, const_i64(
                K.bit_length() - 1)))
        return const_i64(j)

    def combined(row):
        acc = ident
        for w in range(warps_per_row):
            idx = builder.add(builder.mul(row, const_i64(warps_per_row)), const_i64(w))
            v = builder.load(builder.gep(base, [idx]))
            if slot_ty != ct_ll:
                v = builder.trunc(v, ct_ll)
            acc = _combine(builder, name, acc, v, uns)
        return from_compute(context, builder, acc, res.dtype)

    barrier(builder)
    with builder.if_then(writer):
        for j, p in enumerate(partials):
            idx = builder.add(builder.mul(row_of(j), const_i64(warps_per_row)), warp_slot)
            val = builder.zext(p, slot_ty) if slot_ty != ct_ll else p
            builder.store(val, builder.gep(base, [idx]))
    barrier(builder)
    if slice_out:
        totals = [combined(row_of(j)) for j in range(len(partials))]
        return [totals[(i // V) // rpr] for i in range(res.layout.elems_per_thread)]
    return [combined(linear) for _coords, linear in dst_slots(builder, res.layout)]


def _mma_row_tree(context, builder, name, xty, res, elems, ct_ll, valid_cols=None):
    """Reduce an ``mma`` accumulator tile along its rows into a
    :class:`~numba_tile.layout.VectorLayout` of its layout (``typing/reduction.row_slices``:
    each row lies in one warp). Slot ``4 (im an + jn) + i`` of a lane holds row ``im``, half
    ``i // 2`` of its atom row and column ``8 jn + 2 (lane % 4) + i % 2``
    (``layout.MmaLayout``): a thread combines the ``2 an`` slots of each of its ``2 am``
    rows, then two butterfly shuffles (lane offsets 1 and 2) combine the four lanes that
    share the row, after which each of them holds the row's value. No shared memory, no
    barrier. ``valid_cols``
    (a masked tile's extent along the rows) replaces the elements at or past it with the
    identity."""
    from .layouts import mma_slots
    lay = xty.layout
    am, an = lay.atoms
    uns = dtypes.is_unsigned(res.dtype)
    ident = _identity(name, ct_ll, uns)
    cols = [c[1] for c, _lin in mma_slots(builder, lay)] if valid_cols is not None else None
    totals = {}
    for im in range(am):
        for half in range(2):
            acc = ident
            for jn in range(an):
                for i in (2 * half, 2 * half + 1):
                    j = 4 * (im * an + jn) + i
                    e = elems[j]
                    if name in ("sum", "prod"):
                        e = convert(context, builder, e, xty.dtype, res.dtype)
                    e = to_compute(context, builder, e, res.dtype)
                    if cols is not None:
                        e = builder.select(builder.icmp_unsigned("<", cols[j], valid_cols),
                                           e, ident)
                    acc = _combine(builder, name, acc, e, uns)
            for off in (1, 2):
                acc = _combine(builder, name, acc, _shfl_bfly(builder, acc, off), uns)
            totals[im, half] = from_compute(context, builder, acc, res.dtype)
    return [totals[im, half] for im in range(am) for half in range(2)]


def _result_extents(builder, xty, res, x, axis, keep):
    """Valid extents of the reduction of masked tile ``x`` along ``axis``."""
    if not res.masked:
        return None
    ext = tile_extents(builder, xty, x)
    ea = ext[axis]
    if keep:
        return [umin(builder, e, const_i64(1)) if d == axis else e for d, e in enumerate(ext)]
    rest = [e for d, e in enumerate(ext) if d != axis]
    if not rest:                           # a 1-D tile reduced to shape (1,)
        return [umin(builder, ea, const_i64(1))]
    empty = builder.icmp_unsigned("==", ea, const_i64(0))
    return [builder.select(empty, const_i64(0), e) for e in rest]


def _axis_bound(builder, xty, x, axis):
    """Elements to visit along ``axis``: the shape, or a masked tile's valid extent."""
    if not xty.masked:
        return const_i64(xty.shape[axis])
    return tile_extents(builder, xty, x)[axis]


def _first_source(coords, axis, keep, xty, res):
    """Coordinates in ``xty`` of the first element (index 0 along ``axis``) that reduces into
    the result element at ``coords``."""
    if keep:
        src = list(coords)
        src[axis] = const_i64(0)
        return src
    if len(res.shape) == len(xty.shape) - 1:
        return list(coords[:axis]) + [const_i64(0)] + list(coords[axis:])
    return [const_i64(0)]                  # a 1-D tile reduced to shape (1,)


def _lowering(name):
    def lower(context, builder, sig, args):
        xty, axty, kty, _dty = sig.args
        res = sig.return_type
        axis = reduction_axis(name, xty, axty)
        keep = keepdims_value(name, kty)
        ct = dtypes.compute_type(res.dtype)
        uns = dtypes.is_unsigned(res.dtype)
        ct_ll = context.get_value_type(ct) if ct != types.boolean else I1
        extents = _result_extents(builder, xty, res, args[0], axis, keep)
        if axis == xty.ndim - 1:
            elems = fragment_elements(builder, args[0], xty.layout.elems_per_thread)
            valid_cols = tile_extents(builder, xty, args[0])[axis] if xty.masked else None
            tree = _mma_row_tree if isinstance(xty.layout, MmaLayout) else _last_axis_tree
            return make_fragment(builder, res, tree(context, builder, name, xty, res, elems,
                                                    ct_ll, valid_cols),
                                 extents)
        lines = local_lines(xty.layout, res.layout, axis, keep)
        if lines is not None:
            # every thread holds the lines of its result elements: its own registers
            elems = fragment_elements(builder, args[0], xty.layout.elems_per_thread)
            bound = _axis_bound(builder, xty, args[0], axis) if xty.masked else None
            out = []
            for line in lines:
                acc = _identity(name, ct_ll, uns)
                for k, j in enumerate(line):
                    e = elems[j]
                    v = to_compute(context, builder, convert(context, builder, e, xty.dtype,
                                                             res.dtype)
                                   if name in ("sum", "prod") else e, res.dtype)
                    new = _combine(builder, name, acc, v, uns)
                    acc = new if bound is None else builder.select(
                        builder.icmp_unsigned("<", const_i64(k), bound), new, acc)
                out.append(from_compute(context, builder, acc, res.dtype))
            return make_fragment(builder, res, out, extents)
        read = stage(builder, xty.dtype, xty.layout, fragment_elements(
            builder, args[0], xty.layout.elems_per_thread))
        stride = math.prod(xty.shape[axis + 1:])
        bound = _axis_bound(builder, xty, args[0], axis)
        out = []
        for coords, _linear in dst_slots(builder, res.layout):
            src = _first_source(coords, axis, keep, xty, res)
            base = linear_of(builder, xty.shape, src)
            acc = cgutils.alloca_once_value(builder, _identity(name, ct_ll, uns))
            with cgutils.for_range(builder, bound) as loop:
                lin = builder.add(base, builder.mul(loop.index, const_i64(stride)))
                e = read(lin)
                v = to_compute(context, builder, convert(context, builder, e, xty.dtype, res.dtype)
                               if name in ("sum", "prod") else e,
                               res.dtype)
                builder.store(_combine(builder, name, builder.load(acc), v, uns), acc)
            out.append(from_compute(context, builder, builder.load(acc), res.dtype))
        return make_fragment(builder, res, out, extents)

    return lower


for _n in ("sum", "prod", "max", "min"):
    lowering_rule(_n)(_lowering(_n))


def _arg_combine(builder, is_max, a, b, unsigned):
    """The winner of two ``(value, index)`` candidates of ``argmax``/``argmin`` in any order
    of combination: the larger (smaller) value, a NaN over any number, and between equal
    values or two NaNs the smaller index: NumPy's first occurrence."""
    (va, ia), (vb, ib) = a, b
    earlier = builder.icmp_signed("<", ib, ia)
    if isinstance(va.type, (ir.FloatType, ir.DoubleType)):
        a_nan = builder.fcmp_unordered("uno", va, va)
        b_nan = builder.fcmp_unordered("uno", vb, vb)
        better = builder.fcmp_ordered(">" if is_max else "<", vb, va)
        equal = builder.fcmp_ordered("==", vb, va)
        take_b = builder.or_(builder.and_(builder.not_(a_nan), builder.or_(
            b_nan, builder.or_(better, builder.and_(equal, earlier)))),
            builder.and_(builder.and_(a_nan, b_nan), earlier))
    else:
        if va.type.width == 1:
            better = builder.and_(vb, builder.not_(va)) if is_max else \
                builder.and_(va, builder.not_(vb))
        else:
            cmp = builder.icmp_unsigned if unsigned else builder.icmp_signed
            better = cmp(">" if is_max else "<", vb, va)
        equal = builder.icmp_unsigned("==", vb, va)
        take_b = builder.or_(better, builder.and_(equal, earlier))
    return builder.select(take_b, vb, va), builder.select(take_b, ib, ia)


#: the index of no element (a masked row's invalid columns): loses every tie, then reads as 0
_NO_INDEX = (1 << 31) - 1


def _arg_last_axis_tree(context, builder, is_max, xty, res, elems, valid_cols=None):
    """``argmax``/``argmin`` along the last axis of a blocked tile as ``max`` is reduced
    (:func:`_last_axis_tree`): each thread's own ``(value, column)`` candidates, then
    butterfly shuffles of both among the lanes of a row, then shared memory (a value and an
    index per warp of a row) across the warps: registers and shuffles, no staging of the
    tile, whatever the row's length. Candidates combine by :func:`_arg_combine` (its result
    does not depend on the order); invalid columns of a masked tile are no candidate, and a
    row without one gives 0."""
    lay = xty.layout
    V, TU, R = lay.vec, lay.threads_used, lay.reps
    C = xty.shape[-1]
    K = C // V
    group, rpr, lanes, warps_per_row = last_axis_plan(lay, C)
    n_rows = lay.numel // C
    uns = dtypes.is_unsigned(xty.dtype)
    i32 = ir.IntType(32)
    tid = thread_index(builder, fresh=True)
    first = to_compute(context, builder, elems[0], xty.dtype)
    ct_ll = first.type
    none = (ir.Constant(ct_ll, 0.0 if isinstance(ct_ll, (ir.FloatType, ir.DoubleType)) else 0),
            ir.Constant(i32, _NO_INDEX))

    def candidate(i):
        r, v = divmod(i, V)
        col = builder.add(chunk_coords(builder, lay, r, tid)[-1], const_i64(v))
        e = to_compute(context, builder, elems[i], xty.dtype)
        idx = builder.trunc(col, i32)
        if valid_cols is not None:
            idx = builder.select(builder.icmp_unsigned("<", col, valid_cols), idx, none[1])
        return e, idx

    def combine(a, b):
        # a candidate of no element never wins (its value may compare better)
        a_none = builder.icmp_unsigned("==", a[1], none[1])
        b_none = builder.icmp_unsigned("==", b[1], none[1])
        v, i = _arg_combine(builder, is_max, a, b, uns)
        v = builder.select(a_none, b[0], builder.select(b_none, a[0], v))
        i = builder.select(a_none, b[1], builder.select(b_none, a[1], i))
        return v, i

    partials = []
    for j in range(R // rpr):
        acc = none
        for r in range(j * rpr, (j + 1) * rpr):
            for v in range(V):
                acc = combine(acc, candidate(r * V + v))
        off = lanes // 2
        while off >= 1:
            acc = combine(acc, (_shfl_bfly(builder, acc[0], off),
                                _shfl_bfly(builder, acc[1], off)))
            off //= 2
        partials.append(acc)

    def index_of(pair):
        return builder.select(builder.icmp_unsigned("==", pair[1], none[1]),
                              ir.Constant(i32, 0), pair[1])

    slice_out = isinstance(res.layout, SliceLayout)
    if slice_out and warps_per_row == 1:
        return [index_of(partials[(i // V) // rpr]) for i in range(res.layout.elems_per_thread)]

    from .shared import pool
    is_bit = isinstance(ct_ll, ir.IntType) and ct_ll.width == 1
    slot_ty = ir.IntType(8) if is_bit else ct_ll
    width = 1 if is_bit else (ct_ll.width // 8 if isinstance(ct_ll, ir.IntType)
                              else 8 if isinstance(ct_ll, ir.DoubleType) else 4)
    nslots = n_rows * warps_per_row
    raw = pool().scratch(builder, nslots * (width + 4) + 8, "arg reduction partials")
    vals = builder.bitcast(raw, slot_ty.as_pointer(3))
    idxs = builder.bitcast(builder.gep(raw, [const_i64(-(-nslots * width // 4) * 4)]),
                           i32.as_pointer(3))
    t = thread_index(builder)
    t_eff = builder.and_(t, const_i64(TU - 1)) if TU < lay.num_threads else t
    owner = is_storing_thread(builder, lay)
    writer = builder.and_(owner, builder.icmp_unsigned(
        "==", builder.and_(t_eff, const_i64(lanes - 1)), const_i64(0)))
    warp_slot = builder.lshr(builder.and_(t_eff, const_i64(group - 1)), const_i64(5)) \
        if warps_per_row > 1 else const_i64(0)

    def row_of(j):
        if K <= TU:
            return builder.add(const_i64(j * (TU // K)), builder.lshr(t_eff, const_i64(
                K.bit_length() - 1)))
        return const_i64(j)

    def combined(row):
        acc = none
        for w in range(warps_per_row):
            k = builder.add(builder.mul(row, const_i64(warps_per_row)), const_i64(w))
            v = builder.load(builder.gep(vals, [k]))
            if slot_ty != ct_ll:
                v = builder.trunc(v, ct_ll)
            acc = combine(acc, (v, builder.load(builder.gep(idxs, [k]))))
        return index_of(acc)

    barrier(builder)
    with builder.if_then(writer):
        for j, (pv, pi) in enumerate(partials):
            k = builder.add(builder.mul(row_of(j), const_i64(warps_per_row)), warp_slot)
            builder.store(builder.zext(pv, slot_ty) if slot_ty != ct_ll else pv,
                          builder.gep(vals, [k]))
            builder.store(pi, builder.gep(idxs, [k]))
    barrier(builder)
    if slice_out:
        totals = [combined(row_of(j)) for j in range(len(partials))]
        return [totals[(i // V) // rpr] for i in range(res.layout.elems_per_thread)]
    return [combined(linear) for _coords, linear in dst_slots(builder, res.layout)]


def _arg_lowering(name):
    is_max = name == "argmax"

    def lower(context, builder, sig, args):
        xty, axty, kty = sig.args
        res = sig.return_type
        axis = reduction_axis(name, xty, axty)
        keep = keepdims_value(name, kty)
        if axis == xty.ndim - 1 and isinstance(xty.layout, BlockedLayout):
            elems = fragment_elements(builder, args[0], xty.layout.elems_per_thread)
            valid = tile_extents(builder, xty, args[0])[axis] if xty.masked else None
            return make_fragment(builder, res, _arg_last_axis_tree(
                context, builder, is_max, xty, res, elems, valid),
                _result_extents(builder, xty, res, args[0], axis, keep))
        read = stage(builder, xty.dtype, xty.layout, fragment_elements(
            builder, args[0], xty.layout.elems_per_thread))
        stride = math.prod(xty.shape[axis + 1:])
        bound = _axis_bound(builder, xty, args[0], axis)
        i32 = ir.IntType(32)
        out = []
        for coords, _linear in dst_slots(builder, res.layout):
            src = _first_source(coords, axis, keep, xty, res)
            base = linear_of(builder, xty.shape, src)
            first = to_compute(context, builder, read(base), xty.dtype)
            best = cgutils.alloca_once_value(builder, first)
            where = cgutils.alloca_once_value(builder, ir.Constant(i32, 0))
            with cgutils.for_range(builder, bound, start=const_i64(1)) as loop:
                v = to_compute(context, builder,
                               read(builder.add(base, builder.mul(loop.index, const_i64(stride)))),
                               xty.dtype)
                b = builder.load(best)
                if isinstance(v.type, (ir.FloatType, ir.DoubleType)):
                    better = builder.fcmp_ordered(">" if is_max else "<", v, b)
                    # the first NaN wins and then stays (numpy.argmax/argmin)
                    b_nan = builder.fcmp_unordered("uno", b, b)
                    v_nan = builder.fcmp_unordered("uno", v, v)
                    take = builder.and_(builder.not_(b_nan), builder.or_(better, v_nan))
                elif v.type.width == 1:
                    take = builder.and_(v, builder.not_(b)) if is_max else \
                        builder.and_(b, builder.not_(v))
                else:
                    cmp = builder.icmp_unsigned if dtypes.is_unsigned(xty.dtype) \
                        else builder.icmp_signed
                    take = cmp(">" if is_max else "<", v, b)
                builder.store(builder.select(take, v, b), best)
                k32 = builder.trunc(loop.index, i32)
                builder.store(builder.select(take, k32, builder.load(where)), where)
            out.append(builder.load(where))
        return make_fragment(builder, res, out,
                             _result_extents(builder, xty, res, args[0], axis, keep))

    return lower


lowering_rule("argmax")(_arg_lowering("argmax"))
lowering_rule("argmin")(_arg_lowering("argmin"))


@lowering_rule("cumsum")
def lower_cumsum(context, builder, sig, args):
    xty, axty, _dty = sig.args
    res = sig.return_type
    axis = reduction_axis("cumsum", xty, axty)
    read = stage(builder, xty.dtype, xty.layout, fragment_elements(
        builder, args[0], xty.layout.elems_per_thread))
    ct = dtypes.compute_type(res.dtype)
    ct_ll = context.get_value_type(ct)
    stride = math.prod(xty.shape[axis + 1:])
    out = []
    for coords, _linear in dst_slots(builder, res.layout):
        src = list(coords)
        upto = builder.add(src[axis], const_i64(1))
        if xty.masked:
            upto = umin(builder, upto, _axis_bound(builder, xty, args[0], axis))
        src[axis] = const_i64(0)
        base = linear_of(builder, xty.shape, src)
        acc = cgutils.alloca_once_value(builder, _identity("sum", ct_ll))
        with cgutils.for_range(builder, upto) as loop:
            e = read(builder.add(base, builder.mul(loop.index, const_i64(stride))))
            v = to_compute(context, builder, convert(context, builder, e, xty.dtype, res.dtype),
                           res.dtype)
            builder.store(_combine(builder, "sum", builder.load(acc), v), acc)
        out.append(from_compute(context, builder, builder.load(acc), res.dtype))
    return make_fragment(builder, res, out,
                         tile_extents(builder, xty, args[0]) if res.masked else None)
