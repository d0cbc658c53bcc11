"""Lowering of the unchecked ops: per-element gather, scatter and PTX atomics.

The op works in the blocked layout of its widest tile operand
(``typing/unchecked.in_operand_layout``: a float32 gather at int64 indices runs in the
indices' layout and converts nothing). Every element of that layout computes its address
from its coordinates (64-bit offsets), is masked by its bounds (``0 <= coord < extent`` on
every axis, one unsigned compare each), by the user's mask and by the validity of masked
tile operands (an index or value loaded past an array's edge without ``padding=`` does
nothing), and only owning (not replicating) threads write.
Atomics are one inline-PTX ``atom{.sem}{.scope}.op.type`` per element on the generic
address (PTX ISA 8.x, "atom"), ``relaxed``/``acquire``/``release``/``acq_rel`` and
``cta``/``gpu``/``sys`` as the op's ``sem``/``scope`` arguments say; float16 and bfloat16
adds are ``atom.add.noftz.f16`` / ``.bf16`` (16-bit registers); float max/min are integer
atomics on the bits (``_float_order_atomic``).
"""

from __future__ import annotations

from llvmlite import ir
from numba.cuda import types

from .. import dtypes
from .._registry import lowering_rule
from ..typing.types import element_llvm_type
from .common import I1, I64, const_i64, is_storing_thread, make_fragment, padding_element
from .elementwise import Operand
from .views import ArrayView, _reg_to_storage, _storage_to_reg


def _index_operands(context, builder, sig_ty, value, layout, shape):
    tys = list(sig_ty.types) if isinstance(sig_ty, types.BaseTuple) else [sig_ty]
    if isinstance(sig_ty, types.BaseTuple):
        vals = [builder.extract_value(value, i) for i in range(len(tys))]
    else:
        vals = [value]
    return [Operand(context, builder, t, v, dtypes.int64, layout, shape)
            for t, v in zip(tys, vals)]


def _elements(context, builder, view, idx_ops, mask_op, i, value_ops=()):
    """(in-bounds-and-masked i1, element pointer) of element ``i``: the indices in bounds,
    the mask true, and every masked tile operand (indices, mask, values) valid there."""
    ok = ir.Constant(I1, 1)
    offset = const_i64(0)
    for d, op in enumerate(idx_ops):
        c = op.element(i)
        ok = builder.and_(ok, builder.icmp_unsigned("<", c, view.shape[d]))
        offset = builder.add(offset, builder.mul(c, view.strides[d]))
    if mask_op is not None:
        ok = builder.and_(ok, mask_op.element(i))
    for op in [*idx_ops, *([mask_op] if mask_op is not None else []), *value_ops]:
        v = op.valid(i)
        if v is not None:
            ok = builder.and_(ok, v)
    return ok, view.global_ptr(builder, offset, 1)


def _mask_operand(context, builder, ty, value, layout, shape):
    if isinstance(ty, (types.Omitted, types.NoneType)):
        return None
    return Operand(context, builder, ty, value, dtypes.bool_, layout, shape)


@lowering_rule("gather")
def lower_gather(context, builder, sig, args):
    xty, ity, mty, pty = sig.args
    res = sig.return_type
    view = ArrayView(context, builder, xty, args[0])
    idx = _index_operands(context, builder, ity, args[1], res.layout, res.shape)
    mask = _mask_operand(context, builder, mty, args[2], res.layout, res.shape)
    pad = padding_element(context, builder, pty, args[3], res.dtype)
    pad_s = _reg_to_storage(builder, pad, res.dtype, view.storage_llvm)
    out = []
    for i in range(res.layout.elems_per_thread):
        ok, ptr = _elements(context, builder, view, idx, mask, i)
        entry = builder.block
        with builder.if_then(ok):
            then = builder.block
            v = builder.load(ptr, align=view.itemsize)
        phi = builder.phi(view.storage_llvm)
        phi.add_incoming(v, then)
        phi.add_incoming(pad_s, entry)
        out.append(_storage_to_reg(builder, phi, res.dtype))
    return make_fragment(builder, res, out)


@lowering_rule("scatter")
def lower_scatter(context, builder, sig, args):
    xty, ity, vty, mty = sig.args
    from ..typing.unchecked import _operands, in_operand_layout, operand_shape
    shape = operand_shape(ity, vty, mty)
    layout = in_operand_layout(xty.dtype, shape, _operands(ity, vty, mty)).layout
    view = ArrayView(context, builder, xty, args[0])
    idx = _index_operands(context, builder, ity, args[1], layout, shape)
    vals = Operand(context, builder, vty, args[2], xty.dtype, layout, shape)
    mask = _mask_operand(context, builder, mty, args[3], layout, shape)
    owner = is_storing_thread(builder, layout)
    for i in range(layout.elems_per_thread):
        ok, ptr = _elements(context, builder, view, idx, mask, i, (vals,))
        with builder.if_then(builder.and_(ok, owner)):
            builder.store(_reg_to_storage(builder, vals.element(i), xty.dtype, view.storage_llvm),
                          ptr, align=view.itemsize)
    return context.get_dummy_value()


_PTX_OP = {"atomic_add": "add", "atomic_max": "max", "atomic_min": "min",
           "atomic_xchg": "exch", "atomic_cas": "cas"}


