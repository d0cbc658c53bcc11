"""Lowering of device-function calls on tiles (``typing/device.py``): one call of the
compiled device function per register element.

The device function is the frozen copy ``typing/device.compiled_device_function`` compiled and
checked (its library is linked into the kernel's). In a safe kernel its body can return no
error status (checked), so the status is not tested; in an unchecked kernel an element whose
call fails keeps whatever value it returned.
"""

from __future__ import annotations

from .. import dtypes
from .._registry import lowering_rule
from ..typing.device import argument_types, compiled_device_function
from ..typing.types import TileType
from .common import from_compute, make_fragment, result_extents
from .elementwise import Operand


def _call(context, builder, cres, values):
    fndesc = cres.fndesc
    func = fndesc.declare_function(builder.module)
    context.add_linking_libs([cres.library])
    _status, ret = fndesc.call_conv.call_function(builder, func, fndesc.restype,
                                                  fndesc.argtypes, values)
    return ret


@lowering_rule("_device_call")
def lower_device_call(context, builder, sig, args):
    fnty, tupty = sig.args
    items = tuple(tupty.types)
    argtypes = argument_types(items)
    cres = compiled_device_function(fnty.dispatcher, argtypes)
    ret = cres.signature.return_type
    values = [builder.extract_value(args[1], k) for k in range(len(items))]
    res = sig.return_type
    if not isinstance(res, TileType):
        return _call(context, builder, cres,
                     [context.cast(builder, v, t, a) for v, t, a in zip(values, items, argtypes)])
    ops = [Operand(context, builder, t, v, t.dtype, res.layout, res.shape)
           if isinstance(t, TileType) else None for t, v in zip(items, values)]
    scalars = [None if isinstance(t, TileType) else context.cast(builder, v, t, a)
               for t, v, a in zip(items, values, argtypes)]
    ct = dtypes.compute_type(res.dtype)
    out = []
    for i in range(res.layout.elems_per_thread):
        call_args = [op.compute(i) if op is not None else s for op, s in zip(ops, scalars)]
        r = _call(context, builder, cres, call_args)
        out.append(from_compute(context, builder, context.cast(builder, r, ret, ct), res.dtype))
    tiles = [(t, v) for t, v in zip(items, values) if isinstance(t, TileType)]
    return make_fragment(builder, res, out, result_extents(builder, tiles, res))