def _ptx_type(name, dt):
    if dt == dtypes.float16:
        return "noftz.f16"                 # atomic_add only (typing/unchecked.ATOMIC_DTYPES)
    if dt == dtypes.bfloat16:
        return "noftz.bf16"
    if name in ("atomic_xchg", "atomic_cas"):
        return "b32" if dtypes.itemsize(dt) == 4 else "b64"
    if dt == dtypes.float32:
        return "f32"
    if dt == dtypes.float64:
        return "f64"
    bits = 8 * dtypes.itemsize(dt)
    if dtypes.is_unsigned(dt):
        return f"u{bits}"                   # max/min compare unsigned
    if name == "atomic_add":
        return "s32" if bits == 32 else "u64"   # two's complement: u64 add is s64 add
    return f"s{bits}"


def _constraint(dt):
    return {dtypes.int32: "r", dtypes.int64: "l", dtypes.uint32: "r", dtypes.uint64: "l",
            dtypes.float32: "f", dtypes.float64: "d", dtypes.float16: "h",
            dtypes.bfloat16: "h"}[dt]


def _float_order_atomic(builder, name, sem, scope, dt, addr, value):
    """Float ``atomic_max`` / ``atomic_min`` under IEEE 754 totalOrder, by integer atomics on
    the bits (Triton's lowering): for ``max``, an operand with its sign bit clear takes the
    signed ``atom.max``, one with it set the unsigned ``atom.min`` (the larger unsigned bits of a
    negative float are the smaller float); ``min`` mirrors it. Each instruction orders the two
    values as totalOrder does whatever the stored value's sign, so the result does not depend
    on the order of the updates. Returns the old value."""
    bits = dtypes.itemsize(dt) * 8
    ity = ir.IntType(bits)
    c = "r" if bits == 32 else "l"
    v = builder.bitcast(value, ity)
    signed_op, unsigned_op = ("max", "min") if name == "atomic_max" else ("min", "max")
    fnty = ir.FunctionType(ity, [I64, ity])

    def atom(op, kind):
        text = f"atom.{sem}.{scope}.{op}.{kind}{bits} $0, [$1], $2;"
        return ir.InlineAsm(fnty, text, f"={c},l,{c},~{{memory}}", side_effect=True)

    negative = builder.icmp_signed("<", v, ir.Constant(ity, 0))
    entry = builder.block
    with builder.if_else(negative) as (neg, pos):
        with neg:
            a = builder.call(atom(unsigned_op, "u"), [addr, v])
            neg_block = builder.block
        with pos:
            b = builder.call(atom(signed_op, "s"), [addr, v])
            pos_block = builder.block
    old = builder.phi(ity)
    old.add_incoming(a, neg_block)
    old.add_incoming(b, pos_block)
    del entry
    return builder.bitcast(old, element_llvm_type(dt))


def _static(ty):
    return ty.value if isinstance(ty, types.Omitted) else ty.literal_value


def _atomic_lowering(name):
    def lower(context, builder, sig, args):
        if name == "atomic_cas":
            xty, ity, ety, dty, mty, sty, scty = sig.args
        else:
            xty, ity, vty, mty, sty, scty = sig.args
        res = sig.return_type
        layout = res.layout
        dt = xty.dtype
        view = ArrayView(context, builder, xty, args[0])
        shape = res.shape
        idx = _index_operands(context, builder, ity, args[1], layout, shape)
        if name == "atomic_cas":
            operands = [Operand(context, builder, ety, args[2], dt, layout, shape),
                        Operand(context, builder, dty, args[3], dt, layout, shape)]
            mask = _mask_operand(context, builder, mty, args[4], layout, shape)
        else:
            operands = [Operand(context, builder, vty, args[2], dt, layout, shape)]
            mask = _mask_operand(context, builder, mty, args[3], layout, shape)
        sem, scope = _static(sty), _static(scty)
        reg = element_llvm_type(dt)
        float_order = name in ("atomic_max", "atomic_min") and dtypes.is_float(dt)
        # 16-bit floats go through 16-bit integer registers ("h")
        asm_reg = ir.IntType(16) if dtypes.is_half(dt) else reg
        if not float_order:
            c = _constraint(dt)
            ops = ", ".join(f"${k + 2}" for k in range(len(operands)))
            asm_text = (f"atom.{sem}.{scope}.{_PTX_OP[name]}.{_ptx_type(name, dt)} $0, [$1], "
                        f"{ops};")
            constraints = f"={c},l," + ",".join(c for _ in operands) + ",~{memory}"
            fnty = ir.FunctionType(asm_reg, [I64] + [asm_reg] * len(operands))
            asm = ir.InlineAsm(fnty, asm_text, constraints, side_effect=True)
        owner = is_storing_thread(builder, layout)
        zero = ir.Constant(reg, 0)
        out = []
        for i in range(layout.elems_per_thread):
            ok, ptr = _elements(context, builder, view, idx, mask, i, operands)
            addr = builder.ptrtoint(builder.addrspacecast(ptr, reg.as_pointer()), I64)
            entry = builder.block
            with builder.if_then(builder.and_(ok, owner)):
                if float_order:
                    old = _float_order_atomic(builder, name, sem, scope, dt, addr,
                                              operands[0].element(i))
                else:
                    vals = [op.element(i) for op in operands]
                    if asm_reg != reg:
                        vals = [builder.bitcast(v, asm_reg) for v in vals]
                    old = builder.call(asm, [addr] + vals)
                    if asm_reg != reg:
                        old = builder.bitcast(old, reg)
                then = builder.block
            phi = builder.phi(reg)
            phi.add_incoming(old, then)
            phi.add_incoming(zero, entry)
            out.append(phi)
        return make_fragment(builder, res, out)

    return lower


for _n in ("atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas"):
    lowering_rule(_n)(_atomic_lowering(_n))
