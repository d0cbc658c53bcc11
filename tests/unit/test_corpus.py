"""Violation corpus: kernels and launches numba_tile must refuse, and tricky ones it must accept.

Two tables drive this file:

* ``REFUSED``: each entry breaks one ownership or typing rule. The test asserts the exact error
  class (``type(err) is cls``), message fragments, the rule text, that no output changed (every
  check runs before any work), and that ``err.lineno`` is the user's line: for errors found
  while compiling, the offending statement inside the kernel; for launch errors, the launch
  line in this file. Those lines end with a marker comment (``# C07``, ``# L12``) naming the
  entry. Entries ``C..`` are refused by typing or the ownership pass; entries ``L..`` by the
  launch checks. Every ``C..`` entry (but C15, which runs only there, and C76, refused at definition) also goes through
  ``kernel.ptx(...)`` (the GPU compile pipeline, no GPU) and must fail there the same way.
  Entries ``D..`` are refused by the interpreter's race detector while an unchecked kernel
  runs; their marked line is the kernel line making the conflicting access.
* ``VALID``: each entry is legal but close to a violation (aliasing views that do not share an
  element, aliases of partitions, branded indices through closures, persistent kernels...). It
  runs in the interpreter and its values are checked against a float64 NumPy reference on fresh
  random data; the same launches, turned into ``kernel.ptx(...)`` calls, must compile.

Everything runs without a GPU: interpreter launches (``interpret=True``) run the same typing,
ownership pass and launch checks as the GPU path.

Known gaps are kept as strict xfails (never weakened): ``NotRefused`` marks a violation numba_tile
accepts, ``WrongLine`` a refusal that does not point at the user's line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import math
import operator

import numba
import numpy as np
import pytest
from llvmlite import ir as llvm_ir
from numba import cuda
from numba.cuda import types
from numba.cuda.extending import (intrinsic, lower_builtin, lower_getattr, type_callable,
                                  typeof_impl)
from numba.cuda.typing.templates import AttributeTemplate
from numpy.lib.stride_tricks import as_strided

import numba_tile as nt
from numba_tile import errors
from numba_tile.dtypes import BFLOAT16_NP
from numba_tile.runtime.fakes import FakeDeviceArray

GPU = nt.gpu_available()
RNG = np.random.default_rng()


# ----------------------------------------------------------------------------- helpers


class NotRefused(AssertionError):
    """A corpus entry that must be refused was accepted."""


class WrongLine(AssertionError):
    """A corpus entry was refused, but the error does not point at the user's line."""


def marker_line(marker: str) -> int:
    """1-based line of this file that ends with the comment ``# <marker>``."""
    with open(__file__) as f:
        hits = [i for i, line in enumerate(f, 1) if line.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, f"marker {marker!r} found on lines {hits}"
    return hits[0]


def randn(*shape, dtype=np.float32):
    """Fresh standard-normal data (never zero in practice)."""
    return RNG.standard_normal(shape).astype(dtype)


def randint(*shape, dtype=np.int32):
    """Fresh nonzero integers in [-1000, 1000]."""
    mag = RNG.integers(1, 1001, shape)
    return (mag * RNG.choice([-1, 1], shape)).astype(dtype)


def nans(*shape, dtype=np.float32):
    """An output whose every element must be written."""
    return np.full(shape, np.nan, dtype)


def f64(a):
    return np.array(a, dtype=np.float64)


def close(got, want, rtol=1e-6, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


@dataclass
class Refusal:
    """launch(): the refused launch (interpreter); guarded: arrays that must stay unchanged;
    compile(): the same kernel and arguments through kernel.ptx() (compile-time entries)."""

    launch: Callable
    guarded: list
    compile: Callable | None = None


def compiled(kernel, guarded, *args):
    """A compile-time refusal: ``kernel(*args)`` in the interpreter and through ``ptx``."""
    return Refusal(lambda: kernel(*args, interpret=True), guarded, lambda: kernel.ptx(*args))


def catch(fn):
    try:
        fn()
    except errors.TileError as e:
        return e
    return None


REFUSED = []
VALID = []


def refused(case_id, cls, *fragments, xfail=None, raises=None):
    """Register a refused entry: ``build() -> Refusal``."""
    def deco(build):
        marks = [pytest.mark.xfail(strict=True, raises=raises, reason=xfail)] if xfail else []
        REFUSED.append(pytest.param(case_id, build, cls, fragments,
                                    id=f"{case_id}-{build.__name__}", marks=marks))
        return build
    return deco


def valid(case_id):
    """Register a valid entry: ``build() -> (launch, check)``."""
    def deco(build):
        VALID.append(pytest.param(build, id=f"{case_id}-{build.__name__}"))
        return build
    return deco




# ============================================================================= kernels
# ----------------------------------------------------------------- shared, legal kernels


@nt.jit
def add_1d(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit
def add_2d(x, y, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit
def scale(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z) * 2.0)


@nt.jit
def two_out(x, z1: nt.Partition, z2: nt.Partition):
    nt.store(z1, nt.load_like(x, z1) + 1.0)
    nt.store(z2, nt.load_like(x, z2) * 3.0)


@nt.jit
def two_out_xy(x, y, z1: nt.Partition, z2: nt.Partition):
    nt.store(z1, nt.load_like(x, z1) + 1.0)
    nt.store(z2, nt.load_like(y, z2) * 2.0)


@nt.jit
def two_mapped(x, a: nt.Partition, b: nt.Partition):
    for idx in nt.tiles(a):
        nt.store(a, nt.load_like(x, a, index=idx) + 1.0, idx)
    for idx in nt.tiles(b):
        nt.store(b, nt.load_like(x, b, index=idx) * 3.0, idx)


@nt.jit
def mapped_and_plain(x, a: nt.Partition, b: nt.Partition):
    for idx in nt.tiles(a):
        nt.store(a, nt.load_like(x, a, index=idx), idx)
    nt.store(b, nt.load_like(x, b))


@nt.jit
def scaled_by_constant(x, z: nt.Partition, S: nt.Constant):
    nt.store(z, nt.load_like(x, z) * S)


@nt.jit
def fixed_tile(x, z: nt.Partition[(4, 8)]):
    nt.store(z, nt.load_like(x, z))


@nt.jit
def fill(z: nt.Partition, V):
    nt.store(z, V)


@nt.jit
def no_partition(x, y):
    nt.load(x, (0,), (16,))


@nt.jit
def persistent_saxpy(alpha, x, y, z: nt.Partition["B"], B: nt.Constant):
    for idx in nt.tiles(z):
        nt.store(z, alpha * nt.load_like(x, z, index=idx) + nt.load(y, idx, (B,)), idx)


# --------------------------------------------------------- C: stores to read-only params


@nt.jit
def c_store_in_for(x, z: nt.Partition, n):
    t = nt.load_like(x, z)
    for i in range(n):
        nt.store(x, t + i)  # C01
    nt.store(z, t)


@nt.jit
def c_store_in_while(x, z: nt.Partition, n):
    t = nt.load_like(x, z)
    i = 0
    while i < n:
        nt.store(x, t)  # C02
        i += 1
    nt.store(z, t)


@nt.jit
def c_store_in_if(x, z: nt.Partition, flag):
    t = nt.load_like(x, z)
    if flag:
        nt.store(x, t)  # C03
    nt.store(z, t)


@nt.jit
def c_store_in_else(x, z: nt.Partition, flag):
    t = nt.load_like(x, z)
    if flag:
        nt.store(z, t)
    else:
        nt.store(x, t)  # C04


@nt.jit
def c_tuple_unpack(x, z: nt.Partition):
    a, b = x, z
    nt.store(a, nt.load_like(x, b))  # C05


@nt.jit
def c_tuple_item(x, z: nt.Partition):
    pair = (z, x)
    nt.store(pair[1], nt.load_like(x, z))  # C06


@nt.jit
def c_list_item(x, z: nt.Partition):
    inputs = [x, x]
    nt.store(inputs[1], nt.load_like(x, z))  # C07


@nt.jit
def c_rebind_partition_name(x, z: nt.Partition):
    t = nt.load_like(x, z)
    z = x
    nt.store(z, t)  # C08


@nt.jit
def c_store_function_alias(x, z: nt.Partition):
    put = nt.store
    put(x, nt.load_like(x, z))  # C09


@nt.jit
def c_store_keywords(x, z: nt.Partition):
    nt.store(tile=nt.load_like(x, z), z=x)  # C10


@nt.jit
def c_closure_captures_input(x, z: nt.Partition):
    def put(t):
        nt.store(x, t)  # C11
    put(nt.load_like(x, z))
    nt.store(z, nt.load_like(x, z))


@nt.jit
def c_closure_argument(x, z: nt.Partition):
    def put(dst, t):
        nt.store(dst, t)  # C12
    put(z, nt.load_like(x, z))
    put(x, nt.load_like(x, z))


def py_store(dst, tile):
    # the helper is inlined (typing/helpers.py); its store is refused at its own line
    nt.store(dst, tile)  # C13


@nt.jit
def c_python_helper(x, z: nt.Partition):
    py_store(x, nt.load_like(x, z))
    nt.store(z, nt.load_like(x, z))


@cuda.jit(device=True)
def dev_helper(a):
    return 0


@nt.jit
def c_device_function(x, z: nt.Partition):
    dev_helper(x)  # C14
    nt.store(z, nt.load_like(x, z))


@intrinsic
def poke_packed(typingctx, pack):
    """An opaque helper that writes 42.0 to element 0 of the tensor packed in ``pack[0]``."""
    def codegen(context, builder, signature, args):
        tensor = builder.extract_value(args[0], 0)
        data = builder.extract_value(tensor, 0)
        builder.store(llvm_ir.Constant(llvm_ir.FloatType(), 42.0), data)
        return context.get_constant(types.int64, 0)
    return types.int64(pack), codegen


@nt.jit
def c_intrinsic_tuple(x, z: nt.Partition):
    poke_packed((x, 1))  # C15
    nt.store(z, nt.load_like(x, z))


@intrinsic
def opaque_star(typingctx, *args):
    def codegen(context, builder, signature, llargs):
        return context.get_constant(types.int64, 0)
    return types.int64(*args), codegen


@nt.jit
def c_intrinsic_star_args(x, z: nt.Partition):
    opaque_star(1, x)  # C16
    nt.store(z, nt.load_like(x, z))


@nt.jit
def c_conditional_alias(x, z: nt.Partition, flag):
    w = z if flag else x  # C17
    nt.store(w, nt.load_like(x, z))


GLOBAL_OUT = np.ones(32, np.float32)


@nt.jit
def c_store_to_global(x, z: nt.Partition):
    nt.store(GLOBAL_OUT, nt.load_like(x, z))  # C18


@nt.jit
def c_inplace_add(x, z: nt.Partition):
    z += nt.load_like(x, z)  # C19


@nt.jit
def c_setitem(x, z: nt.Partition):
    x[0] = 1.0  # C20
    nt.store(z, nt.load_like(x, z))


@nt.jit
def c_setattr(x, z: nt.Partition):
    x.data = 0  # C21
    nt.store(z, nt.load_like(x, z))


# ------------------------------------------------------- C: indices and other partitions


@nt.jit
def c_index_plus_one(x, z: nt.Partition):
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z, index=idx), idx + 1)  # C22


@nt.jit
def c_index_tuple_from_bid(x, z: nt.Partition):
    i = nt.bid(0)
    nt.store(z, nt.load_like(x, z), (i,))  # C23


@nt.jit
def c_index_mirror(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z), nt.num_blocks(0) - 1 - nt.bid(0))  # C24


@nt.jit
def c_index_component(x, z: nt.Partition):
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z, index=idx), (idx[0],))  # C25


@nt.jit
def c_foreign_index(x, z: nt.Partition, w: nt.Partition):
    for iw in nt.tiles(w):
        nt.store(w, nt.load_like(x, w, index=iw), iw)
        nt.store(z, nt.load_like(x, z), iw)  # C26


@nt.jit
def c_foreign_index_nested(x, z: nt.Partition, w: nt.Partition):
    for iz in nt.tiles(z):
        for iw in nt.tiles(w):
            nt.store(z, nt.load_like(x, z, index=iz), iw)  # C27


@nt.jit
def c_load_other_partition_tile(x, z: nt.Partition, w: nt.Partition):
    for iw in nt.tiles(w):
        nt.store(w, nt.load(z, iw), iw)  # C28


@nt.jit
def c_load_like_other_partition(x, z: nt.Partition, w: nt.Partition):
    nt.store(z, nt.load_like(w, z))  # C29
    nt.store(w, nt.load_like(x, w))


@nt.jit
def c_load_like_foreign_index(x, z: nt.Partition, w: nt.Partition):
    for iw in nt.tiles(w):
        nt.store(w, nt.load_like(x, z, index=iw), iw)  # C30


@nt.jit
def c_load_own_tile_by_hand(x, z: nt.Partition):
    nt.store(z, nt.load(z, (nt.bid(0),)) + nt.load_like(x, z))  # C31


@nt.jit
def c_mapped_store_without_index(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load(x, (nt.bid(0),), (B,)))  # C32


@nt.jit
def c_mapped_load_like_without_index(x, z: nt.Partition):
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z), idx)  # C33


@nt.jit
def c_mapped_bid_axis(x, z: nt.Partition):
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z, index=idx) + nt.bid(1), idx)  # C34


@nt.jit
def c_tiles_of_input(x, z: nt.Partition):
    for idx in nt.tiles(x):  # C35
        nt.store(z, nt.load(x, idx, (16,)))


# ------------------------------------------------------------ C: shapes, dtypes, budgets


@nt.jit
def c_wrong_tile_shape(x, z: nt.Partition):
    nt.store(z, nt.load(x, (nt.bid(0),), (8,)))  # C36


@nt.jit
def c_computed_shape(x, z: nt.Partition, B: nt.Constant):
    nt.store(z, nt.load(x, (nt.bid(0),), (2 * B,)))  # C37


@nt.jit
def c_store_partition_as_tile(x, z: nt.Partition, w: nt.Partition):
    nt.store(z, w)  # C38
    nt.store(w, nt.load_like(x, w))


@nt.jit
def c_narrow_f32_to_f16(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z))  # C39


@nt.jit
def c_narrow_i64_to_i32(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z))  # C40


@nt.jit
def c_narrow_through_where(x, z: nt.Partition):
    t = nt.load_like(x, z)
    nt.store(z, nt.where(t > 0, t, 0.5))  # C41


@nt.jit
def c_narrow_bf16_to_f16(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z) * 2.0)  # C42


@nt.jit
def c_scalar_float_into_int(z: nt.Partition):
    nt.store(z, 1.5)  # C43


@nt.jit
def c_scalar_runtime_int64_into_int32(z: nt.Partition, V):
    nt.store(z, V)  # C44


@nt.jit
def c_scalar_two_into_bool(z: nt.Partition):
    nt.store(z, 2)  # C45


@nt.jit
def c_register_budget_load(x, z: nt.Partition):
    nt.store(z, nt.load(x, (0,), (262144,)))  # C46


@nt.jit(num_warps=1)
def c_register_budget_partition(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z))  # C47


# ----------------------------------------------------------------- V: valid kernels


@nt.jit
def v_alias_partition(x, z: nt.Partition):
    w = z
    nt.store(w, nt.load_like(x, w) * 3.0)


@nt.jit
def v_tuple_unpack(x, z: nt.Partition):
    a, b = x, z
    nt.store(b, nt.load_like(a, b) - 1.0)


@nt.jit
def v_rebind_input_name(x, z: nt.Partition):
    t = nt.load_like(x, z)
    x = z
    nt.store(x, t * 2.0)


@nt.jit
def v_closure_store(x, z: nt.Partition):
    def put(t):
        nt.store(z, t)
    put(nt.load_like(x, z) * 4.0)


@nt.jit
def v_closure_branded_index(x, z: nt.Partition):
    def put(t, i):
        nt.store(z, t, i)
    for idx in nt.tiles(z):
        put(nt.load_like(x, z, index=idx) * 2.0, idx)


@nt.jit
def v_store_in_for(x, z: nt.Partition, n):
    t = nt.load_like(x, z)
    for k in range(n):
        nt.store(z, t + k)


@nt.jit
def v_store_in_while(x, z: nt.Partition, n):
    t = nt.load_like(x, z)
    i = 0
    while i < n:
        i += 1
        nt.store(z, t * i)


@nt.jit
def v_store_in_branches(x, z: nt.Partition, flag):
    t = nt.load_like(x, z)
    if flag:
        nt.store(z, t + 1.0)
    else:
        nt.store(z, t - 1.0)


@nt.jit
def v_tiles_of_plain_partition(x, y, z: nt.Partition["B"], B: nt.Constant):
    for idx in nt.tiles(z):
        nt.store(z, nt.load(y, idx, (B,)) + nt.load_like(x, z, index=idx), idx)


@nt.jit
def v_own_tile_at_branded_index(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant,
                                BN: nt.Constant):
    for idx in nt.tiles(z):
        nt.store(z, nt.load(z, idx) * 0.5 + nt.load_like(x, z, index=idx), idx)


@nt.jit
def v_load_like_itself(x, z: nt.Partition):
    nt.store(z, nt.load_like(z, z) - nt.load_like(x, z))


@nt.jit
def v_column_tiles_max(x, out: nt.Partition[("BM", "BK")], BM: nt.Constant, BK: nt.Constant):
    i = nt.bid(0)
    acc = nt.full((BM, BK), -float("inf"))
    for k in range(nt.num_tiles(x, 1, BK)):
        acc = nt.maximum(acc, nt.load(x, (i, k), (BM, BK), padding=-float("inf")))
    nt.store(out, acc)


@nt.jit
def v_stencil_of_input(x, z: nt.Partition["B"], B: nt.Constant):
    i = nt.bid(0)
    nt.store(z, nt.load(x, (i - 1,), (B,), padding=0) + nt.load(x, (i + 1,), (B,), padding=1.0))


@nt.jit
def v_computed_shape(x, y, z: nt.Partition, B: nt.Constant):
    nt.store(z, nt.load(x, (nt.bid(0),), (2 * B,)) + nt.load_like(y, z))


@nt.jit
def v_where_astype_chain(x, z: nt.Partition):
    t = nt.load_like(x, z)
    u = nt.where(t > 0.0, nt.sqrt(t), -t * 0.5)
    nt.store(z, nt.astype(u * 3.0, nt.float16))


@nt.jit(num_warps=8)
def v_big_tile_more_warps(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z) * 2.0)


@nt.jit
def v_int_scalar(x, z: nt.Partition, V):
    nt.store(z, nt.load_like(x, z) * V)


@nt.jit
def v_index_none(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z) + 2.0, None)


# ============================================================================= REFUSED
# ------------------------------------------------------------ compile-time (C) entries

READ_ONLY_X = ("store() writes parameter 'x'", "does not declare mutable")


@refused("C01", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c01_store_to_input_in_for_loop():
    x, z = randn(40), randn(40)
    return compiled(c_store_in_for, [x, z], x, nt.partition(z, 16), 3)


@refused("C02", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c02_store_to_input_in_while_that_never_runs():
    x, z = randn(40), randn(40)
    return compiled(c_store_in_while, [x, z], x, nt.partition(z, 16), 0)


@refused("C03", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c03_store_to_input_in_branch_not_taken():
    x, z = randn(40), randn(40)
    return compiled(c_store_in_if, [x, z], x, nt.partition(z, 16), 0)


@refused("C04", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c04_store_to_input_in_else_not_taken():
    x, z = randn(40), randn(40)
    return compiled(c_store_in_else, [x, z], x, nt.partition(z, 16), True)


@refused("C05", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c05_alias_through_tuple_unpacking():
    x, z = randn(40), randn(40)
    return compiled(c_tuple_unpack, [x, z], x, nt.partition(z, 16))


@refused("C06", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c06_alias_through_tuple_item():
    x, z = randn(40), randn(40)
    return compiled(c_tuple_item, [x, z], x, nt.partition(z, 16))


@refused("C07", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c07_alias_through_list_item():
    x, z = randn(40), randn(40)
    return compiled(c_list_item, [x, z], x, nt.partition(z, 16))


@refused("C08", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c08_partition_name_rebound_to_input():
    x, z = randn(40), randn(40)
    return compiled(c_rebind_partition_name, [x, z], x, nt.partition(z, 16))


@refused("C09", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c09_store_called_through_an_alias():
    x, z = randn(40), randn(40)
    return compiled(c_store_function_alias, [x, z], x, nt.partition(z, 16))


@refused("C10", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c10_store_with_keyword_arguments():
    x, z = randn(40), randn(40)
    return compiled(c_store_keywords, [x, z], x, nt.partition(z, 16))


@refused("C11", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c11_closure_capturing_the_input():
    x, z = randn(40), randn(40)
    return compiled(c_closure_captures_input, [x, z], x, nt.partition(z, 16))


@refused("C12", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c12_closure_given_the_input():
    x, z = randn(40), randn(40)
    return compiled(c_closure_argument, [x, z], x, nt.partition(z, 16))


@refused("C13", errors.StoreToReadOnlyError, "writes parameter 'x'")   # inlined, then checked
def c13_plain_python_helper():
    x, z = randn(40), randn(40)
    return compiled(c_python_helper, [x, z], x, nt.partition(z, 16))


# A device function applied in a kernel takes tiles and scalars (typing/device.py): a tensor
# handed to one is refused at the call's line, with or without a GPU.
@refused("C14", errors.UnanalyzedCallError, "parameter(s) 'x'", "dev_helper")
def c14_numba_cuda_device_function():
    x, z = randn(40), randn(40)
    return compiled(c_device_function, [x, z], x, nt.partition(z, 16))


# A tensor packed in a tuple and handed to an opaque callee is still a tensor handed to it: the
# ownership pass looks inside tuples. (An @intrinsic has no Python body for the interpreter, so
# this entry goes through kernel.ptx().)
@refused("C15", errors.UnanalyzedCallError, "parameter(s) 'x'", "poke_packed()")
def c15_input_packed_in_a_tuple_for_an_intrinsic():
    x, z = randn(40), randn(40)
    return Refusal(lambda: c_intrinsic_tuple.ptx(x, nt.partition(z, 16)), [x, z])


@refused("C16", errors.UnanalyzedCallError, "parameter(s) 'x'", "opaque_star()",
         "only be given to numba_tile ops")
def c16_input_through_star_args_intrinsic():
    x, z = randn(40), randn(40)
    return compiled(c_intrinsic_star_args, [x, z], x, nt.partition(z, 16))


@refused("C17", errors.TileTypingError, "Cannot unify", "param=z", "param=x")
def c17_alias_chosen_by_a_branch():
    x, z = randn(40), randn(40)
    return compiled(c_conditional_alias, [x, z], x, nt.partition(z, 16), 1)


@refused("C18", errors.TileTypingError, 'Invalid argument "z" of store()',
         "expected a partition parameter", "readonly array")
def c18_store_to_a_global_array():
    x, z = randn(40), randn(40)
    return compiled(c_store_to_global, [x, z, GLOBAL_OUT], x, nt.partition(z, 16))


@refused("C19", errors.TileTypingError, "of +(): expected a tile and a tile or scalar",
         "write the result with nt.store(z, ...)", "got Partition[")
def c19_inplace_add_to_partition():
    x, z = randn(40), randn(40)
    return compiled(c_inplace_add, [x, z], x, nt.partition(z, 16))


@refused("C20", errors.TileTypingError, "setitem(Tensor[", "param=x")
def c20_element_assignment_to_input():
    x, z = randn(40), randn(40)
    return compiled(c_setitem, [x, z], x, nt.partition(z, 16))


@refused("C21", errors.TileTypingError, "Cannot resolve setattr", "param=x")
def c21_attribute_assignment_to_input():
    x, z = randn(40), randn(40)
    return compiled(c_setattr, [x, z], x, nt.partition(z, 16))


@refused("C22", errors.TileTypingError, "add(PartitionIndex[z, 1d]")
def c22_branded_index_plus_one():
    x, z = randn(40), randn(40)
    return compiled(c_index_plus_one, [x, z], x, nt.partition(z, 16, blocks=2))


@refused("C23", errors.ForeignTileStoreError, "store() to partition 'z'", "built by hand",
         "tiles(z)")
def c23_index_tuple_built_from_bid():
    x, z = randn(40), randn(40)
    return compiled(c_index_tuple_from_bid, [x, z], x, nt.partition(z, 16))


@refused("C24", errors.ForeignTileStoreError, "built by hand (int64)")
def c24_index_laundered_through_arithmetic():
    x, z = randn(40), randn(40)
    return compiled(c_index_mirror, [x, z], x, nt.partition(z, 16))


@refused("C25", errors.ForeignTileStoreError, "store() to partition 'z'",
         "built by hand (UniTuple(int64 x 1))")
def c25_index_rebuilt_from_its_component():
    x, z = randn(40), randn(40)
    return compiled(c_index_component, [x, z], x, nt.partition(z, 16, blocks=2))


@refused("C26", errors.ForeignTileStoreError, "store() to partition 'z'",
         "index of partition 'w'", "tiles(z)")
def c26_index_minted_for_another_partition():
    x, z, w = randn(40), randn(40), randn(40)
    return compiled(c_foreign_index, [x, z, w], x, nt.partition(z, 16), nt.partition(w, 16))


@refused("C27", errors.ForeignTileStoreError, "index of partition 'w'")
def c27_index_from_inner_loop_over_another_partition():
    x, z, w = randn(40), randn(40), randn(40)
    return compiled(c_foreign_index_nested, [x, z, w], x, nt.partition(z, 16, blocks=2),
                    nt.partition(w, 16, blocks=2))


@refused("C28", errors.TileTypingError, '"index" of load()', "an index from tiles(z)",
         "index of partition 'w'")
def c28_read_another_partitions_tile():
    x, z, w = randn(40), randn(40), randn(40)
    return compiled(c_load_other_partition_tile, [x, z, w], x, nt.partition(z, 16),
                    nt.partition(w, 16))


@refused("C29", errors.TileTypingError, '"x" of load_like()',
         "reading another partition's tile", "got w")
def c29_load_like_of_another_partition():
    x, z, w = randn(40), randn(40), randn(40)
    return compiled(c_load_like_other_partition, [x, z, w], x, nt.partition(z, 16),
                    nt.partition(w, 16))


@refused("C30", errors.TileTypingError, '"index" of load_like()', "an index from tiles(z)",
         "index of partition 'w'")
def c30_load_like_at_another_partitions_index():
    x, z, w = randn(40), randn(40), randn(40)
    return compiled(c_load_like_foreign_index, [x, z, w], x, nt.partition(z, 16),
                    nt.partition(w, 16))


@refused("C31", errors.TileTypingError, '"index" of load()', "an index from tiles(z)")
def c31_own_tile_index_computed_by_hand():
    x, z = randn(40), randn(40)
    return compiled(c_load_own_tile_by_hand, [x, z], x, nt.partition(z, 16))


@refused("C32", errors.TileTypingError, '"index" of store()',
         "'z' is mapped onto a fixed number of blocks")
def c32_mapped_partition_stored_without_index():
    x, z = randn(40), randn(40)
    return compiled(c_mapped_store_without_index, [x, z], x, nt.partition(z, 16, blocks=2), 16)


@refused("C33", errors.TileTypingError, '"index" of load_like()',
         "'z' is mapped onto a fixed number of blocks")
def c33_mapped_partition_loaded_without_index():
    x, z = randn(40), randn(40)
    return compiled(c_mapped_load_like_without_index, [x, z], x, nt.partition(z, 16, blocks=2))


@refused("C34", errors.TileTypingError, '"axis" of bid()', "a static integer in [0, 1)")
def c34_second_grid_axis_of_a_mapped_2d_partition():
    x, z = randn(16, 16), randn(16, 16)
    return compiled(c_mapped_bid_axis, [x, z], x, nt.partition(z, (8, 8), blocks=2))


@refused("C35", errors.TileTypingError, '"z" of tiles()', "a partition parameter",
         "param=x")
def c35_tiles_of_a_read_only_tensor():
    x, z = randn(40), randn(40)
    return compiled(c_tiles_of_input, [x, z], x, nt.partition(z, 16))


@refused("C36", errors.TileTypingError, '"tile" of store()', "a tile of shape (16,)",
         "got (8,)")
def c36_tile_shape_differs_from_partition():
    x, z = randn(40), randn(40)
    return compiled(c_wrong_tile_shape, [x, z], x, nt.partition(z, 16))


@refused("C37", errors.TileTypingError, '"shape" of load()', "power of two", "(6,)")
def c37_computed_shape_not_a_power_of_two():
    x, z = randn(40), randn(40)
    return compiled(c_computed_shape, [x, z], x, nt.partition(z, 8), 3)


@refused("C38", errors.TileTypingError, '"tile" of store()', "a tile or a scalar",
         "param=w")
def c38_partition_stored_as_a_tile():
    x, z, w = randn(40), randn(40), randn(40)
    return compiled(c_store_partition_as_tile, [x, z, w], x, nt.partition(z, 16),
                    nt.partition(w, 16))


@refused("C39", errors.TileTypingError, "float16 holds without narrowing", "'z'",
         "a tile of float32")
def c39_narrowing_float32_into_float16():
    x, z = randn(40), randn(40, dtype=np.float16)
    return compiled(c_narrow_f32_to_f16, [x, z], x, nt.partition(z, 16))


@refused("C40", errors.TileTypingError, "int32 holds without narrowing", "a tile of int64")
def c40_narrowing_int64_into_int32():
    x, z = randint(40, dtype=np.int64), randint(40)
    return compiled(c_narrow_i64_to_i32, [x, z], x, nt.partition(z, 16))


@refused("C41", errors.TileTypingError, "int32 holds without narrowing", "a tile of float32")
def c41_narrowing_hidden_in_where_promotion():
    x, z = randint(40), randint(40)
    return compiled(c_narrow_through_where, [x, z], x, nt.partition(z, 16))


@refused("C42", errors.TileTypingError, "float16 holds without narrowing", "got a tile of",
         "bfloat16")
def c42_narrowing_bfloat16_into_float16():
    x, z = randn(40).astype(BFLOAT16_NP), randn(40, dtype=np.float16)
    return compiled(c_narrow_bf16_to_f16, [x, z], x, nt.partition(z, 16))


@refused("C43", errors.TileTypingError, '"tile" of store()', "a scalar that int32 holds")
def c43_float_literal_into_int32():
    z = randint(40)
    return compiled(c_scalar_float_into_int, [z], nt.partition(z, 16))


@refused("C44", errors.TileTypingError, "a scalar that int32 holds", "int64")
def c44_runtime_int64_scalar_into_int32():
    z = randint(40)
    return compiled(c_scalar_runtime_int64_into_int32, [z], nt.partition(z, 16), 2**40)


@refused("C45", errors.TileTypingError, "a scalar that bool holds")
def c45_int_literal_2_into_bool():
    z = RNG.integers(0, 2, 40).astype(np.bool_)
    return compiled(c_scalar_two_into_bool, [z], nt.partition(z, 16))


@refused("C46", errors.TileTypingError, "(262144,) over 128 threads", "2048 elements",
         "more than 1024", "num_warps=8 or more")
def c46_tile_beyond_register_budget():
    x, z = randn(270000), randn(40)
    return compiled(c_register_budget_load, [x, z], x, nt.partition(z, 16))


@refused("C47", errors.TileTypingError, "(65536,) over 32 threads", "2048 elements")
def c47_partition_tile_beyond_budget_of_one_warp():
    x, z = randn(70000), randn(70000)
    return compiled(c_register_budget_partition, [x, z], x, nt.partition(z, 65536))


# --------------------------------------------------------------- launch-time (L) entries
# Each launch sits on one line that ends with its marker: a launch error points there.


@refused("L01", errors.AliasingError, "kernel 'add_1d'",
         "mutable argument 'z' overlaps read-only argument 'x'")
def l01_output_also_passed_as_input():
    buf, y = randn(40), randn(40)

    def launch():
        add_1d(buf, y, nt.partition(buf, 16), 16, interpret=True)  # L01
    return Refusal(launch, [buf, y])


@refused("L02", errors.AliasingError, "mutable argument 'z' overlaps read-only argument 'x'")
def l02_reshape_and_transpose_of_the_output():
    buf = randn(32)
    z, x = buf.reshape(4, 8), buf.reshape(8, 4).T       # both (4, 8), same 32 floats

    def launch():
        scale(x, nt.partition(z, (2, 8)), interpret=True)  # L02
    return Refusal(launch, [buf])


@refused("L03", errors.AliasingError, "mutable argument 'z' overlaps read-only argument 'y'")
def l03_transpose_of_the_output_as_second_input():
    a, w = randn(4, 4), randn(4, 4)

    def launch():
        add_2d(w, a.T, nt.partition(a, (2, 2)), 2, 2, interpret=True)  # L03
    return Refusal(launch, [a, w])


@refused("L04", errors.AliasingError, "mutable argument 'z' overlaps read-only argument 'x'")
def l04_overlapping_2d_blocks():
    a = randn(8, 8)
    z, x, y = a[0:4, 0:4], a[2:6, 2:6], a[4:8, 4:8]      # x shares a[2:4, 2:4] with z

    def launch():
        add_2d(x, y, nt.partition(z, (2, 2)), 2, 2, interpret=True)  # L04
    return Refusal(launch, [a])


@refused("L05", errors.AliasingError, "mutable argument 'z' overlaps read-only argument 'x'")
def l05_reversed_output_and_even_input():
    buf = randn(16)

    def launch():
        scale(buf[::2], nt.partition(buf[::-1], 4), interpret=True)  # L05
    return Refusal(launch, [buf])


@refused("L06", errors.AliasingError, "mutable argument 'z' overlaps read-only argument 'x'")
def l06_negative_strides_in_2d():
    a = randn(8, 8)

    def launch():
        scale(a[2:4, 2:6], nt.partition(a[::-1, ::-1], (2, 2)), interpret=True)  # L06
    return Refusal(launch, [a])


@refused("L07", errors.AliasingError, "mutable argument 'z' overlaps read-only argument 'x'")
def l07_strided_views_that_meet_every_sixth_element():
    buf = randn(30)

    def launch():
        scale(buf[::2], nt.partition(buf[::3], 4), interpret=True)  # L07
    return Refusal(launch, [buf])


@refused("L08", errors.AliasingError, "mutable argument 'z' overlaps read-only argument 'x'")
def l08_stride0_broadcast_of_one_output_element():
    z, y = randn(16), randn(16)
    xb = np.broadcast_to(z[3:4], (16,))

    def launch():
        add_1d(xb, y, nt.partition(z, 4), 4, interpret=True)  # L08
    return Refusal(launch, [z, y])


@refused("L09", errors.AliasingError, "mutable argument 'z' overlaps read-only argument 'x'")
def l09_same_bytes_viewed_as_another_dtype():
    buf, y = randn(16), randn(16)
    as_int = buf.view(np.int32)

    def launch():
        add_1d(as_int, y, nt.partition(buf, 4), 4, interpret=True)  # L09
    return Refusal(launch, [buf, y])


@refused("L10", errors.AliasingError, "mutable argument 'z1' overlaps mutable argument 'z2'")
def l10_one_array_given_to_two_partition_parameters():
    x, buf = randn(32), randn(32)

    def launch():
        two_out(x, nt.partition(buf, 8), nt.partition(buf, 8), interpret=True)  # L10
    return Refusal(launch, [x, buf])


@refused("L11", errors.AliasingError, "mutable argument 'z1' overlaps mutable argument 'z2'")
def l11_one_partition_object_passed_twice():
    x, buf = randn(32), randn(32)
    p = nt.partition(buf, 8)

    def launch():
        two_out(x, p, p, interpret=True)  # L11
    return Refusal(launch, [x, buf])


@refused("L12", errors.AliasingError, "mutable argument 'z1' overlaps mutable argument 'z2'")
def l12_one_array_as_two_partitions_of_different_tiles():
    x, buf = randn(32), randn(32)

    def launch():
        two_out(x, nt.partition(buf, 8), nt.partition(buf, 16), interpret=True)  # L12
    return Refusal(launch, [x, buf])


@refused("L13", errors.AliasingError, "mutable argument 'z1' overlaps mutable argument 'z2'")
def l13_two_outputs_sharing_four_elements():
    x, buf = randn(20), randn(40)
    z1, z2 = buf[0:20], buf[16:36]

    def launch():
        two_out(x, nt.partition(z1, 4), nt.partition(z2, 4), interpret=True)  # L13
    return Refusal(launch, [x, buf])


@refused("L14", errors.SelfOverlapError, "mutable argument 'z' overlaps itself", "(0,)")
def l14_stride0_output():
    one, x = randn(1), randn(4)
    out = as_strided(one, (4,), (0,), writeable=True)

    def launch():
        add_1d(x, x, nt.partition(out, 4), 4, interpret=True)  # L14
    return Refusal(launch, [one, x])


@refused("L15", errors.SelfOverlapError, "mutable argument 'z' overlaps itself",
         "shape (4, 4) with byte strides (4, 4)")
def l15_as_strided_sliding_window_output():
    base, x = randn(8), randn(4, 4)
    win = as_strided(base, (4, 4), (4, 4), writeable=True)

    def launch():
        scale(x, nt.partition(win, (2, 2)), interpret=True)  # L15
    return Refusal(launch, [base, x])


@refused("L16", errors.SelfOverlapError, "mutable argument 'z' overlaps itself",
         "byte strides (4,)")
def l16_float64_elements_four_bytes_apart():
    base, x = randn(8, dtype=np.float64), randn(8, dtype=np.float64)
    half = as_strided(base, (8,), (4,), writeable=True)

    def launch():
        scale(x, nt.partition(half, 4), interpret=True)  # L16
    return Refusal(launch, [base, x])


@refused("L17", errors.ReadOnlyProducerError, "mutable argument 'z'",
         "read-only by its producer (numpy.ndarray)")
def l17_non_writeable_output():
    x, z = randn(16), randn(16)
    z.flags.writeable = False

    def launch():
        add_1d(x, x, nt.partition(z, 4), 4, interpret=True)  # L17
    return Refusal(launch, [x, z])


@refused("L18", errors.ReadOnlyProducerError, "mutable argument 'z'", "read-only by its producer")
def l18_broadcast_output_with_only_an_extent1_axis():
    o, x = randn(4), randn(1, 4)
    b = np.broadcast_to(o, (1, 4))            # no element repeats, but NumPy marks it read-only

    def launch():
        add_2d(x, x, nt.partition(b, (1, 4)), 1, 4, interpret=True)  # L18
    return Refusal(launch, [o, x])


@refused("L19", errors.UnexpectedPartitionError, "read-only parameter 'x' received a partition")
def l19_partition_to_read_only_parameter():
    x, y, z = randn(16), randn(16), randn(16)

    def launch():
        add_1d(nt.partition(x, 4), y, nt.partition(z, 4), 4, interpret=True)  # L19
    return Refusal(launch, [x, y, z])


@refused("L20", errors.TileArgumentError, "argument 'S'",
         "a constant parameter received a partition")
def l20_partition_to_constant_parameter():
    x, z, w = randn(16), randn(16), randn(16)

    def launch():
        scaled_by_constant(x, nt.partition(z, 4), nt.partition(w, 4), interpret=True)  # L20
    return Refusal(launch, [x, z, w])


@refused("L21", errors.MissingPartitionError,
         "mutable parameter 'z' received a plain numpy.ndarray", "partition(array, tile_shape)")
def l21_plain_array_to_partition_parameter():
    x, z = randn(16), randn(16)

    def launch():
        add_1d(x, x, z, 4, interpret=True)  # L21
    return Refusal(launch, [x, z])


@refused("L22", errors.PartitionShapeError,
         "partition 'z' has tile shape (256,); the kernel declares (512,)")
def l22_tile_shape_differs_from_declared():
    x, z = randn(1000), randn(1000)

    def launch():
        add_1d(x, x, nt.partition(z, 256), 512, interpret=True)  # L22
    return Refusal(launch, [x, z])


@refused("L23", errors.PartitionShapeError, "rank-2 tile shape (16, 32)", "rank-1 array")
def l23_tile_rank_differs_from_array():
    x, z = randn(100), randn(100)

    def launch():
        add_1d(x, x, nt.partition(z, (16, 32)), 16, interpret=True)  # L23
    return Refusal(launch, [x, z])


@refused("L24", errors.PartitionShapeError, "has tile shape (8, 4); the kernel declares (4, 8)")
def l24_literal_declared_tile_transposed():
    x, z = randn(16, 16), randn(16, 16)

    def launch():
        fixed_tile(x, nt.partition(z, (8, 4)), interpret=True)  # L24
    return Refusal(launch, [x, z])


@refused("L25", errors.GridMismatchError, "partitions 'z1'", "'z2'", "grid (4,)", "grid (2,)")
def l25_grid_mismatch():
    x, z1, z2 = randn(100), randn(100), randn(100)

    def launch():
        two_out(x, nt.partition(z1, 32), nt.partition(z2, 64), interpret=True)  # L25
    return Refusal(launch, [x, z1, z2])


@refused("L26", errors.GridMismatchError, "grid (4,)", "grid (5,)")
def l26_mapped_grid_mismatch():
    x, a, b = randn(1000), randn(1000), randn(1000)
    pa, pb = nt.partition(a, 256, blocks=4), nt.partition(b, 256, blocks=5)

    def launch():
        two_mapped(x, pa, pb, interpret=True)  # L26
    return Refusal(launch, [x, a, b])


@refused("L27", errors.GridMismatchError, "partitions 'a'", "'b'", "grid (4,)", "grid (8,)")
def l27_mapped_against_plain_grid():
    x, a, b = randn(32), randn(32), randn(32)

    def launch():
        mapped_and_plain(x, nt.partition(a, 4, blocks=4), nt.partition(b, 4), interpret=True)  # L27
    return Refusal(launch, [x, a, b])


@refused("L28", errors.GridMismatchError, "grid (2, 2)", "grid (4,)")
def l28_2d_grid_against_1d_grid_of_as_many_blocks():
    x, y, z1, z2 = randn(8, 8), randn(16), randn(8, 8), randn(16)
    p1, p2 = nt.partition(z1, (4, 4)), nt.partition(z2, 4)

    def launch():
        two_out_xy(x, y, p1, p2, interpret=True)  # L28
    return Refusal(launch, [x, y, z1, z2])


@refused("L29", errors.TileArgumentError, "on_conflict: expected 'wait' or 'raise'", "'ignore'",)
def l29_on_conflict_unknown_value():
    x, z = randn(16), randn(16)

    def launch():
        add_1d(x, x, nt.partition(z, 4), 4, interpret=True, on_conflict="ignore")  # L29
    return Refusal(launch, [x, z])


@refused("L30", errors.TileArgumentError, "on_conflict: expected 'wait' or 'raise'", "'RAISE'",)
def l30_on_conflict_is_case_sensitive():
    x, z = randn(16), randn(16)

    def launch():
        add_1d(x, x, nt.partition(z, 4), 4, interpret=True, on_conflict="RAISE")  # L30
    return Refusal(launch, [x, z])


@refused("L31", errors.TileArgumentError, "argument 'V'", "does not fit in 64 bits",)
def l31_scalar_beyond_64_bits():
    z = randint(16, dtype=np.int64)

    def launch():
        fill(nt.partition(z, 16), 2**70, interpret=True)  # L31
    return Refusal(launch, [z])


@refused("L32", errors.TileArgumentError, "kernel 'no_partition' has no Partition parameter",)
def l32_kernel_without_partition_parameter():
    x, y = randn(16), randn(16)

    def launch():
        no_partition(x, y, interpret=True)  # L32
    return Refusal(launch, [x, y])


@refused("L33", errors.TileArgumentError, "every tile extent must be a positive power of two",
         "got 12")
def l33_tile_extent_not_a_power_of_two():
    x, z = randn(48), randn(48)

    def launch():
        add_1d(x, x, nt.partition(z, 12), 12, interpret=True)  # L33
    return Refusal(launch, [x, z])


@refused("L34", errors.HostArrayError, "argument 'x'",
         "NumPy arrays, PyTorch CPU tensors) run only in interpreter mode")
def l34_numpy_arrays_on_the_gpu_path():
    x, z = randn(16), randn(16)

    def launch():
        add_1d(x, x, nt.partition(z, 4), 4, interpret=False)  # L34
    return Refusal(launch, [x, z])


# ============================================================================= VALID
# ------------------------------------------------------------- views that do not overlap


@valid("V01")
def v01_interleaved_views():
    buf, y = randn(22), randn(11)
    b0 = f64(buf)

    def launch():
        add_1d(buf[1::2], y, nt.partition(buf[0::2], 4), 4, interpret=True)

    def check():
        want = b0.copy()
        want[0::2] = b0[1::2] + y
        close(buf, want)
    return launch, check


@valid("V02")
def v02_interleaved_columns_2d():
    a = randn(6, 10)
    a0 = f64(a)

    def launch():
        scale(a[:, 1::2], nt.partition(a[:, ::2], (2, 4)), interpret=True)

    def check():
        want = a0.copy()
        want[:, ::2] = 2 * a0[:, 1::2]
        close(a, want)
    return launch, check


@valid("V03")
def v03_2d_blocks_whose_byte_ranges_interleave():
    a = randn(8, 8)
    a0 = f64(a)

    def launch():
        add_2d(a[4:8, 4:8], a[0:4, 4:8], nt.partition(a[0:4, 0:4], (2, 2)), 2, 2, interpret=True)

    def check():
        want = a0.copy()
        want[0:4, 0:4] = a0[4:8, 4:8] + a0[0:4, 4:8]
        close(a, want)
    return launch, check


@valid("V04")
def v04_reversed_even_columns_against_odd_columns():
    a = randn(6, 8, dtype=np.float64)
    a0 = a.copy()

    def launch():
        scale(a[:, 1::2], nt.partition(a[::-1, ::2], (2, 2)), interpret=True)

    def check():
        want = a0.copy()
        want[::-1, ::2] = 2 * a0[:, 1::2]
        close(a, want, rtol=1e-15, atol=0)
    return launch, check


@valid("V05")
def v05_as_strided_output_that_needs_the_exact_test():
    """Element (i, j) at element offset 2i + 3j: offsets 0, 3, 2, 5, 4, 7, all distinct."""
    base, x = randn(16), randn(3, 2)
    b0 = f64(base)
    out = as_strided(base, (3, 2), (8, 12), writeable=True)

    def launch():
        scale(x, nt.partition(out, (1, 2)), interpret=True)

    def check():
        want = b0.copy()
        for i in range(3):
            for j in range(2):
                want[2 * i + 3 * j] = 2 * float(x[i, j])
        close(base, want)
    return launch, check


@valid("V06")
def v06_fortran_order_output():
    zt, x = nans(8, 6), randn(6, 8)

    def launch():
        scale(x, nt.partition(zt.T, (2, 4)), interpret=True)

    def check():
        close(zt.T, 2 * f64(x))
    return launch, check


@valid("V07")
def v07_disjoint_halves_as_two_outputs():
    x, buf = randn(32), nans(64)

    def launch():
        two_out(x, nt.partition(buf[:32], 8), nt.partition(buf[32:], 8), interpret=True)

    def check():
        close(buf[:32], f64(x) + 1)
        close(buf[32:], 3 * f64(x))
    return launch, check


@valid("V08")
def v08_one_input_as_two_read_only_parameters():
    x, z = randn(50), nans(50)

    def launch():
        add_1d(x, x, nt.partition(z, 16), 16, interpret=True)

    def check():
        close(z, 2 * f64(x))
    return launch, check


@valid("V09")
def v09_matrix_and_its_transpose_as_inputs():
    a, z = randn(8, 8), nans(8, 8)
    a0 = f64(a)

    def launch():
        add_2d(a, a.T, nt.partition(z, (4, 4)), 4, 4, interpret=True)

    def check():
        close(z, a0 + a0.T)
        close(a, a0, rtol=0, atol=0)
    return launch, check


@valid("V10")
def v10_stride0_broadcast_input():
    v, y, z = randn(1), randn(13), nans(13)

    def launch():
        add_1d(np.broadcast_to(v, (13,)), y, nt.partition(z, 4), 4, interpret=True)

    def check():
        close(z, float(v[0]) + f64(y))
    return launch, check


@valid("V11")
def v11_non_writeable_input():
    x, y, z = randn(20), randn(20), nans(20)
    x.flags.writeable = False

    def launch():
        add_1d(x, y, nt.partition(z, 8), 8, interpret=True)

    def check():
        close(z, f64(x) + f64(y))
    return launch, check


@valid("V12")
def v12_other_half_viewed_as_int32_input():
    buf, y = randn(16), randn(8)
    b0 = f64(buf)
    as_int = buf[8:].view(np.int32).copy()

    def launch():
        add_1d(buf[8:].view(np.int32), y, nt.partition(buf[:8], 4), 4, interpret=True)

    def check():
        want = b0.copy()
        want[:8] = as_int.astype(np.float64) + f64(y)
        close(buf, want)
    return launch, check


# ------------------------------------------------------ aliases, closures, control flow


@valid("V13")
def v13_alias_of_partition_stored_through():
    x, z = randn(40), nans(40)

    def launch():
        v_alias_partition(x, nt.partition(z, 16), interpret=True)

    def check():
        close(z, 3 * f64(x))
    return launch, check


@valid("V14")
def v14_tuple_unpacked_partition_stored_through():
    x, z = randn(40), nans(40)

    def launch():
        v_tuple_unpack(x, nt.partition(z, 16), interpret=True)

    def check():
        close(z, f64(x) - 1)
    return launch, check


@valid("V15")
def v15_input_name_rebound_to_the_partition():
    x, z = randn(40), nans(40)

    def launch():
        v_rebind_input_name(x, nt.partition(z, 16), interpret=True)

    def check():
        close(z, 2 * f64(x))
    return launch, check


@valid("V16")
def v16_closure_storing_to_the_partition():
    x, z = randn(40), nans(40)

    def launch():
        v_closure_store(x, nt.partition(z, 16), interpret=True)

    def check():
        close(z, 4 * f64(x))
    return launch, check


@valid("V17")
def v17_closure_given_a_branded_index():
    x, z = randn(100), nans(100)

    def launch():
        v_closure_branded_index(x, nt.partition(z, 8, blocks=3), interpret=True)

    def check():
        close(z, 2 * f64(x))
    return launch, check


@valid("V18")
def v18_stores_to_partition_in_a_for_loop():
    x, z = randn(40), nans(40)

    def launch():
        v_store_in_for(x, nt.partition(z, 16), 4, interpret=True)

    def check():
        close(z, f64(x) + 3)
    return launch, check


@valid("V19")
def v19_stores_to_partition_in_a_while_loop():
    x, z = randn(40), nans(40)

    def launch():
        v_store_in_while(x, nt.partition(z, 16), 3, interpret=True)

    def check():
        close(z, 3 * f64(x))
    return launch, check


@valid("V20")
def v20_store_in_taken_branch():
    x, z = randn(40), nans(40)

    def launch():
        v_store_in_branches(x, nt.partition(z, 16), True, interpret=True)

    def check():
        close(z, f64(x) + 1)
    return launch, check


@valid("V21")
def v21_store_in_else_branch():
    x, z = randn(40), nans(40)

    def launch():
        v_store_in_branches(x, nt.partition(z, 16), False, interpret=True)

    def check():
        close(z, f64(x) - 1)
    return launch, check


@valid("V22")
def v22_store_with_index_none():
    x, z = randn(40), nans(40)

    def launch():
        v_index_none(x, nt.partition(z, 16), interpret=True)

    def check():
        close(z, f64(x) + 2)
    return launch, check


# ------------------------------------------------------------- persistent and branded


def _persistent(case_id, blocks):
    def build():
        n = 1000                      # 8 tiles of 128, the last one partial
        x, y, z = randn(n), randn(n), nans(n)

        def launch():
            persistent_saxpy(1.5, x, y, nt.partition(z, 128, blocks=blocks), 128, interpret=True)

        def check():
            close(z, 1.5 * f64(x) + f64(y))
        return launch, check
    build.__name__ = f"v_persistent_saxpy_blocks_{blocks}"
    return valid(case_id)(build)


for _id, _blocks in [("V23", 1), ("V24", 3), ("V25", 7), ("V26", 64)]:   # 64 > 8 tiles
    _persistent(_id, _blocks)


@valid("V27")
def v27_two_mapped_partitions_with_different_tiles():
    x, a, b = randn(1000), nans(1000), nans(1000)

    def launch():
        two_mapped(x, nt.partition(a, 256, blocks=4), nt.partition(b, 128, blocks=4),
                   interpret=True)

    def check():
        close(a, f64(x) + 1)
        close(b, 3 * f64(x))
    return launch, check


@valid("V28")
def v28_tiles_of_a_plain_partition():
    x, y, z = randn(70), randn(70), nans(70)

    def launch():
        v_tiles_of_plain_partition(x, y, nt.partition(z, 16), 16, interpret=True)

    def check():
        close(z, f64(x) + f64(y))
    return launch, check


@valid("V29")
def v29_own_tile_loaded_at_branded_index():
    x, z = randn(37, 70), randn(37, 70)
    z0 = f64(z)

    def launch():
        v_own_tile_at_branded_index(x, nt.partition(z, (8, 16), blocks=3), 8, 16, interpret=True)

    def check():
        close(z, 0.5 * z0 + f64(x))
    return launch, check


@valid("V30")
def v30_load_like_of_the_partition_itself():
    x, z = randn(40), randn(40)
    z0 = f64(z)

    def launch():
        v_load_like_itself(x, nt.partition(z, 16), interpret=True)

    def check():
        close(z, z0 - f64(x))
    return launch, check


@valid("V31")
def v31_num_tiles_loop_with_minus_inf_padding():
    rows, cols, bm, bk = 20, 100, 8, 32
    x, out = randn(rows, cols), nans(rows, bk)

    def launch():
        v_column_tiles_max(x, nt.partition(out, (bm, bk)), bm, bk, interpret=True)

    def check():
        padded = np.full((rows, -(-cols // bk) * bk), -np.inf)
        padded[:, :cols] = x
        close(out, padded.reshape(rows, -1, bk).max(axis=1), rtol=0, atol=0)
    return launch, check


@valid("V32")
def v32_hand_built_indices_into_a_read_only_tensor():
    n, b = 50, 8
    x, z = randn(n), nans(n)

    def launch():
        v_stencil_of_input(x, nt.partition(z, b), b, interpret=True)

    def check():
        xs = f64(x)
        left = np.concatenate([np.zeros(b), xs])[:n]           # tile i - 1, zero padding
        right = np.concatenate([xs[b:], np.ones(b)])[:n]       # tile i + 1, padding 1.0
        close(z, left + right)
    return launch, check


# ------------------------------------------------------- shapes, dtypes, budgets, sizes


@valid("V33")
def v33_computed_tile_shape():
    x, y, z = randn(50), randn(50), nans(50)

    def launch():
        v_computed_shape(x, y, nt.partition(z, 16), 8, interpret=True)

    def check():
        close(z, f64(x) + f64(y))
    return launch, check


@valid("V34")
def v34_where_astype_chain_into_float16():
    x, z = randn(40), nans(40, dtype=np.float16)

    def launch():
        v_where_astype_chain(x, nt.partition(z, 16), interpret=True)

    def check():
        xs = f64(x)
        want = 3 * np.where(xs > 0, np.sqrt(np.abs(xs)), -0.5 * xs)
        close(z, want, rtol=2e-3, atol=1e-4)
    return launch, check


@valid("V35")
def v35_zero_size_1d():
    guard = randn(8)
    g0 = guard.copy()
    z = guard[4:4]
    x = randn(0)

    def launch():
        handle = add_1d(x, x, nt.partition(z, 16), 16, interpret=True)
        assert handle.done() and handle.sync()[2] is z

    def check():
        assert z.shape == (0,)
        np.testing.assert_array_equal(guard, g0)
    return launch, check


@valid("V36")
def v36_zero_size_2d():
    guard = randn(8)
    g0 = guard.copy()
    z = guard[4:4].reshape(5, 0)
    x = randn(5, 0)

    def launch():
        add_2d(x, x, nt.partition(z, (4, 4)), 4, 4, interpret=True)

    def check():
        assert z.shape == (5, 0)
        np.testing.assert_array_equal(guard, g0)
    return launch, check


@valid("V37")
def v37_large_tile_fits_with_more_warps():
    x, z = randn(70000), nans(70000)

    def launch():
        v_big_tile_more_warps(x, nt.partition(z, 65536), interpret=True)

    def check():
        close(z, 2 * f64(x))
    return launch, check


@valid("V38")
def v38_int_scalar_that_fits():
    x, z = randint(40), np.full(40, -7, np.int32)

    def launch():
        v_int_scalar(x, nt.partition(z, 16), 7, interpret=True)

    def check():
        np.testing.assert_array_equal(z.astype(np.int64), 7 * x.astype(np.int64))
    return launch, check


@valid("V39")
def v39_two_2d_partitions_of_different_shapes_one_grid():
    x, y = randn(8, 8), randn(4, 16)
    z1, z2 = nans(8, 8), nans(4, 16)

    def launch():
        two_out_xy(x, y, nt.partition(z1, (4, 4)), nt.partition(z2, (2, 8)), interpret=True)

    def check():
        close(z1, f64(x) + 1)
        close(z2, 2 * f64(y))
    return launch, check


@valid("V40")
def v40_on_conflict_raise_with_nothing_in_flight():
    x, y, z = randn(30), randn(30), nans(30)

    def launch():
        add_1d(x, y, nt.partition(z, 8), 8, interpret=True, on_conflict="raise", stream=None)

    def check():
        close(z, f64(x) + f64(y))
    return launch, check


# ------------------------------------------------------- unchecked kernels and their ops

@nt.jit
def u_safe_atomic(x, z: nt.Partition):
    nt.atomic_add(z, nt.arange(16), nt.load_like(x, z))  # C48


@nt.jit
def u_safe_gather(x, z: nt.Partition):
    # from a read-only tensor gather() is safe (tests/gpu/test_safe_gather.py); from the
    # partition the kernel writes, another block's stores could race with the read
    nt.store(z, nt.gather(z, nt.arange(16)) + nt.load_like(x, z))  # C49


@nt.jit
def u_safe_scatter(x, z: nt.Partition):
    nt.scatter(z, nt.arange(16), nt.load_like(x, z))  # C50


@nt.jit
def u_safe_cas(x, z: nt.Partition):
    nt.atomic_cas(z, nt.arange(16), 0, 1)  # C51


@nt.jit(unchecked=True)
def u_scatter_into_input(x, out: nt.Mutable):
    nt.scatter(x, nt.arange(16), 1.0)  # C52


@nt.jit(unchecked=True)
def u_scatter_add(idx, vals, out: nt.Mutable, B: nt.Constant):
    i = nt.bid(0)
    nt.atomic_add(out, nt.load(idx, (i,), (B,), padding=-1), nt.load(vals, (i,), (B,)))


@nt.jit(unchecked=True)
def u_gather_copy(x, idx, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.gather(x, nt.load_like(idx, z, padding=-1), padding=0.0))


@refused("C48", errors.UncheckedOpError, "atomic_add() is an unchecked operation")
def c48_atomic_in_a_safe_kernel():
    x, z = randn(16), randn(16)
    return compiled(u_safe_atomic, [x, z], x, nt.partition(z, 16))


@refused("C49", errors.UncheckedOpError, "gather() is an unchecked operation")
def c49_gather_in_a_safe_kernel():
    x, z = randn(16), randn(16)
    return compiled(u_safe_gather, [x, z], x, nt.partition(z, 16))


@refused("C50", errors.UncheckedOpError, "scatter() is an unchecked operation")
def c50_scatter_in_a_safe_kernel():
    x, z = randn(16), randn(16)
    return compiled(u_safe_scatter, [x, z], x, nt.partition(z, 16))


@refused("C51", errors.UncheckedOpError, "atomic_cas() is an unchecked operation")
def c51_compare_and_swap_in_a_safe_kernel():
    x, z = randint(16), randint(16)
    return compiled(u_safe_cas, [x, z], x, nt.partition(z, 16))


@refused("C52", errors.StoreToReadOnlyError, "writes parameter 'x'")
def c52_unchecked_kernel_scattering_into_a_read_only_input():
    x, out = randn(16), randn(16)
    return Refusal(lambda: u_scatter_into_input(x, out, grid=1, interpret=True, unchecked=True),
                   [x, out],
                   lambda: u_scatter_into_input.ptx(x, out))


@refused("L35", errors.UncheckedLaunchError, "launch it with unchecked=True")
def l35_unchecked_kernel_without_acknowledgement():
    idx, vals, out = randint(16, dtype=np.int64) % 8, randn(16), randn(8)

    def launch():
        u_scatter_add(idx, vals, out, 16, grid=1, interpret=True)  # L35
    return Refusal(launch, [idx, vals, out])


@refused("L36", errors.AliasingError, "'out'", "'vals'")
def l36_unchecked_mutable_overlapping_an_input():
    buf = randn(40)
    idx = np.arange(16, dtype=np.int64) % 8

    def launch():
        u_scatter_add(idx, buf[:16], buf[10:30], 16, grid=1, interpret=True, unchecked=True)  # L36
    return Refusal(launch, [buf, idx])


@refused("L37", errors.UnexpectedPartitionError, "Mutable parameter 'out'")
def l37_partition_given_to_a_mutable_parameter():
    idx, vals, out = np.arange(16, dtype=np.int64) % 8, randn(16), randn(8)

    def launch():
        u_scatter_add(idx, vals, nt.partition(out, 8), 16, grid=1, interpret=True, unchecked=True)  # L37
    return Refusal(launch, [idx, vals, out])


@refused("L38", errors.TileArgumentError, "pass grid=<number of blocks>")
def l38_unchecked_kernel_without_grid():
    idx, vals, out = np.arange(16, dtype=np.int64) % 8, randn(16), randn(8)

    def launch():
        u_scatter_add(idx, vals, out, 16, interpret=True, unchecked=True)  # L38
    return Refusal(launch, [idx, vals, out])


@refused("L39", errors.ReadOnlyProducerError, "'out'")
def l39_unchecked_mutable_marked_read_only():
    idx, vals, out = np.arange(16, dtype=np.int64) % 8, randn(16), randn(8)
    out.flags.writeable = False

    def launch():
        u_scatter_add(idx, vals, out, 16, grid=1, interpret=True, unchecked=True)  # L39
    return Refusal(launch, [idx, vals, out])



@valid("V41")
def v41_unchecked_scatter_add_with_repeated_indices():
    idx = RNG.integers(0, 11, 300).astype(np.int64)
    vals, out = randn(300), np.zeros(11, np.float32)

    def launch():
        u_scatter_add(idx, vals, out, 64, grid=5, interpret=True, unchecked=True)

    def check():
        want = np.zeros(11)
        np.add.at(want, idx, f64(vals))
        close(out, want, rtol=1e-5, atol=1e-5)
    return launch, check


@valid("V42")
def v42_unchecked_gather_with_out_of_bounds_indices():
    x = randn(50)
    idx = RNG.integers(-10, 60, 200).astype(np.int32)
    z = nans(200)

    def launch():
        u_gather_copy(x, idx, nt.partition(z, 64), 64, interpret=True, unchecked=True)

    def check():
        inside = (idx >= 0) & (idx < 50)
        close(z, np.where(inside, f64(x)[np.clip(idx, 0, 49)], 0.0))
    return launch, check


@valid("V43")
def v43_unchecked_kernel_reading_and_writing_disjoint_halves():
    buf = randn(64)
    idx = np.arange(32, dtype=np.int64) % 16
    b0 = f64(buf)

    def launch():
        u_scatter_add(idx, buf[:32], buf[32:48], 32, grid=1, interpret=True, unchecked=True)

    def check():
        want = b0.copy()
        np.add.at(want[32:48], idx, b0[:32])
        close(buf, want, rtol=1e-5, atol=1e-5)
    return launch, check


# ------------------------------------------- C: the closed world (globals, SIMT API, opaque code)
# A safe kernel reaches memory only through its parameters and numba_tile's ops. Device arrays
# are stood in for by FakeDeviceArray (a CUDA Array Interface over host memory): numba-cuda
# types a global or closure variable holding one as an array and bakes its address into the
# PTX, exactly as for a CuPy array.

GLOBAL_DEVICE = FakeDeviceArray(np.zeros(64, np.float32))
GLOBAL_HOST = np.arange(64, dtype=np.float32)


@nt.jit
def w_global_device_array(x, z: nt.Partition):
    GLOBAL_DEVICE[0] = 1.0  # C60
    nt.store(z, nt.load_like(x, z))


def make_closure_writer(buf):
    @nt.jit
    def w_closure_device_array(x, z: nt.Partition):
        t = nt.load_like(x, z)
        buf[1] = 2.0  # C61
        nt.store(z, t)
    return w_closure_device_array


@nt.jit
def w_global_host_array(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z) * GLOBAL_HOST[3])  # C62


@nt.jit
def w_thread_index(x, z: nt.Partition):
    i = cuda.threadIdx.x  # C63
    nt.store(z, nt.load_like(x, z) + i)


@nt.jit
def w_shared_array(x, z: nt.Partition):
    s = cuda.shared.array(32, np.float32)  # C64
    s[0] = 1.0
    nt.store(z, nt.load_like(x, z))


@nt.jit
def w_divergent_barrier(x, z: nt.Partition, flag):
    if flag > 0:
        cuda.syncthreads()  # C65
    nt.store(z, nt.load_like(x, z))


@nt.jit
def w_atomic_on_global(x, z: nt.Partition):
    cuda.atomic.add(GLOBAL_DEVICE, 0, 1.0)  # C66
    nt.store(z, nt.load_like(x, z))


@nt.jit
def w_simt_through_numba_module(x, z: nt.Partition):
    i = numba.cuda.blockIdx.x  # C67
    nt.store(z, nt.load_like(x, z) + i)


@intrinsic
def poke_tiles(typingctx, it):
    """An opaque helper given a tiles() iterator (which holds its partition's pointer)."""
    def codegen(context, builder, signature, args):
        return context.get_constant(types.int64, 0)
    return types.int64(it), codegen


@nt.jit
def w_tiles_iterator_to_intrinsic(x, z: nt.Partition):
    poke_tiles(nt.tiles(z))  # C68
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z, index=idx), idx)


@intrinsic
def store_at_address(typingctx, addr):
    """An opaque helper that forges a pointer from an integer and stores 42.0 there."""
    def codegen(context, builder, signature, args):
        ptr = builder.inttoptr(args[0], llvm_ir.PointerType(llvm_ir.FloatType()))
        builder.store(llvm_ir.Constant(llvm_ir.FloatType(), 42.0), ptr)
        return context.get_constant(types.int64, 0)
    return types.int64(addr), codegen


@nt.jit
def w_intrinsic_forging_an_address(x, z: nt.Partition, addr):
    store_at_address(addr)  # C69
    nt.store(z, nt.load_like(x, z))


@nt.jit
def w_grid_intrinsic(x, z: nt.Partition):
    nt.store(z, nt.load_like(x, z) + cuda.grid(1))  # C70


@nt.jit
def w_local_array(x, z: nt.Partition):
    a = cuda.local.array(4, np.float32)  # C71
    a[0] = 1.0
    nt.store(z, nt.load_like(x, z))


def _math_ldexp_typer(x, i):
    """A user typing rule for a library function (``type_callable``; ``@overload`` works the
    same way): the implementation behind it is code numba_tile never checks."""
    if isinstance(x, types.Float) and isinstance(i, types.Integer):
        return x
    return None


type_callable(math.ldexp)(lambda context: _math_ldexp_typer)


@nt.jit
def w_user_overload_of_a_library_function(x, z: nt.Partition, s):
    nt.store(z, nt.load_like(x, z) * math.ldexp(s, 2))  # C72


@nt.jit
def w_tiles_iterator_in_a_tuple_to_intrinsic(x, z: nt.Partition):
    poke_packed((nt.tiles(z), 1))  # C73
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z, index=idx), idx)


def _poke_operator_typer(a, b, *rest):
    """A user typing rule that makes ``tensor + "poke"`` and ``tensor["poke"] = v`` type: their
    implementations would be code numba_tile never sees."""
    from numba_tile.typing.types import TensorType
    if isinstance(a, TensorType) and isinstance(b, types.StringLiteral):
        return types.none if rest else types.int64
    return None


type_callable(operator.add)(lambda context: _poke_operator_typer)
type_callable(operator.setitem)(lambda context: _poke_operator_typer)


@nt.jit
def w_user_operator_on_a_tensor(x, z: nt.Partition):
    n = x + "poke"  # C74
    nt.store(z, nt.load_like(x, z) + n)


@nt.jit
def w_user_setitem_on_a_tensor(x, z: nt.Partition):
    x["poke"] = 1.0  # C75
    nt.store(z, nt.load_like(x, z))


CLOSED = ("a safe kernel reaches memory only through its parameters",)
SIMT = ("numba-cuda's SIMT API",)


@refused("C60", errors.ClosedWorldError, "kernel 'w_global_device_array'", "an array",
         "module global 'GLOBAL_DEVICE'", "pass the array as a parameter", *CLOSED)
def c60_device_array_in_a_module_global():
    x, z = randn(40), randn(40)
    return compiled(w_global_device_array, [x, z, GLOBAL_DEVICE.host], x, nt.partition(z, 16))


@refused("C61", errors.ClosedWorldError, "closure variable 'buf'", "an array", *CLOSED)
def c61_device_array_captured_by_a_kernel_factory():
    x, z, captured = randn(40), randn(40), randn(8)
    return compiled(make_closure_writer(FakeDeviceArray(captured)), [x, z, captured], x,
                    nt.partition(z, 16))


@refused("C62", errors.ClosedWorldError, "module global 'GLOBAL_HOST'", "an array", *CLOSED)
def c62_host_array_in_a_module_global():
    x, z = randn(40), randn(40)
    return compiled(w_global_host_array, [x, z, GLOBAL_HOST], x, nt.partition(z, 16))


@refused("C63", errors.ClosedWorldError, *SIMT, "cuda.threadIdx", "bid()")
def c63_thread_index():
    x, z = randn(40), randn(40)
    return compiled(w_thread_index, [x, z], x, nt.partition(z, 16))


@refused("C64", errors.ClosedWorldError, *SIMT, "cuda.shared")
def c64_shared_array():
    x, z = randn(40), randn(40)
    return compiled(w_shared_array, [x, z], x, nt.partition(z, 16))


@refused("C65", errors.ClosedWorldError, *SIMT, "cuda.syncthreads")
def c65_barrier_in_divergent_code():
    x, z = randn(40), randn(40)
    return compiled(w_divergent_barrier, [x, z], x, nt.partition(z, 16), 1)


@refused("C66", errors.ClosedWorldError, *SIMT, "cuda.atomic")
def c66_simt_atomic_on_a_global_array():
    x, z = randn(40), randn(40)
    return compiled(w_atomic_on_global, [x, z, GLOBAL_DEVICE.host], x, nt.partition(z, 16))


@refused("C67", errors.ClosedWorldError, *SIMT, "numba.cuda")
def c67_simt_reached_through_the_numba_module():
    x, z = randn(40), randn(40)
    return compiled(w_simt_through_numba_module, [x, z], x, nt.partition(z, 16))


@refused("C68", errors.UnanalyzedCallError, "parameter(s) 'z'", "poke_tiles()")
def c68_tiles_iterator_handed_to_an_intrinsic():
    x, z = randn(40), randn(40)
    return compiled(w_tiles_iterator_to_intrinsic, [x, z], x, nt.partition(z, 16, blocks=2))


@refused("C69", errors.ClosedWorldError, "calls store_at_address()", "an @intrinsic",
         "forge addresses")
def c69_intrinsic_given_only_an_integer():
    x, z, target = randn(40), randn(40), randn(4)
    return compiled(w_intrinsic_forging_an_address, [x, z, target], x, nt.partition(z, 16),
                    target.ctypes.data)


@refused("C70", errors.ClosedWorldError, *SIMT, "cuda.grid")
def c70_simt_grid_intrinsic():
    x, z = randn(40), randn(40)
    return compiled(w_grid_intrinsic, [x, z], x, nt.partition(z, 16))


@refused("C71", errors.ClosedWorldError, *SIMT, "cuda.local")
def c71_local_array():
    x, z = randn(40), randn(40)
    return compiled(w_local_array, [x, z], x, nt.partition(z, 16))


@refused("C72", errors.ClosedWorldError, "calls math.ldexp()", "implementation registered in",
         "test_corpus.py")
def c72_user_overload_of_a_library_function():
    x, z = randn(40), randn(40)
    return compiled(w_user_overload_of_a_library_function, [x, z], x, nt.partition(z, 16), 1.5)


@refused("C73", errors.UnanalyzedCallError, "parameter(s) 'z'", "poke_packed()")
def c73_tiles_iterator_in_a_tuple_handed_to_an_intrinsic():
    x, z = randn(40), randn(40)
    return compiled(w_tiles_iterator_in_a_tuple_to_intrinsic, [x, z], x,
                    nt.partition(z, 16, blocks=2))


@refused("C74", errors.UnanalyzedCallError, "parameter(s) 'x'", "operator add")
def c74_user_typed_operator_on_a_tensor():
    x, z = randn(40), randn(40)
    return compiled(w_user_operator_on_a_tensor, [x, z], x, nt.partition(z, 16))


@refused("C75", errors.UnanalyzedCallError, "parameter(s) 'x'", "SetItem statement")
def c75_user_typed_item_assignment_to_a_tensor():
    x, z = randn(40), randn(40)
    return compiled(w_user_setitem_on_a_tensor, [x, z], x, nt.partition(z, 16))


def unreadable_annotation(x, z: "tile_lib.Partition[TILE]"):  # C76
    pass


@refused("C76", errors.TileArgumentError, "kernel 'unreadable_annotation'",
         "annotation 'tile_lib.Partition[TILE]' of parameter 'z'", "NameError")
def c76_annotation_naming_partition_that_cannot_be_read():
    return Refusal(lambda: nt.jit(unreadable_annotation), [])


def make_with_local_alias():
    import numba_tile as tl   # only this scope knows 'tl'; annotations are strings here

    @tl.jit
    def v_local_alias(x, z: tl.Partition["B"], B: tl.Constant):
        tl.store(z, tl.load_like(x, z) * 3.0)
    return v_local_alias


@valid("V46")
def v46_partition_annotation_through_a_local_module_alias():
    x, z = randn(40), nans(40)

    def launch():
        make_with_local_alias()(x, nt.partition(z, 16), 16, interpret=True)

    def check():
        close(z, f64(x) * 3)
    return launch, check


@nt.jit(num_warps=16)
def over_shared_memory(x, z: nt.Partition[(256, 256)]):
    t = nt.load(x, (0, 0), (256, 256))
    nt.store(z, nt.matmul(t, t))  # C77


@refused("C77", errors.TileTypingError, "mma operands (256, 256) @ (256, 256)",
         "262144 bytes", "232448 bytes a block can have on compute capability 9.0")
def c77_refused_while_lowering_so_by_the_interpreter_too():
    """The shared-memory budget of a matrix product's operands is known only while lowering:
    the interpreter compiles the kernel too, so it refuses what a GPU launch would (a layout
    conversion is never refused for its size: it moves in passes, lowering/layouts.py)."""
    x, z = randn(256, 256, dtype=np.float16), randn(256, 256)
    return compiled(over_shared_memory, [x, z], x, nt.partition(z, (256, 256)))


@nt.jit
def w_array_as_a_constant(x, z: nt.Partition, C: nt.Constant):
    C[0] = 5.0  # C78
    nt.store(z, nt.load_like(x, z))


@refused("C78", errors.ClosedWorldError, "an array", "Constant parameter 'C'", *CLOSED)
def c78_device_array_passed_as_a_constant():
    x, z, hidden = randn(40), randn(40), randn(8)
    return compiled(w_array_as_a_constant, [x, z, hidden], x, nt.partition(z, 16),
                    FakeDeviceArray(hidden))


class PosesAsTensor:
    """A user class an extension types as one of numba_tile's tensor types."""


@typeof_impl.register(PosesAsTensor)
def _typeof_poses_as_tensor(val, c):
    from numba_tile.typing.types import TensorType
    return TensorType(nt.float32, 1, False, "x")


POSING = PosesAsTensor()


@nt.jit
def w_global_typed_as_a_tensor(x, z: nt.Partition):
    nt.store(z, nt.load_like(POSING, z))  # C79


@refused("C79", errors.ClosedWorldError, "typed as Tensor[float32, 1d, param=x]",
         "module global 'POSING'", "come only from the kernel's parameters")
def c79_global_an_extension_types_as_a_tensor():
    x, z = randn(40), randn(40)
    return compiled(w_global_typed_as_a_tensor, [x, z], x, nt.partition(z, 16))


def _forge_index_typer(a, b):
    """A user typing rule that makes ``int + "tile"`` a tile index of partition 'z' (with a
    lowering, it would name any tile)."""
    from numba_tile.typing.types import PartitionIndexType
    if isinstance(a, types.Integer) and isinstance(b, types.StringLiteral) \
            and b.literal_value == "tile":
        return PartitionIndexType("z", 1)
    return None


type_callable(operator.add)(lambda context: _forge_index_typer)


@nt.jit
def w_forged_tile_index(x, z: nt.Partition):
    idx = nt.bid(0) + "tile"  # C82
    nt.store(z, nt.load_like(x, z), idx)


@refused("C82", errors.UnanalyzedCallError, "makes a value of type PartitionIndex[z, 1d]",
         "tile indices only from tiles()")
def c82_tile_index_made_by_a_user_typed_operator():
    x, z = randn(40), randn(40)
    return compiled(w_forged_tile_index, [x, z], x, nt.partition(z, 16))


def _bid_on_a_tensor_typer(x, a, b, c):
    """A user typing rule for numba_tile's own op stub bid() with an arity its rule refuses:
    the call would be lowered by someone else's code, given a read-only tensor."""
    from numba_tile.typing.types import TensorType
    if isinstance(x, TensorType):
        return types.int64
    return None


type_callable(nt.bid)(lambda context: _bid_on_a_tensor_typer)


@nt.jit
def w_op_typed_by_a_user_rule(x, z: nt.Partition):
    nt.bid(x, 1, 2, 3)  # C83
    nt.store(z, nt.load_like(x, z))


@refused("C83", errors.UnanalyzedCallError, "bid() was typed by a rule registered outside "
         "numba_tile", "Tensor[float32")
def c83_op_stub_typed_by_a_user_rule():
    x, z = randn(40), randn(40)
    return compiled(w_op_typed_by_a_user_rule, [x, z], x, nt.partition(z, 16))


def _index_from_none_typer(a, b):
    """``operator.add(i, None)`` typed by a user rule as a tile index of partition 'z'."""
    from numba_tile.typing.types import PartitionIndexType
    if isinstance(a, types.Integer) and isinstance(b, types.NoneType):
        return PartitionIndexType("z", 1)
    return None


type_callable(operator.add)(lambda context: _index_from_none_typer)


@nt.jit
def w_index_from_an_explicit_operator_call(x, z: nt.Partition):
    t = nt.load_like(x, z)
    nxt = operator.add(nt.bid(0) + 1, None)  # C84
    nt.store(z, t, nxt)


@refused("C84", errors.UnanalyzedCallError, "add() was typed by a rule registered outside "
         "numba_tile")
def c84_tile_index_from_an_explicit_operator_call():
    x, z = randn(40), randn(40)
    return compiled(w_index_from_an_explicit_operator_call, [x, z], x, nt.partition(z, 16))


def _sub_none_typer(a, b):
    """``n << None`` on an integer, typed (and below, lowered) by user code. (``<<`` because
    Numba has no implementation of its own that could take ``None`` there.)"""
    if isinstance(a, types.Integer) and isinstance(b, types.NoneType):
        return types.int64
    return None


type_callable(operator.lshift)(lambda context: _sub_none_typer)


@lower_builtin(operator.lshift, types.Integer, types.NoneType)
def _sub_none_lowering(context, builder, sig, args):
    """Forges a pointer from the integer and stores 42.0 there."""
    ptr = builder.inttoptr(args[0], llvm_ir.PointerType(llvm_ir.FloatType()))
    builder.store(llvm_ir.Constant(llvm_ir.FloatType(), 42.0), ptr)
    return args[0]


@nt.jit
def w_user_lowered_operator_on_numbers(x, z: nt.Partition, addr):
    _ = addr << None  # C85
    nt.store(z, nt.load_like(x, z))


@refused("C85", errors.ClosedWorldError, "operator lshift on (int64, none) is lowered by code "
         "registered outside Numba and numba_tile", "test_corpus.py")
def c85_operator_on_numbers_lowered_by_user_code():
    x, z, target = randn(40), randn(40), randn(4)
    return compiled(w_user_lowered_operator_on_numbers, [x, z, target], x, nt.partition(z, 16),
                    target.ctypes.data)


class _IntPoke(AttributeTemplate):
    key = types.Integer

    def resolve_poke(self, ty):
        return types.int64


numba.cuda.cudadecl.registry.register_attr(_IntPoke)


@lower_getattr(types.Integer, "poke")
def _int_poke(context, builder, ty, val):
    """Forges a pointer from the integer and stores 42.0 there."""
    ptr = builder.inttoptr(val, llvm_ir.PointerType(llvm_ir.FloatType()))
    builder.store(llvm_ir.Constant(llvm_ir.FloatType(), 42.0), ptr)
    return val


@nt.jit
def w_user_lowered_attribute_of_a_number(x, z: nt.Partition, addr):
    _ = addr.poke  # C86
    nt.store(z, nt.load_like(x, z))


@refused("C86", errors.ClosedWorldError, "attribute '.poke' of int64 is lowered by code "
         "registered outside Numba and numba_tile")
def c86_attribute_of_a_number_lowered_by_user_code():
    x, z, target = randn(40), randn(40), randn(4)
    return compiled(w_user_lowered_attribute_of_a_number, [x, z, target], x,
                    nt.partition(z, 16), target.ctypes.data)


# Legal neighbours: scalars from globals, closures and library functions stay usable.
SCALE_GLOBAL = 1.5
SHAPE_GLOBAL = (16,)


def make_closure_scaler(s):
    @nt.jit
    def v_closure_scalar(x, z: nt.Partition):
        nt.store(z, nt.load_like(x, z) * s)
    return v_closure_scalar


@nt.jit
def v_globals_and_library_scalars(x, y, z: nt.Partition["B"], B: nt.Constant, n):
    t = nt.load_like(x, z) * SCALE_GLOBAL + math.sqrt(2.0) * np.float32(n)
    nt.store(z, t + nt.load(y, (nt.bid(0),), SHAPE_GLOBAL, padding=0.0) * abs(-n) / math.pi)


@valid("V44")
def v44_closure_scalar_and_global_constants():
    x, y, z = randn(40), randn(40), nans(40)
    w = nans(40)

    def launch():
        v_globals_and_library_scalars(x, y, nt.partition(z, 16), 16, 3, interpret=True)
        make_closure_scaler(2.5)(x, nt.partition(w, 8), interpret=True)

    def check():
        close(z, f64(x) * 1.5 + math.sqrt(2.0) * 3 + f64(y) * 3 / math.pi, rtol=1e-5)
        close(w, f64(x) * 2.5)
    return launch, check




# ------------------------------------------------------- what runs is what was checked (frozen.py)
# A kernel is typed and ownership-checked per specialization on a snapshot of its function: its
# globals, closure cells and the attributes it reads from user modules, frozen when the
# specialization is first checked (numba_tile/frozen.py). The interpreter runs that snapshot and
# the compiler lowers it, so a value changed after the check cannot revive a branch Numba pruned
# for it (V70, V71) or change the constants the check saw (V72); a new specialization is checked
# with the new value (C80, C81).
import types as pytypes  # noqa: E402 - `types` is numba's here

FROZEN_FLAG = False
FROZEN_CFG = pytypes.ModuleType("corpus_frozen_cfg")    # a user module read through an attribute
FROZEN_CFG.SCALE = 3.0


def with_frozen_flag(value, fn):
    """Run ``fn()`` with the module global FROZEN_FLAG set to ``value`` (restored after)."""
    global FROZEN_FLAG
    saved, FROZEN_FLAG = FROZEN_FLAG, value
    try:
        return fn()
    finally:
        FROZEN_FLAG = saved


def make_global_flag_writer():
    @nt.jit
    def f_global_flag(x, z: nt.Partition):
        t = nt.load_like(x, z)
        if FROZEN_FLAG:
            nt.store(x, t)  # C80
        nt.store(z, t * 2.0)
    return f_global_flag


def make_cell_flag_writer():
    flag = False

    @nt.jit
    def f_cell_flag(x, z: nt.Partition):
        t = nt.load_like(x, z)
        if flag:
            nt.store(x, t)  # C81
        nt.store(z, t * 2.0)

    def flip():
        nonlocal flag
        flag = True
    return f_cell_flag, flip


def make_module_scaler():
    @nt.jit
    def f_module_scale(x, z: nt.Partition):
        nt.store(z, nt.load_like(x, z) * FROZEN_CFG.SCALE)
    return f_module_scale


@refused("C80", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c80_global_flag_set_after_a_check_is_checked_for_the_next_specialization():
    k = make_global_flag_writer()
    with_frozen_flag(False, lambda: k(randn(32), nt.partition(nans(32), 16), interpret=True))
    x, z = randn(32, dtype=np.float64), randn(32, dtype=np.float64)
    return Refusal(lambda: with_frozen_flag(True, lambda: k(x, nt.partition(z, 16), interpret=True)),
                   [x, z],
                   lambda: with_frozen_flag(True, lambda: k.ptx(x, nt.partition(z, 16))))


@refused("C81", errors.StoreToReadOnlyError, *READ_ONLY_X)
def c81_closure_cell_set_after_a_check_is_checked_for_the_next_specialization():
    k, flip = make_cell_flag_writer()
    k(randn(32), nt.partition(nans(32), 16), interpret=True)
    flip()
    x, z = randn(32, dtype=np.float64), randn(32, dtype=np.float64)
    return compiled(k, [x, z], x, nt.partition(z, 16))


@valid("V70")
def v70_global_flag_set_after_the_check_revives_no_pruned_store():
    x, z = randn(32), nans(32)
    x0 = x.copy()

    def launch():
        k = make_global_flag_writer()
        with_frozen_flag(False, lambda: k(x, nt.partition(z, 16), interpret=True))
        z[:] = np.nan
        with_frozen_flag(True, lambda: k(x, nt.partition(z, 16), interpret=True))  # as checked

    def check():
        np.testing.assert_array_equal(x, x0)
        close(z, 2 * f64(x0))
    return launch, check


@valid("V71")
def v71_closure_cell_set_after_the_check_revives_no_pruned_store():
    x, z = randn(32), nans(32)
    x0 = x.copy()

    def launch():
        k, flip = make_cell_flag_writer()
        k(x, nt.partition(z, 16), interpret=True)
        flip()
        z[:] = np.nan
        k(x, nt.partition(z, 16), interpret=True)

    def check():
        np.testing.assert_array_equal(x, x0)
        close(z, 2 * f64(x0))
    return launch, check


@valid("V72")
def v72_module_attribute_changed_after_the_check_keeps_the_checked_constant():
    x, z, w = randn(32), nans(32), nans(32)

    def launch():
        FROZEN_CFG.SCALE = 3.0
        k = make_module_scaler()
        k(x, nt.partition(z, 16), interpret=True)
        FROZEN_CFG.SCALE = 5.0
        try:
            k(x, nt.partition(z, 16), interpret=True)                # 3.0, as checked
            make_module_scaler()(x, nt.partition(w, 16), interpret=True)   # a new kernel: 5.0
        finally:
            FROZEN_CFG.SCALE = 3.0

    def check():
        close(z, 3 * f64(x))
        close(w, 5 * f64(x))
    return launch, check


# ------------------------------------------------ D: the race detector (interpreter, dynamic)
# Unchecked kernels whose blocks conflict while they run. The interpreter's race detector
# records, per element of every writable array (partitions, nt.Mutable parameters), which
# blocks wrote, read and atomically updated it; the refusal is a DataRaceError raised at the
# second, conflicting access, and err.lineno is that kernel line (marked # Dnn). Legal
# neighbours: V60-V69.
# guarded holds inputs and outputs: the interpreter writes outputs back only when every
# block succeeded (runner.py since 40dc879), so a refused launch leaves them unchanged.


def leading(first, lo, hi, n):
    """An index tile of ``n``: ``first`` at position 0, then ``n - 1`` distinct random
    indices in [lo, hi)."""
    return np.append(first, RNG.permutation(np.arange(lo, hi))[:n - 1]).astype(np.int64)


def holding(elem, lo, hi, n):
    """``n`` distinct random indices in [lo, hi) that include ``elem``."""
    others = RNG.permutation(np.setdiff1d(np.arange(lo, hi), [elem]))[:n - 1]
    return RNG.permutation(np.append(others, elem)).astype(np.int64)


@nt.jit(unchecked=True)
def d_scatter_rows(idx, vals, out: nt.Mutable, B: nt.Constant):
    """Block i scatters vals[i*B:(i+1)*B] to out[idx[i*B:(i+1)*B]]."""
    i = nt.bid(0)
    nt.scatter(out, nt.load(idx, (i,), (B,)), nt.load(vals, (i,), (B,)))  # D01


@nt.jit(unchecked=True)
def d_store_tile_at(x, z: nt.Partition["B"], mul, add, t, B: nt.Constant):
    """Block i stores its tile of x at tile (i * mul + add) % t of z."""
    nt.store(z, nt.load_like(x, z), ((nt.bid(0) * mul + add) % t,))  # D02


@nt.jit(unchecked=True)
def d_store_mutable_tile(x, m: nt.Mutable, t, B: nt.Constant):
    """Block i stores tile i of x at tile i % t of m."""
    i = nt.bid(0)
    nt.store(m, nt.load(x, (i,), (B,)), (i % t,))  # D03


@nt.jit(unchecked=True)
def d_scatter_into_previous_tile(x, z: nt.Partition["B"], B: nt.Constant):
    """Block i stores its own tile, then scatters into tile i - 1 (block 0: out of bounds)."""
    i = nt.bid(0)
    nt.store(z, nt.load_like(x, z))
    nt.scatter(z, nt.arange(B) + (i - 1) * B, nt.load_like(x, z) * 2.0)  # D04


@nt.jit(unchecked=True)
def d_scatter_2d(ri, ci, vals, out: nt.Mutable, B: nt.Constant):
    i = nt.bid(0)
    at = (nt.load(ri, (i,), (B,)), nt.load(ci, (i,), (B,)))
    nt.scatter(out, at, nt.load(vals, (i,), (B,)))  # D05


@nt.jit(unchecked=True)
def d_scatter_then_store(idx, x, m: nt.Mutable, B: nt.Constant):
    """Block 0 scatters 1.0 to m[idx[:B]]; every other block i stores tile i of x at tile i."""
    i = nt.bid(0)
    if i == 0:
        nt.scatter(m, nt.load(idx, (0,), (B,)), 1.0)
    else:
        nt.store(m, nt.load(x, (i,), (B,)), (i,))  # D06


@nt.jit(unchecked=True)
def d_scatter_or_gather(idx, vals, out: nt.Mutable, got: nt.Partition["B"], B: nt.Constant,
                        WRITER: nt.Constant):
    """Block WRITER scatters to out at its indices; the other blocks gather there."""
    ix = nt.load_like(idx, got)
    if nt.bid(0) == WRITER:
        nt.scatter(out, ix, nt.load_like(vals, got))  # D08
        nt.store(got, nt.load_like(vals, got))
    else:
        nt.store(got, nt.gather(out, ix, padding=0.0))  # D07


@nt.jit(unchecked=True)
def d_load_previous_tile(m: nt.Mutable, got: nt.Partition["B"], B: nt.Constant):
    """Block i doubles tile i of m, then copies tile i - 1 (wrapping) of m to its tile of got."""
    i = nt.bid(0)
    n = nt.num_blocks(0)
    nt.store(m, nt.load(m, (i,), (B,)) * 2.0, (i,))
    nt.store(got, nt.load(m, ((i + n - 1) % n,), (B,)))  # D09


@nt.jit(unchecked=True)
def d_gather_previous_tile(x, z: nt.Partition["B"], B: nt.Constant):
    """Block i stores its tile of x, then adds tile i - 1 of z, gathered (block 0: padding)."""
    i = nt.bid(0)
    nt.store(z, nt.load_like(x, z))
    behind = nt.gather(z, nt.arange(B) + (i - 1) * B, padding=0.0)  # D10
    nt.store(z, nt.load_like(x, z) + behind)


@nt.jit(unchecked=True)
def d_gather_next_tile(x, z: nt.Partition["B"], B: nt.Constant):
    """Block i gathers tile i + 1 of z before storing its own tile: a stencil in place."""
    i = nt.bid(0)
    ahead = nt.gather(z, nt.arange(B) + (i + 1) * B, padding=0.0)
    nt.store(z, nt.load_like(x, z) + ahead)  # D11


@nt.jit(unchecked=True)
def d_plain_or_atomic(idx, vals, out: nt.Mutable, B: nt.Constant, ATOMIC: nt.Constant):
    """Block ATOMIC adds its values atomically; the other blocks scatter theirs."""
    i = nt.bid(0)
    ix = nt.load(idx, (i,), (B,))
    v = nt.load(vals, (i,), (B,))
    if i == ATOMIC:
        nt.atomic_add(out, ix, v)  # D12
    else:
        nt.scatter(out, ix, v)  # D13


@nt.jit(unchecked=True)
def d_atomic_into_next_tile(x, z: nt.Partition["B"], B: nt.Constant):
    """Block i adds 1 to tile i + 1 of z atomically, then stores its own tile of x."""
    i = nt.bid(0)
    nt.atomic_add(z, nt.arange(B) + (i + 1) * B, 1.0)
    nt.store(z, nt.load_like(x, z))  # D14


@nt.jit(unchecked=True)
def d_count_then_read(idx, counts: nt.Mutable, seen: nt.Partition["B"], B: nt.Constant):
    """Counts idx values atomically and reads the counts back in the same launch."""
    ix = nt.load_like(idx, seen)
    nt.atomic_add(counts, ix, 1)  # D15
    nt.store(seen, nt.gather(counts, ix))


@nt.jit(unchecked=True)
def d_read_running_max(idx, vals, best: nt.Mutable, got: nt.Partition["B"], B: nt.Constant):
    """Block 0 folds its values into best atomically; every block then loads tile 0 of best."""
    if nt.bid(0) == 0:
        nt.atomic_max(best, nt.load_like(idx, got), nt.load_like(vals, got))
    nt.store(got, nt.load(best, (0,), (B,)))  # D16


@nt.jit(unchecked=True)
def d_scatter_once(idx, vals, out: nt.Mutable, B: nt.Constant):
    nt.scatter(out, nt.load(idx, (0,), (B,)), nt.load(vals, (0,), (B,)))  # D17


@nt.jit(unchecked=True)
def d_scatter_2d_masked(ri, ci, keep, vals, out: nt.Mutable, B: nt.Constant):
    i = nt.bid(0)
    at = (nt.load(ri, (i,), (B,)), nt.load(ci, (i,), (B,)))
    nt.scatter(out, at, nt.load(vals, (i,), (B,)), mask=nt.load(keep, (i,), (B,)))  # D18


@nt.jit(unchecked=True)
def d_mark_seen(idx, flags: nt.Partition["B"], B: nt.Constant):
    nt.scatter(flags, nt.load_like(idx, flags), True)  # D19


# -------------------------------------------------------------------- write and write


@refused("D01", errors.DataRaceError, "data race on 'out', element (5,)",
         "written by block (0,) (linear 0) and written by block (1,) (linear 1) with scatter()",
         "combine the values with an atomic")
def d01_two_blocks_scattering_to_one_element():
    B = 16
    idx = np.concatenate([holding(5, 0, B, B), leading(5, B, 3 * B, B)])
    vals, out = randn(2 * B), randn(3 * B)

    def launch():
        d_scatter_rows(idx, vals, out, B, grid=2, interpret=True, unchecked=True)
    return Refusal(launch, [idx, vals, out])


@refused("D02", errors.DataRaceError, "data race on 'z', element (0,)",
         "written by block (0,) (linear 0) and written by block (2,) (linear 2) with store()")
def d02_partition_store_at_a_hand_built_index_of_another_blocks_tile():
    x, z = randn(64), randn(64)                       # tiles i % 2: blocks 0 and 2 store tile 0

    def launch():
        d_store_tile_at(x, nt.partition(z, 16), 1, 0, 2, 16, interpret=True, unchecked=True)
    return Refusal(launch, [x, z])


@refused("D03", errors.DataRaceError, "data race on 'm', element (0,)",
         "written by block (0,) (linear 0) and written by block (2,) (linear 2) with store()")
def d03_two_blocks_storing_one_tile_of_a_mutable_array():
    x, m = randn(48), randn(48)

    def launch():
        d_store_mutable_tile(x, m, 2, 16, grid=3, interpret=True, unchecked=True)
    return Refusal(launch, [x, m])


@refused("D04", errors.DataRaceError, "data race on 'z', element (0,)",
         "written by block (0,) (linear 0) and written by block (1,) (linear 1) with scatter()")
def d04_scatter_into_the_tile_another_block_stored():
    x, z = randn(64), randn(64)

    def launch():
        d_scatter_into_previous_tile(x, nt.partition(z, 16), 16, interpret=True,
                                     unchecked=True)
    return Refusal(launch, [x, z])


@refused("D05", errors.DataRaceError, "data race on 'out', element (3, 5)",
         "written by block (0,) (linear 0) and written by block (1,) (linear 1) with scatter()")
def d05_two_blocks_scattering_to_one_element_of_a_2d_array():
    B = 16
    flat0 = holding(3 * 8 + 5, 0, 32, B)              # block 0: rows 0..3, including (3, 5)
    flat1 = leading(3 * 8 + 5, 32, 64, B)       # block 1: (3, 5) first, then rows 4..7
    flat = np.concatenate([flat0, flat1])
    ri, ci = (flat // 8).astype(np.int32), (flat % 8).astype(np.int32)
    vals, out = randn(2 * B), randn(8, 8)

    def launch():
        d_scatter_2d(ri, ci, vals, out, B, grid=2, interpret=True, unchecked=True)
    return Refusal(launch, [ri, ci, vals, out])


@refused("D06", errors.DataRaceError, "data race on 'm', element (19,)",
         "written by block (0,) (linear 0) and written by block (1,) (linear 1) with store()")
def d06_store_of_a_tile_another_block_scattered_into():
    B = 16
    idx = np.append(RNG.permutation(B)[:B - 1], B + 3).astype(np.int64)   # one in tile 1
    x, m = randn(3 * B), randn(3 * B)

    def launch():
        d_scatter_then_store(idx, x, m, B, grid=3, interpret=True, unchecked=True)
    return Refusal(launch, [idx, x, m])


# --------------------------------------------------------------------- read and write


@refused("D07", errors.DataRaceError, "data race on 'out', element (7,)",
         "written by block (0,) (linear 0) and read by block (1,) (linear 1) with gather()",
         "read them in a later launch")
def d07_gather_of_an_element_another_block_scattered():
    B = 16
    idx = np.concatenate([holding(7, 0, B, B), leading(7, B, 3 * B, B)])
    vals, out, got = randn(2 * B), randn(3 * B), randn(2 * B)

    def launch():
        d_scatter_or_gather(idx, vals, out, nt.partition(got, B), B, 0, interpret=True,
                            unchecked=True)
    return Refusal(launch, [idx, vals, out, got])


@refused("D08", errors.DataRaceError, "data race on 'out', element (7,)",
         "read by block (0,) (linear 0) and written by block (2,) (linear 2) with scatter()")
def d08_scatter_to_an_element_another_block_gathered():
    B = 16
    idx = np.concatenate([holding(7, 0, B, B), RNG.permutation(np.arange(B, 2 * B)),
                          leading(7, 2 * B, 4 * B, B)])
    vals, out, got = randn(3 * B), randn(4 * B), randn(3 * B)

    def launch():
        d_scatter_or_gather(idx, vals, out, nt.partition(got, B), B, 2, interpret=True,
                            unchecked=True)
    return Refusal(launch, [idx, vals, out, got])


@refused("D09", errors.DataRaceError, "data race on 'm', element (0,)",
         "written by block (0,) (linear 0) and read by block (1,) (linear 1) with load()")
def d09_load_of_a_tile_another_block_stored():
    m, got = randn(64), randn(64)

    def launch():
        d_load_previous_tile(m, nt.partition(got, 16), 16, interpret=True, unchecked=True)
    return Refusal(launch, [m, got])


@refused("D10", errors.DataRaceError, "data race on 'z', element (0,)",
         "written by block (0,) (linear 0) and read by block (1,) (linear 1) with gather()")
def d10_gather_from_a_partition_tile_another_block_stored():
    x, z = randn(64), randn(64)

    def launch():
        d_gather_previous_tile(x, nt.partition(z, 16), 16, interpret=True, unchecked=True)
    return Refusal(launch, [x, z])


@refused("D11", errors.DataRaceError, "data race on 'z', element (16,)",
         "read by block (0,) (linear 0) and written by block (1,) (linear 1) with store()",
         "the read sees the old value or the new one")
def d11_store_of_a_tile_another_block_gathered_from():
    x, z = randn(64), randn(64)

    def launch():
        d_gather_next_tile(x, nt.partition(z, 16), 16, interpret=True, unchecked=True)
    return Refusal(launch, [x, z])


# ------------------------------------------------------------------- atomic and plain


@nt.jit(unchecked=True)
def d_cta_scoped_counter(out: nt.Mutable):
    nt.atomic_add(out, nt.zeros((16,), nt.int32), nt.full((16,), 1, nt.int32), scope="cta")  # D20


@refused("D20", errors.DataRaceError, "data race on 'out', element (0,)",
         "updated atomically by block (0,) (linear 0)",
         "updated atomically with scope='cta' by block (1,) (linear 1)", "morally strong")
def d20_cta_scoped_atomics_from_two_blocks():
    out = np.zeros(1, np.int32)

    def launch():
        d_cta_scoped_counter(out, grid=2, interpret=True, unchecked=True)
    return Refusal(launch, [out])


@refused("D12", errors.DataRaceError, "data race on 'out', element (4,)",
         "written by block (0,) (linear 0) and updated atomically by block (1,) (linear 1) "
         "with atomic_add()", "only through atomics")
def d12_atomic_add_to_an_element_another_block_scattered():
    B = 16
    idx = np.concatenate([holding(4, 0, B, B), leading(4, B, 3 * B, B)])
    vals, out = randn(2 * B), randn(3 * B)

    def launch():
        d_plain_or_atomic(idx, vals, out, B, 1, grid=2, interpret=True, unchecked=True)
    return Refusal(launch, [idx, vals, out])


@refused("D13", errors.DataRaceError, "data race on 'out', element (4,)",
         "updated atomically by block (0,) (linear 0) and written by block (1,) (linear 1) "
         "with scatter()")
def d13_scatter_to_an_element_another_block_added_to_atomically():
    B = 16
    idx = np.concatenate([holding(4, 0, B, B), leading(4, B, 3 * B, B)])
    vals, out = randn(2 * B), randn(3 * B)

    def launch():
        d_plain_or_atomic(idx, vals, out, B, 0, grid=2, interpret=True, unchecked=True)
    return Refusal(launch, [idx, vals, out])


@refused("D14", errors.DataRaceError, "data race on 'z', element (16,)",
         "updated atomically by block (0,) (linear 0) and written by block (1,) (linear 1) "
         "with store()")
def d14_partition_store_over_another_blocks_atomics():
    x, z = randn(64), randn(64)

    def launch():
        d_atomic_into_next_tile(x, nt.partition(z, 16), 16, interpret=True, unchecked=True)
    return Refusal(launch, [x, z])


@refused("D15", errors.DataRaceError, "data race on 'counts', element (2,)",
         "read by block (0,) (linear 0) and updated atomically by block (1,) (linear 1) with "
         "atomic_add()", "in a later launch, once every update is done")
def d15_counter_read_back_while_other_blocks_count():
    B = 16
    idx = np.concatenate([RNG.integers(0, 8, B), np.full(B, 2)]).astype(np.int32)
    idx[RNG.integers(0, B)] = 2                       # block 0 counts (and reads) element 2
    counts, seen = np.zeros(8, np.int32), randint(2 * B)

    def launch():
        d_count_then_read(idx, counts, nt.partition(seen, B), B, interpret=True,
                          unchecked=True)
    return Refusal(launch, [idx, counts, seen])


@refused("D16", errors.DataRaceError, "data race on 'best', element (0,)",
         "updated atomically by block (0,) (linear 0) and read by block (1,) (linear 1) with "
         "load()", "atomic_add of 0 returns its value")
def d16_load_of_elements_another_block_updates_atomically():
    B = 16
    idx = np.concatenate([RNG.permutation(B), RNG.permutation(B)]).astype(np.int32)
    vals, best, got = randint(2 * B), randint(B), randint(2 * B)

    def launch():
        d_read_running_max(idx, vals, best, nt.partition(got, B), B, interpret=True,
                           unchecked=True)
    return Refusal(launch, [idx, vals, best, got])


# ------------------------------------------------------- one element twice in one scatter


@refused("D17", errors.DataRaceError, "data race on 'out', element (11,)",
         "written twice by one scatter() of block (0,) (linear 0)",
         "from positions (3,) and (9,) of its index tiles", "in no fixed order",
         "Make the indices of one scatter distinct")
def d17_one_scatter_writing_an_element_twice():
    B = 16
    idx = RNG.permutation(np.setdiff1d(np.arange(40), [11]))[:B].astype(np.int64)
    idx[3] = idx[9] = 11
    vals, out = randn(B), randn(40)

    def launch():
        d_scatter_once(idx, vals, out, B, grid=1, interpret=True, unchecked=True)
    return Refusal(launch, [idx, vals, out])


@refused("D18", errors.DataRaceError, "data race on 'out', element (5, 7)",
         "written twice by one scatter() of block (1,) (linear 1)",
         "from positions (2,) and (6,) of its index tiles")
def d18_masked_2d_scatter_writing_an_element_twice():
    B, cols = 8, 10
    flat = RNG.permutation(np.setdiff1d(np.arange(60), [57]))[:2 * B]
    flat[B + 2] = flat[B + 6] = 5 * cols + 7          # block 1, positions 2 and 6, both kept
    flat[B + 4] = flat[B + 1]                         # a repeat masked off: not reported
    keep = np.ones(2 * B, bool)
    keep[B + 4] = False
    ri, ci = (flat // cols).astype(np.int32), (flat % cols).astype(np.int32)
    vals, out = randn(2 * B), randn(6, cols)

    def launch():
        d_scatter_2d_masked(ri, ci, keep, vals, out, B, grid=2, interpret=True, unchecked=True)
    return Refusal(launch, [ri, ci, keep, vals, out])


@refused("D19", errors.DataRaceError, "data race on 'flags', element (6,)",
         "written twice by one scatter() of block (0,) (linear 0)",
         "from positions (0,) and (1,)", "atomic_xchg")
def d19_marking_scatter_with_a_repeated_index_even_of_one_value():
    B = 32
    rest = RNG.permutation(np.setdiff1d(np.arange(B), [6]))[:B - 2]
    idx = np.concatenate([[6, 6], rest]).astype(np.int32)     # element 6 at positions 0, 1
    flags = np.zeros(B, np.bool_)

    def launch():
        d_mark_seen(idx, nt.partition(flags, B), B, interpret=True, unchecked=True)
    return Refusal(launch, [idx, flags])


# ------------------------------------------------ V: legal neighbours of the D entries


@nt.jit(unchecked=True)
def v_rewrite_own(idx, out: nt.Mutable, B: nt.Constant):
    """Each block reads, then overwrites, the elements at its own slice of idx."""
    ix = nt.load(idx, (nt.bid(0),), (B,))
    nt.scatter(out, ix, nt.gather(out, ix) * 2.0 + 1.0)


@nt.jit(unchecked=True)
def v_read_shared(idx, pick, out: nt.Mutable, B: nt.Constant):
    """Every block gathers out[pick] (no block writes it) and writes its own elements."""
    ix = nt.load(idx, (nt.bid(0),), (B,))
    nt.scatter(out, ix, nt.gather(out, nt.load(pick, (0,), (B,))) + 1.0)


@nt.jit(unchecked=True)
def v_atomic_then_plain_in_one_block(out: nt.Mutable, B: nt.Constant):
    """Block i updates out[i*B:(i+1)*B] atomically, then reads and rewrites it plainly."""
    ix = nt.arange(B) + nt.full((B,), nt.bid(0) * B, nt.int32)
    nt.atomic_add(out, ix, 1.0)
    nt.scatter(out, ix, nt.gather(out, ix) * 3.0)


@nt.jit
def v_inplace(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    nt.store(z, nt.load(z) * 0.5 + nt.load_like(x, z))


@nt.jit
def v_persistent_inplace(x, z: nt.Partition[("BM", "BN")], BM: nt.Constant, BN: nt.Constant):
    for idx in nt.tiles(z):
        nt.store(z, nt.load(z, idx) + nt.load_like(x, z, index=idx), idx)


@nt.jit(unchecked=True)
def v_claim(slot, claims: nt.Mutable, won: nt.Partition["B"], B: nt.Constant):
    tid = nt.arange(B) + nt.full((B,), nt.bid(0) * B, nt.int32)
    prev = nt.atomic_cas(claims, nt.load_like(slot, won, padding=-1), -1, tid)
    nt.store(won, prev == -1)


@valid("V60")
def v60_atomics_from_every_block_to_one_element():
    idx = np.zeros(320, np.int64)
    idx[RNG.choice(320, 40, replace=False)] = RNG.integers(1, 3, 40)
    vals, out = randint(320), randint(3)
    o0 = out.astype(np.int64)

    def launch():
        u_scatter_add(idx, vals, out, 64, grid=5, interpret=True, unchecked=True)

    def check():
        want = o0.copy()
        np.add.at(want, idx, vals.astype(np.int64))
        np.testing.assert_array_equal(out, want)
    return launch, check


@valid("V61")
def v61_a_block_reading_then_writing_its_own_elements():
    idx = RNG.permutation(300)[:160].astype(np.int64)
    out = randn(300, dtype=np.float64)
    o0 = out.copy()

    def launch():
        v_rewrite_own(idx, out, 32, grid=5, interpret=True, unchecked=True)

    def check():
        want = o0.copy()
        want[idx] = o0[idx] * 2.0 + 1.0
        close(out, want)
    return launch, check


@valid("V62")
def v62_blocks_gathering_one_element_no_block_writes():
    pick = int(RNG.integers(0, 200))
    idx = RNG.permutation(np.setdiff1d(np.arange(200), [pick]))[:128].astype(np.int64)
    out = randn(200, dtype=np.float64)
    o0 = out.copy()

    def launch():
        v_read_shared(idx, np.full(32, pick, np.int64), out, 32, grid=4, interpret=True,
                      unchecked=True)

    def check():
        want = o0.copy()
        want[idx] = o0[pick] + 1.0
        close(out, want)
    return launch, check


@valid("V63")
def v63_2d_scatters_of_distinct_elements_from_every_block():
    flat = RNG.permutation(12 * 10)[:64]
    ri, ci = (flat // 10).astype(np.int32), (flat % 10).astype(np.int32)
    vals, out = randn(64), randn(12, 10)
    o0 = f64(out)

    def launch():
        d_scatter_2d(ri, ci, vals, out, 16, grid=4, interpret=True, unchecked=True)

    def check():
        want = o0.copy()
        want[ri, ci] = vals
        close(out, want)
    return launch, check


@valid("V64")
def v64_scatter_with_its_repeats_masked_off():
    B, cols = 16, 10
    flat = RNG.integers(0, 60, 2 * B)                 # repeats within and across blocks
    keep = np.zeros(2 * B, bool)
    keep[np.unique(flat, return_index=True)[1]] = True   # first occurrence of each element
    ri, ci = (flat // cols).astype(np.int32), (flat % cols).astype(np.int32)
    vals, out = randn(2 * B), randn(6, cols)
    o0 = f64(out)

    def launch():
        d_scatter_2d_masked(ri, ci, keep, vals, out, B, grid=2, interpret=True, unchecked=True)

    def check():
        want = o0.copy()
        want[ri[keep], ci[keep]] = vals[keep]
        close(out, want)
    return launch, check


@valid("V65")
def v65_atomic_and_plain_accesses_of_one_block_to_its_elements():
    out = randn(64, dtype=np.float64)
    o0 = out.copy()

    def launch():
        v_atomic_then_plain_in_one_block(out, 16, grid=4, interpret=True, unchecked=True)

    def check():
        close(out, (o0 + 1.0) * 3.0)
    return launch, check


@valid("V66")
def v66_partition_stores_at_a_hand_built_permutation_of_tiles():
    x, z = randn(64), nans(64)                        # tiles (3 i + 1) % 4 = 1, 0, 3, 2

    def launch():
        d_store_tile_at(x, nt.partition(z, 16), 3, 1, 4, 16, interpret=True, unchecked=True)

    def check():
        close(z.reshape(4, 16)[[1, 0, 3, 2]], f64(x).reshape(4, 16))
    return launch, check


@valid("V67")
def v67_safe_kernels_reading_and_writing_their_own_partition_tiles():
    x, z, w = randn(70, 50), randn(70, 50), randn(70, 50)
    z0, w0 = f64(z), f64(w)

    def launch():
        v_inplace(x, nt.partition(z, (16, 16)), 16, 16, interpret=True)
        v_persistent_inplace(x, nt.partition(w, (16, 16), blocks=3), 16, 16, interpret=True)

    def check():
        close(z, z0 * 0.5 + f64(x), rtol=1e-5)
        close(w, w0 + f64(x), rtol=1e-5)
    return launch, check


@valid("V68")
def v68_relaunches_on_the_same_array_start_from_a_clean_record():
    idx = RNG.permutation(100)[:64].astype(np.int64)
    v1, v2, out = randn(64), randn(64), randn(100)
    o0 = f64(out)

    def launch():
        d_scatter_rows(idx, v1, out, 16, grid=4, interpret=True, unchecked=True)
        d_scatter_rows(idx, v2, out, 16, grid=4, interpret=True, unchecked=True)

    def check():
        want = o0.copy()
        want[idx] = v2
        close(out, want)
    return launch, check


@valid("V69")
def v69_compare_and_swap_claims_from_every_block():
    n, m = 256, 20
    slot = RNG.integers(0, m, n).astype(np.int32)
    claims, won = np.full(m, -1, np.int32), np.zeros(n, np.bool_)

    def launch():
        v_claim(slot, claims, nt.partition(won, 64), 64, interpret=True, unchecked=True)

    def check():
        for k in range(m):
            contenders = np.nonzero(slot == k)[0]
            if len(contenders) == 0:
                assert claims[k] == -1
            else:
                assert won[contenders].sum() == 1 and claims[k] in contenders
                assert won[claims[k]]
    return launch, check


# --------------------------------------------------------------- malformed array interfaces
# Every array interface is validated before any GPU work (numba_tile/runtime/arrays.py,
# as_array_arg): rank, extents, strides, pointer, byte range, CUDA Array Interface `data` and
# `stream`, for every producer alike; partitions are checked again at launch (partition.py,
# launch_fields); an overlap the exact test cannot settle within its work bound is refused
# (overlap.py, MAX_WORK). L40-L69 are refused, V50-V59 are their legal neighbours.
import copy as pycopy  # noqa: E402
import types as launch_types  # noqa: E402

from numba_tile.runtime.fakes import FakeDLPack, RawInterface, cai_of  # noqa: E402

ZERO_D = ("0-d arrays are not supported; pass a Python number for a scalar parameter, or "
          "a.reshape(1) for a one-element tensor")
RANK20 = 20


def hard_strides(seed):
    """Rank-20 byte strides on which NumPy's exact overlap solver works exponentially."""
    rng = np.random.default_rng(seed)
    return tuple(4 * int(s) for s in rng.integers(10**12, 2 * 10**12, RANK20))


def superincreasing_strides(seed):
    """Rank-20 byte strides that the sufficient test proves free of self-overlap."""
    rng = np.random.default_rng(seed)
    out, span = [], 4
    for _ in range(RANK20):
        s = span + 4 * int(rng.integers(10**9, 2 * 10**9))
        out.append(s)
        span += s
    return tuple(out)


@refused("L40", errors.TileArgumentError, "kernel 'scale'", "argument 'z'", "shape (-40,)",
         "expected extents from 0 to 2**63 - 1", "got -40 on axis 0")
def l40_negative_extent_of_an_output_over_its_own_input():
    x = randn(40)
    bad_z = RawInterface(cai_of(x, shape=(-40,)), x)

    def launch():
        scale(x, nt.partition(bad_z, 16), interpret=True)  # L40
    return Refusal(launch, [x])


@refused("L41", errors.TileArgumentError, "argument 'x'", "shape (40.0,)",
         "expected ints, got 40.0 (float) on axis 0")
def l41_float_extent():
    x, z = randn(40), randn(40)
    bad = RawInterface(cai_of(x, shape=(40.0,)), x)

    def launch():
        scale(bad, nt.partition(z, 16), interpret=True)  # L41
    return Refusal(launch, [x, z])


@refused("L42", errors.TileArgumentError, "argument 'x'", "got True (bool) on axis 0")
def l42_bool_extent():
    x, z = randn(40), randn(40)
    bad = RawInterface(cai_of(x, shape=(True,)), x)

    def launch():
        scale(bad, nt.partition(z, 16), interpret=True)  # L42
    return Refusal(launch, [x, z])


@refused("L43", errors.TileArgumentError, "argument 'x'", "strides (4.0,)",
         "expected ints, got 4.0 (float) on axis 0")
def l43_float_stride():
    x, z = randn(40), randn(40)
    bad = RawInterface(cai_of(x, strides=(4.0,)), x)

    def launch():
        scale(bad, nt.partition(z, 16), interpret=True)  # L43
    return Refusal(launch, [x, z])


@refused("L44", errors.TileArgumentError, "argument 'z'", "got False (bool) on axis 0")
def l44_bool_stride():
    x, z = randn(40), randn(40)
    bad = RawInterface(cai_of(z, strides=(False,)), z)

    def launch():
        scale(x, nt.partition(bad, 16), interpret=True)  # L44
    return Refusal(launch, [x, z])


@refused("L45", errors.TileArgumentError, "argument 'x'",
         "data pointer: expected an int address, got")
def l45_float_pointer():
    x, z = randn(40), randn(40)
    bad = RawInterface(cai_of(x, data=(float(x.ctypes.data), False)), x)

    def launch():
        scale(bad, nt.partition(z, 16), interpret=True)  # L45
    return Refusal(launch, [x, z])


@refused("L46", errors.TileArgumentError, "argument 'x'", "is not aligned to the item size",
         "expected a multiple of 4 bytes (float32), got one 2 byte(s) past",
         "misaligned access destroys the CUDA context")
def l46_pointer_two_bytes_past_a_float32_allocation():
    x, z = randn(41), randn(40)
    bad = RawInterface(cai_of(x[:40], data=(x.ctypes.data + 2, False)), x)

    def launch():
        scale(bad, nt.partition(z, 16), interpret=True)  # L46
    return Refusal(launch, [x, z])


@refused("L47", errors.TileArgumentError, "argument 'z'", "is not aligned to the item size")
def l47_misaligned_numpy_output_in_the_interpreter():
    x = randn(16)
    raw = RNG.integers(1, 255, 4 * 17).astype(np.uint8)
    out = np.frombuffer(raw, np.float32, count=16, offset=2)     # 2 bytes past alignment

    def launch():
        scale(x, nt.partition(out, 4), interpret=True)  # L47
    return Refusal(launch, [x, raw])


@refused("L48", errors.TileArgumentError, "argument 'x'",
         "byte stride 5 on axis 0 is not a multiple of the item size 4 (float32)",
         "pass a contiguous copy")
def l48_field_of_a_packed_structured_array():
    packed = np.zeros(16, dtype=[("v", "<f4"), ("tag", "u1")])
    packed["v"] = randn(16)
    z = randn(16)

    def launch():
        scale(packed["v"], nt.partition(z, 4), interpret=True)  # L48
    return Refusal(launch, [packed["v"].copy(), z])


@refused("L49", errors.TileArgumentError, "argument 'x'", "byte stride 6 on axis 0")
def l49_as_strided_input_with_odd_byte_strides():
    base, z = randn(16), randn(8)
    odd = as_strided(base, (8,), (6,))

    def launch():
        scale(odd, nt.partition(z, 4), interpret=True)  # L49
    return Refusal(launch, [base, z])


@refused("L50", errors.TileArgumentError, "argument 'x'",
         "expected every byte inside the 64-bit address space")
def l50_range_past_the_end_of_the_address_space():
    x, z = randn(4), randn(4)
    bad = RawInterface(cai_of(x, data=(2**64 - 8, False)), x)

    def launch():
        scale(bad, nt.partition(z, 4), interpret=True)  # L50
    return Refusal(launch, [x, z])


@refused("L51", errors.TileArgumentError, "argument 'x'",
         "expected every byte inside the 64-bit address space")
def l51_negative_strides_below_address_zero():
    base, z = randn(4), randn(3)
    below = as_strided(base, (3,), (-(2**62),))     # never read: refused first

    def launch():
        scale(below, nt.partition(z, 4), interpret=True)  # L51
    return Refusal(launch, [base, z])


@refused("L52", errors.TileArgumentError, "argument 'x'",
         "expected byte strides from -2**63 to 2**63 - 1 (the kernel receives them as int64)")
def l52_stride_beyond_64_bits():
    x, z = randn(4), randn(4)
    bad = RawInterface(cai_of(x, strides=(2**70,)), x)

    def launch():
        scale(bad, nt.partition(z, 4), interpret=True)  # L52
    return Refusal(launch, [x, z])


@refused("L53", errors.TileArgumentError, "argument 'x'", "expected extents from 0 to 2**63 - 1",
         f"got {2**63} on axis 0")
def l53_extent_beyond_int64():
    x, z = randn(4), randn(4)
    bad = RawInterface(cai_of(x, shape=(2**63,), strides=(0,)), x)

    def launch():
        scale(bad, nt.partition(z, 4), interpret=True)  # L53
    return Refusal(launch, [x, z])


@refused("L54", errors.TileArgumentError, "argument 'x'", f"{2**64} elements of 4 bytes",
         "expected at most 2**63 - 1 bytes")
def l54_broadcast_of_more_bytes_than_int64_holds():
    x, z = randn(4), randn(4, 4)
    bad = RawInterface(cai_of(x, shape=(2**62, 4), strides=(0, 0)), x)

    def launch():
        scale(bad, nt.partition(z, (4, 4)), interpret=True)  # L54
    return Refusal(launch, [x, z])


@refused("L55", errors.TileArgumentError, "kernel 'scale'", "argument 'z'",
         "tile_shape was changed after numba_tile.partition() checked it", "got (3,)")
def l55_tile_shape_changed_through_object_setattr():
    x, z = randn(12), randn(12)
    p = nt.partition(z, 4)
    object.__setattr__(p, "tile_shape", (3,))

    def launch():
        scale(x, p, interpret=True)  # L55
    return Refusal(launch, [x, z])


@refused("L56", errors.TileArgumentError, "argument 'z'",
         "blocks was changed after numba_tile.partition() checked it",
         "expected None or an int from 1 to 2**31 - 1, got -1")
def l56_blocks_changed_through_object_setattr():
    x, z = randn(16), randn(16)
    p = nt.partition(z, 4, blocks=2)
    object.__setattr__(p, "blocks", -1)

    def launch():
        scale(x, p, interpret=True)  # L56
    return Refusal(launch, [x, z])


@refused("L57", errors.TileArgumentError, "Partition is immutable: cannot set 'tile_shape'",
         "make a new one with numba_tile.partition(array, tile_shape, blocks)")
def l57_assignment_to_a_partition_field():
    z = randn(16)
    p = nt.partition(z, 4)

    def launch():
        p.tile_shape = (3,)  # L57
    return Refusal(launch, [z])


@refused("L58", errors.TileArgumentError, "argument 'x'", "'stream' is 0",
         "CUDA Array Interface v3 forbids", "expected None, 1 (legacy default stream), 2")
def l58_cuda_array_interface_stream_zero():
    x, z = randn(16), randn(16)
    bad = RawInterface(cai_of(x, stream=0), x)

    def launch():
        scale(bad, nt.partition(z, 4), interpret=True)  # L58
    return Refusal(launch, [x, z])


@refused("L59", errors.TileArgumentError, "argument 'x'",
         "'data': expected a 2-tuple (pointer: int, read-only: bool)")
def l59_cuda_array_interface_data_of_three_items():
    x, z = randn(16), randn(16)
    bad = RawInterface(cai_of(x, data=(x.ctypes.data, False, 0)), x)

    def launch():
        scale(bad, nt.partition(z, 4), interpret=True)  # L59
    return Refusal(launch, [x, z])


@refused("L60", errors.TileArgumentError, "argument 'z'",
         "data pointer is null for a non-empty array of shape (16,)")
def l60_null_pointer_of_a_non_empty_output():
    x, z = randn(16), randn(16)
    bad = RawInterface(cai_of(z, data=(0, False)), z)

    def launch():
        scale(x, nt.partition(bad, 4), interpret=True)  # L60
    return Refusal(launch, [x, z])


@refused("L61", errors.TileArgumentError, "argument 'x'",
         "'stream': expected None or a positive int stream handle", "got 1.5 (float)")
def l61_cuda_array_interface_stream_not_an_int():
    x, z = randn(16), randn(16)
    bad = RawInterface(cai_of(x, stream=1.5), x)

    def launch():
        scale(bad, nt.partition(z, 4), interpret=True)  # L61
    return Refusal(launch, [x, z])


@refused("L62", errors.TileArgumentError, "argument 'x'", "shape (-16,)", "got -16 on axis 0")
def l62_dlpack_capsule_with_a_negative_extent():
    x, z = randn(16), randn(16)
    bad = FakeDLPack(x.ctypes.data, (-16,), keepalive=x)

    def launch():
        scale(bad, nt.partition(z, 4), interpret=True)  # L62
    return Refusal(launch, [x, z])


@refused("L63", errors.TileArgumentError, "argument 'x'",
         "expected every byte inside the 64-bit address space")
def l63_dlpack_capsule_with_strides_below_address_zero():
    x, z = randn(16), randn(16)
    bad = FakeDLPack(x.ctypes.data, (16,), (-(2**60),), keepalive=x, versioned=True)

    def launch():
        scale(bad, nt.partition(z, 4), interpret=True)  # L63
    return Refusal(launch, [x, z])


class CupyLookalike:
    """Recognised as a CuPy array by its module name; exports whatever interface it is given."""

    def __init__(self, interface, keepalive):
        self.__cuda_array_interface__ = interface
        self.keepalive = keepalive
        self.device = launch_types.SimpleNamespace(id=0)


CupyLookalike.__module__ = "cupy._core.core"


@refused("L64", errors.TileArgumentError, "argument 'x'", "shape (-16,)")
def l64_masquerading_cupy_array_with_a_negative_extent():
    x, z = randn(16), randn(16)
    bad = CupyLookalike(cai_of(x, shape=(-16,)), x)

    def launch():
        scale(bad, nt.partition(z, 4), interpret=True)  # L64
    return Refusal(launch, [x, z])


@refused("L65", errors.TileArgumentError, "kernel 'add_1d'", "argument 'y'", ZERO_D)
def l65_0d_array_for_a_tensor_parameter():
    x, y, z = randn(16), np.array(2.0, np.float32), randn(16)

    def launch():
        add_1d(x, y, nt.partition(z, 4), 4, interpret=True)  # L65
    return Refusal(launch, [x, y, z])


@refused("L66", errors.TileArgumentError, "argument 'array'", ZERO_D)
def l66_partition_of_a_0d_array():
    a = np.array(2.0, np.float32)

    def launch():
        nt.partition(a, ())  # L66
    return Refusal(launch, [a])


@refused("L67", errors.TileArgumentError, "argument 'x'", "expected at most 32 axes",
         "got 33", "merge axes with a reshape")
def l67_rank_above_the_bound():
    x, z = np.zeros((1,) * 33, np.float32), randn(4)

    def launch():
        scale(x, nt.partition(z, 4), interpret=True)  # L67
    return Refusal(launch, [x, z])


@refused("L68", errors.SelfOverlapError,
         "mutable argument 'z' could not be proven free of self-overlap within the bound",
         "max_work=", "contiguous")
def l68_rank20_output_the_exact_test_cannot_settle():
    """Strides the sufficient test cannot settle and NumPy's exact solver would take minutes on
    (~165 s before the bound); the view spans ~10**14 bytes but is refused before any read."""
    buf, x = randn(4), np.zeros((2,) * RANK20, np.float32)
    out = as_strided(buf, (2,) * RANK20, hard_strides(7), writeable=True)

    def launch():
        scale(x, nt.partition(out, (1,) * RANK20), interpret=True)  # L68
    return Refusal(launch, [buf])


@refused("L69", errors.AliasingError,
         "mutable argument 'z' could not be proven disjoint from read-only argument 'x' "
         "within the bound", "max_work=")
def l69_rank20_input_the_exact_test_cannot_separate_from_the_output():
    """An output provably free of self-overlap, an input 8 bytes further on whose overlap with it
    NumPy's exact solver cannot settle (it ran past 300 s before the bound)."""
    buf = randn(4)
    out = as_strided(buf, (2,) * RANK20, superincreasing_strides(1), writeable=True)
    x = as_strided(buf[2:], (2,) * RANK20, hard_strides(0))

    def launch():
        scale(x, nt.partition(out, (1,) * RANK20), interpret=True)  # L69
    return Refusal(launch, [buf])


@valid("V50")
def v50_reversed_input():
    x, z = randn(40), nans(40)

    def launch():
        scale(x[::-1], nt.partition(z, 16), interpret=True)

    def check():
        close(z, 2 * f64(x)[::-1])
    return launch, check


@valid("V51")
def v51_stride0_broadcast_input_2d():
    row, z = randn(8), nans(6, 8)

    def launch():
        scale(np.broadcast_to(row, (6, 8)), nt.partition(z, (2, 4)), interpret=True)

    def check():
        close(z, 2 * np.broadcast_to(f64(row), (6, 8)))
    return launch, check


@valid("V52")
def v52_empty_arrays_with_any_strides():
    x = as_strided(np.zeros(1, np.float32), (0, 4), (2**62, -3))
    z = as_strided(np.zeros(1, np.float32), (0, 4), (6, 2**40))

    def launch():
        scale(x, nt.partition(z, (2, 2)), interpret=True)

    def check():
        assert z.size == 0
    return launch, check


@valid("V53")
def v53_extent1_axis_with_a_stride_of_no_whole_items():
    base, z = randn(8), nans(1, 8)
    x = as_strided(base, (1, 8), (6, 4))

    def launch():
        scale(x, nt.partition(z, (1, 8)), interpret=True)

    def check():
        close(z, 2 * f64(base)[None, :])
    return launch, check


@valid("V54")
def v54_rank3_output_that_needs_the_exact_recursion():
    """Element (i, j, k) at float offset 2i + 3j + 8k: all 12 distinct, but strides (8, 12, 32)
    bytes fail the sufficient test, so the bounded exact recursion proves it."""
    base, x = randn(24), randn(3, 2, 2)
    b0 = f64(base)
    out = as_strided(base, (3, 2, 2), (8, 12, 32), writeable=True)

    def launch():
        scale(x, nt.partition(out, (1, 2, 2)), interpret=True)

    def check():
        want = b0.copy()
        for i in range(3):
            for j in range(2):
                for k in range(2):
                    want[2 * i + 3 * j + 8 * k] = 2 * float(x[i, j, k])
        close(base, want)
    return launch, check


@valid("V55")
def v55_dlpack_host_capsule_with_negative_strides():
    x, z = randn(16), nans(16)
    rev = FakeDLPack(x[15:].ctypes.data, (16,), (-1,), keepalive=x)

    def launch():
        scale(rev, nt.partition(z, 4), interpret=True)

    def check():
        close(z, 2 * f64(x)[::-1])
    return launch, check


@valid("V56")
def v56_copied_partition_launches():
    x, z = randn(16), nans(16)
    p = pycopy.copy(nt.partition(z, 4))

    def launch():
        scale(x, p, interpret=True)

    def check():
        close(z, 2 * f64(x))
    return launch, check


@valid("V57")
def v57_0d_value_reshaped_to_one_element():
    a, z = np.array(1.5, np.float32), nans(1)

    def launch():
        scale(a.reshape(1), nt.partition(z, 1), interpret=True)

    def check():
        close(z, [3.0])
    return launch, check


@valid("V58")
def v58_0d_value_as_a_python_number():
    a, z = np.array(1.5, np.float32), nans(8)

    def launch():
        fill(nt.partition(z, 4), float(a), interpret=True)

    def check():
        close(z, np.full(8, 1.5))
    return launch, check


@valid("V59")
def v59_rank_at_the_bound():
    shape = (1,) * 31 + (8,)
    x, z = randn(*shape), nans(*shape)

    def launch():
        scale(x, nt.partition(z, (1,) * 31 + (8,)), interpret=True)

    def check():
        close(z, 2 * f64(x))
    return launch, check


# ---------------------------------------------------------- launch-time checks (L70-L79)
# The byte span of an array argument is bounded (numba_tile/runtime/arrays.py, MAX_SPAN = 2**61
# bytes): past 2**63 NumPy's overlap solver would overflow and call an output that overlaps a
# read-only input disjoint (L70-L74). A Constant that sizes a partition tile must be a positive
# power-of-two int (kernel.py, _make_specs; L75, L76). Launch keywords have exact types
# (kernel.py, Kernel.__call__: interpret, unchecked, stream on both paths; L77-L79).
SPAN_BOUND = "expected at most 2**61 bytes from the lowest byte to one past the highest"


@nt.jit
def first_element_only(x, z: nt.Partition["B"], B: nt.Constant):
    first = nt.load(x, (0,), (1,))                       # reads x[0] alone
    nt.store(z, nt.broadcast_to(first, (B,)) * 0.0 + 7.0)


@nt.jit
def fill_ignoring_x(x, z: nt.Partition):
    nt.store(z, 1.0)                                     # never reads x (a regression cannot
                                                         # make the interpreter read its bytes)


@nt.jit(unchecked=True)
def u_copy(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z))


@refused("L70", errors.TileArgumentError, "kernel 'first_element_only'", "argument 'x'",
         f"spans {2**63 + 4} bytes", SPAN_BOUND)
def l70_input_whose_far_elements_pass_2_63_bytes_over_the_output():
    """x[0] is buf[1], which the output buf[0:2] holds; x[1] and x[2] lie 2**62 and 2**63 bytes
    on (every byte below 2**64, never read). NumPy's shares_memory called the two disjoint (its
    int64 offsets overflow), and the safe kernel overwrote its read-only input."""
    buf = randn(4)
    x = as_strided(buf[1:], shape=(3,), strides=(2**62,), writeable=False)

    def launch():
        first_element_only(x, nt.partition(buf[0:2], 2), 2, interpret=True)  # L70
    return Refusal(launch, [buf])


@refused("L71", errors.TileArgumentError, "argument 'x'", f"spans {2**63 + 8} bytes",
         SPAN_BOUND)
def l71_2d_input_with_an_outer_stride_of_2_62_over_the_output():
    """x[0, 0] and x[0, 1] are buf[1:3], inside the output; x[1, :] lies 2**62 bytes on."""
    buf = randn(8)
    x = as_strided(buf[1:], shape=(3, 2), strides=(2**62, 4), writeable=False)
    z = buf[0:6].reshape(3, 2)

    def launch():
        fill_ignoring_x(x, nt.partition(z, (1, 2)), interpret=True)  # L71
    return Refusal(launch, [buf])


@refused("L72", errors.TileArgumentError, "argument 'x'", SPAN_BOUND)
def l72_dlpack_capsule_spanning_past_the_bound():
    buf = randn(4)
    bad = FakeDLPack(buf.ctypes.data + 4, (3,), (2**60,), keepalive=buf, versioned=True)

    def launch():
        first_element_only(bad, nt.partition(buf[0:2], 2), 2, interpret=True)  # L72
    return Refusal(launch, [buf])


@refused("L73", errors.TileArgumentError, "argument 'x'", f"spans {2**62 + 4} bytes",
         SPAN_BOUND)
def l73_negative_strides_spanning_past_the_bound_inside_the_address_space():
    x, z = randn(3), randn(3)
    high = RawInterface(cai_of(x, strides=(-(2**61),), data=(2**62 + 2**61, True)), x)

    def launch():
        fill_ignoring_x(high, nt.partition(z, 1), interpret=True)  # L73
    return Refusal(launch, [x, z])


@refused("L74", errors.TileArgumentError, "argument 'x'", f"spans {2**61 + 4} bytes",
         SPAN_BOUND)
def l74_thirty_two_axes_each_far_below_the_bound_together_past_it():
    base, z = randn(1), randn(*(1,) * 32)
    wide = RawInterface(cai_of(base, shape=(2,) * 32, strides=(2**56,) * 32,
                               data=(1 << 40, True)), base)

    def launch():
        fill_ignoring_x(wide, nt.partition(z, (1,) * 32), interpret=True)  # L74
    return Refusal(launch, [base, z])


@refused("L75", errors.TileArgumentError, "kernel 'add_1d'",
         "the Constant 'B' sizes a tile of partition 'z' (Partition['B']), so it must be a "
         "positive power-of-two int, got [128] (list)")
def l75_tile_constant_given_a_list():
    x, z = randn(256), randn(256)

    def launch():
        add_1d(x, x, nt.partition(z, 128), [128], interpret=True)  # L75
    return Refusal(launch, [x, z])


@refused("L76", errors.TileArgumentError, "the Constant 'B' sizes a tile of partition 'z'",
         "got 128.0 (float)")
def l76_tile_constant_given_a_float_equal_to_a_launched_int():
    """128.0 == 128 and hashes alike: the launch-check specs cached for B=128 must not serve it."""
    x, z = randn(256), randn(256)
    add_1d(x, x, nt.partition(z, 128), 128, interpret=True)

    def launch():
        add_1d(x, x, nt.partition(z, 128), 128.0, interpret=True)  # L76
    return Refusal(launch, [x, z])


@refused("L77", errors.TileArgumentError, "kernel 'add_1d'",
         "interpret: expected True, False or None (the kernel's default), got 'yes' (str)")
def l77_interpret_given_a_string():
    x, z = randn(256), randn(256)

    def launch():
        add_1d(x, x, nt.partition(z, 128), 128, interpret="yes")  # L77
    return Refusal(launch, [x, z])


@refused("L78", errors.TileArgumentError, "kernel 'u_copy'",
         "unchecked: expected True or False, got 1 (int)")
def l78_unchecked_acknowledged_with_an_int():
    x, z = randn(256), randn(256)

    def launch():
        u_copy(x, nt.partition(z, 128), 128, interpret=True, unchecked=1)  # L78
    return Refusal(launch, [x, z])


@refused("L79", errors.TileArgumentError, "kernel 'add_1d'", "argument 'stream'",
         "got builtins.str ('x')")
def l79_stream_that_is_no_stream_in_the_interpreter():
    x, z = randn(256), randn(256)

    def launch():
        add_1d(x, x, nt.partition(z, 128), 128, interpret=True, stream="x")  # L79
    return Refusal(launch, [x, z])


# ------------------------------------------- declared tile orders and idx[d] (grouped GEMM order)
# A partition may declare the traversal order of its tiles: partition(z, tile_shape,
# order=nt.grouped(G)) gives Triton's grouped order over the last two axes of the tile grid
# (runtime/partition.py: grouped, normalize_order, tile_coords; lowering/partition.py:
# tile_coords, which memory.own_tile_index, bid() and tiles() use). Every order is a bijection of
# the tile grid, so each tile still has exactly one block. A branded index gives its coordinates
# as plain int64 values, idx[d] (numba_tile's op index_getitem, keyed by operator.getitem; the
# closed-world pass accepts a getitem on a PartitionIndex only when that op's own rule typed it
# and no other lowering can run for it: closed_world._check_index_item). C87-C90 are refused,
# L80-L81 are refused at the launch line, V73-V75 are legal neighbours.
#
# Paste this block anywhere after the helpers of tests/unit/test_corpus.py (e.g. after the
# "persistent and branded" section).
#
# C25 changes with this feature: (idx[0],) now types (a tuple of plain int64 values) and the
# store refuses it as an index built by hand. Replace its decorator by:
#
#     @refused("C25", errors.ForeignTileStoreError, "store() to partition 'z'",
#              "built by hand (UniTuple(int64 x 1))")
#
# (the marked line, the kernel and the build function stay as they are; docs/safety.md R4 says
# so now).
from numba.cuda.typing.templates import AbstractTemplate as _GroupedAbstractTemplate  # noqa: E402
from numba.cuda.typing.templates import infer as _grouped_infer  # noqa: E402
from numba.cuda.typing.templates import signature as _grouped_signature  # noqa: E402

from numba_tile.typing.types import PartitionIndexType as _GroupedIndexType  # noqa: E402


@nt.jit
def g_store_at_rebuilt_coordinates(x, z: nt.Partition):
    for idx in nt.tiles(z):
        nt.store(z, nt.load_like(x, z, index=idx), (idx[0], idx[1]))  # C87


@refused("C87", errors.ForeignTileStoreError, "store() to partition 'z'",
         "built by hand (UniTuple(int64 x 2))", "tiles(z)")
def c87_index_rebuilt_from_the_coordinates_of_a_grouped_index():
    x, z = randn(37, 53), randn(37, 53)
    return compiled(g_store_at_rebuilt_coordinates, [x, z], x,
                    nt.partition(z, (8, 8), blocks=4, order=nt.grouped(3)))


@_grouped_infer
class _RebrandStaticItem(_GroupedAbstractTemplate):
    """A user "static_getitem" rule: item 99 of an index of partition 'w' typed as an index of
    partition 'z' (with a lowering, it would let w's tiles be stored into z)."""

    key = "static_getitem"

    def generic(self, args, kws):
        index, item = args
        if isinstance(index, _GroupedIndexType) and index.brand == "w" and item == 99:
            return _grouped_signature(_GroupedIndexType("z", index.ndim), *args)
        return None


@lower_builtin("static_getitem", _GroupedIndexType("w", 2), types.IntegerLiteral(99))
def _rebrand_static_item_lowering(context, builder, sig, args):
    """... and its lowering: the index of 'w' itself, now typed as one of 'z'."""
    return args[0]


@nt.jit
def g_index_rebranded_by_a_static_getitem_rule(x, z: nt.Partition, w: nt.Partition):
    for iw in nt.tiles(w):
        nt.store(z, nt.load(x, iw, (8, 8)), iw[99])  # C88


@refused("C88", errors.UnanalyzedCallError, "index_getitem() was typed by a rule registered "
         "outside numba_tile", "PartitionIndex[w, 2d]")
def c88_user_static_getitem_rule_rebrands_an_index():
    x, z, w = randn(37, 53), randn(37, 53), randn(37, 53)
    return compiled(g_index_rebranded_by_a_static_getitem_rule, [x, z, w], x,
                    nt.partition(z, (8, 8), blocks=4, order=nt.grouped(3)),
                    nt.partition(w, (8, 8), blocks=4, order=nt.grouped(3)))


def _rebrand_getitem_typer(index, item):
    """A user rule for ``operator.getitem``: item 98 of an index of partition 'w' typed as an
    index of partition 'z' (numba_tile's own rule refuses the axis, so Numba tries this one)."""
    if isinstance(index, _GroupedIndexType) and index.brand == "w" \
            and isinstance(item, types.IntegerLiteral) and item.literal_value == 98:
        return _GroupedIndexType("z", index.ndim)
    return None


type_callable(operator.getitem)(lambda context: _rebrand_getitem_typer)


@nt.jit
def g_index_rebranded_by_a_getitem_rule(x, z: nt.Partition, w: nt.Partition):
    for iw in nt.tiles(w):
        nt.store(z, nt.load(x, iw, (8, 8)), iw[98])  # C89


@refused("C89", errors.UnanalyzedCallError, "index_getitem() was typed by a rule registered "
         "outside numba_tile", "PartitionIndex[w, 2d]")
def c89_user_getitem_rule_rebrands_an_index():
    x, z, w = randn(37, 53), randn(37, 53), randn(37, 53)
    return compiled(g_index_rebranded_by_a_getitem_rule, [x, z, w], x,
                    nt.partition(z, (8, 8), blocks=4, order=nt.grouped(8)),
                    nt.partition(w, (8, 8), blocks=4, order=nt.grouped(8)))


@lower_builtin("static_getitem", _GroupedIndexType("zs", 1), types.IntegerLiteral(0))
def _foreign_static_item_lowering(context, builder, sig, args):
    """A user lowering Numba would run for ``idx[0]`` of partition 'zs' instead of numba_tile's
    (registered for that one index type only: a wider one would refuse every idx[d] of this
    process, which tests/unit/test_tile_order.py checks in a child process)."""
    raise AssertionError("never lowered")


@nt.jit
def g_item_with_a_foreign_static_getitem_lowering(x, zs: nt.Partition):
    for idx in nt.tiles(zs):
        t = nt.load(x, (idx[0],), (16,))  # C90
        nt.store(zs, t, idx)


@refused("C90", errors.UnanalyzedCallError, "'static_getitem' lowering registered outside "
         "numba_tile", "_foreign_static_item_lowering")
def c90_foreign_static_getitem_lowering_of_an_index():
    x, zs = randn(40), randn(40)
    return compiled(g_item_with_a_foreign_static_getitem_lowering, [x, zs], x,
                    nt.partition(zs, 16, blocks=2))


@refused("L80", errors.TileArgumentError, "argument 'z'", "order was changed after "
         "numba_tile.partition() checked it", "got ('grouped', 0) (tuple)")
def l80_order_of_a_partition_changed_behind_the_guard():
    x, z = randn(37, 53), randn(37, 53)
    p = nt.partition(z, (8, 8), order=nt.grouped(3))
    object.__setattr__(p, "order", ("grouped", 0))      # a group of 0: a division by zero

    def launch():
        add_2d(x, x, p, 8, 8, interpret=True)  # L80
    return Refusal(launch, [x, z])


@refused("L81", errors.TileArgumentError, "argument 'order'", "the group of a grouped order must "
         "be a positive int", "got True (bool)")
def l81_grouped_order_with_a_bool_group():
    z = randn(37, 53)

    def launch():
        nt.partition(z, (8, 8), order=("grouped", True))  # L81
    return Refusal(launch, [z])


@nt.jit
def v_grouped_gemm_shaped(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant,
                          BN: nt.Constant, BK: nt.Constant):
    for idx in nt.tiles(c):
        acc = nt.zeros((BM, BN), nt.float32)
        for k in range(nt.num_tiles(a, 1, BK)):
            ta = nt.load(a, (idx[0], k), (BM, BK), padding=0.0)
            tb = nt.load(b, (k, idx[-1]), (BK, BN), padding=0.0)
            acc = acc + nt.sum(ta, 1, keepdims=True) * nt.sum(tb, 0, keepdims=True)
        nt.store(c, acc, idx)


def _outer_sums(a, b, bk):
    out = np.zeros((a.shape[0], b.shape[1]))
    for k in range(0, a.shape[1], bk):
        out += f64(a[:, k:k + bk]).sum(1, keepdims=True) * f64(b[k:k + bk, :]).sum(0, keepdims=True)
    return out


@valid("V73")
def v73_persistent_gemm_shaped_kernel_in_grouped_order_loads_at_idx_items():
    a, b, c = randn(37, 45), randn(45, 53), nans(37, 53)

    def launch():
        v_grouped_gemm_shaped(a, b, nt.partition(c, (8, 8), blocks=4, order=nt.grouped(3)),
                              8, 8, 16, interpret=True)

    def check():
        close(c, _outer_sums(a, b, 16), rtol=1e-4, atol=1e-4)
    return launch, check


@nt.jit
def v_grouped_own_tile_at_bids(a, b, c: nt.Partition[("BM", "BN")], BM: nt.Constant,
                               BN: nt.Constant, BK: nt.Constant):
    acc = nt.zeros((BM, BN), nt.float32)
    for k in range(nt.num_tiles(a, 1, BK)):
        ta = nt.load(a, (nt.bid(0), k), (BM, BK), padding=0.0)
        tb = nt.load(b, (k, nt.bid(1)), (BK, BN), padding=0.0)
        acc = acc + nt.sum(ta, 1, keepdims=True) * nt.sum(tb, 0, keepdims=True)
    nt.store(c, acc)


@valid("V74")
def v74_one_block_per_tile_in_grouped_order_loads_at_its_bids():
    a, b, c = randn(37, 45), randn(45, 53), nans(37, 53)

    def launch():
        v_grouped_own_tile_at_bids(a, b, nt.partition(c, (8, 8), order=nt.grouped(8)), 8, 8, 16,
                                   interpret=True)

    def check():
        close(c, _outer_sums(a, b, 16), rtol=1e-4, atol=1e-4)
    return launch, check


@valid("V75")
def v75_two_partitions_of_one_grid_in_different_orders():
    """Block b owns tile b of z1's order and tile b of z2's: two bijections, each partition
    still has one writer per tile (two_out: z1 = x + 1, z2 = 3x, each at its own tile)."""
    x, z1, z2 = randn(37, 53), nans(37, 53), nans(37, 53)

    def launch():
        two_out(x, nt.partition(z1, (8, 8), order=nt.grouped(3)), nt.partition(z2, (8, 8)),
                interpret=True)

    def check():
        close(z1, f64(x) + 1.0)
        close(z2, 3 * f64(x))
    return launch, check


# ------------------------------------------------------------------------ load_at, tuples


@nt.jit
def g_load_at_of_a_partition(x, z: nt.Partition):
    nt.store(z, nt.load_at(z, (3,), (16,), padding=0) + nt.load_like(x, z))  # C91


@refused("C91", errors.TileTypingError, "load_at", "partition 'z'", "would race")
def c91_load_at_reads_another_blocks_tile_of_a_partition():
    # element coordinates of the array being written: any block's tile, while it writes it
    x, z = randn(64), randn(64)
    return compiled(g_load_at_of_a_partition, [x, z], x, nt.partition(z, 16))


@nt.jit
def g_group_add(xs, zs: nt.Partition):
    for g in nt.static_range(len(zs)):
        for idx in nt.tiles(zs[g]):
            nt.store(zs[g], nt.load_like(xs[g], zs[g], index=idx, padding=0) * 2.0, idx)


@refused("L82", errors.AliasingError, "mutable argument 'zs__1'", "'xs__0'")
def l82_a_member_of_one_tuple_overlaps_a_member_of_another():
    # each member is checked like a single array: zs[1] lies inside xs[0]
    buf, other = randn(96), randn(32)

    def launch():
        g_group_add((buf, other), (nt.partition(randn(32), 16, blocks=2), nt.partition(buf[40:72], 16, blocks=2)), interpret=True)  # L82
    return Refusal(launch, [buf, other])


@nt.jit
def g_group_by_a_runtime_index(xs, z: nt.Partition, i):
    nt.store(z, nt.load_like(xs[i], z, padding=0))  # L83


@refused("L83", errors.TileArgumentError, "group 'xs' indexed by a value known only at run time")
def l83_a_tuple_member_chosen_at_run_time():
    # members differ in type (extents, strides, ownership): no run-time choice among them;
    # refused when the kernel is rewritten for the tuple (the marked line is the kernel's)
    a, b, z = randn(16), randn(16), randn(16)

    def launch():
        g_group_by_a_runtime_index((a, b), nt.partition(z, 16), 1, interpret=True)
    return Refusal(launch, [a, b, z])


@valid("V76")
def v76_tuples_of_disjoint_members():
    """Members of one tuple views of one buffer, disjoint, beside a tuple of inputs."""
    buf = nans(80)
    xs = (randn(30), randn(40))
    zs = (nt.partition(buf[:30], 16, blocks=3), nt.partition(buf[40:], 16, blocks=3))

    def launch():
        g_group_add(xs, zs, interpret=True)

    def check():
        close(buf[:30], 2 * f64(xs[0]))
        close(buf[40:], 2 * f64(xs[1]))
        assert np.isnan(buf[30:40]).all()
    return launch, check


# ------------------------------------------------------------ strips of another partition


@nt.jit
def g_foreign_strips_3d(x, w: nt.Partition[1, 4, 32], y: nt.Partition[1, 4, 32]):
    for row in nt.strips(w):
        for idx in nt.tiles(w, row):
            nt.store(w, nt.load(x, idx, (1, 4, 32), padding=0.0), idx)
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (1, 4, 32), padding=0.0) * 2.0, idx)


@nt.jit
def g_two_strip_sources_3d(x, w: nt.Partition[1, 4, 32], y: nt.Partition[1, 4, 32]):
    for row in nt.strips(w):
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (1, 4, 32), padding=0.0), idx)
    for row in nt.strips(y):  # C92
        for idx in nt.tiles(y, row):
            nt.store(y, nt.load(x, idx, (1, 4, 32), padding=0.0) * 2.0, idx)


@refused("C92", errors.ForeignTileStoreError, "'y'", "strips of 'w' and of 'y'")
def c92_a_rank3_partition_reached_through_two_partitions_strips():
    # strips over two leading axes are numbered over each partition's own grid: block b's
    # strip (r, g) of w is not block b's strip (r, g) of y when the grids differ, so y's tile
    # could be stored by two blocks
    x, w, y = randn(2, 20, 64), randn(2, 20, 64), randn(2, 12, 64)
    parts = (nt.partition(w, (1, 4, 32), blocks=3), nt.partition(y, (1, 4, 32), blocks=3))
    return compiled(g_two_strip_sources_3d, [x, w, y], x, *parts)


@valid("V77")
def v77_a_rank3_strip_names_another_partitions_tiles():
    """A strip of w names y's tiles at its coordinates (rope_qk's query and key heads), y's
    grid smaller along the heads: the strips past y's grid store nothing."""
    x, w, y = randn(3, 20, 64), nans(3, 20, 64), nans(3, 12, 64)

    def launch():
        g_foreign_strips_3d(x, nt.partition(w, (1, 4, 32), blocks=4),
                            nt.partition(y, (1, 4, 32), blocks=4), interpret=True)

    def check():
        close(w, f64(x))
        close(y, 2 * f64(x[:, :12]))
    return launch, check


# ------------------------------------------------------- reversed walks (tiles(reverse=True))


@nt.jit
def g_reversed_foreign_store(x: nt.Partition[1, 32], y: nt.Partition[1, 32]):
    for row in nt.strips(x):
        for idx in nt.tiles(x, row, reverse=True):
            nt.store(y, nt.load(x, idx, padding=0.0), idx)  # C93


@refused("C93", errors.ForeignTileStoreError, "'y'")
def c93_a_reversed_index_of_x_stored_into_y():
    # a reversed walk mints the same branded indices as the forward one: x's, not y's
    x, y = randn(6, 100), randn(6, 100)
    parts = (nt.partition(x, (1, 32), blocks=2), nt.partition(y, (1, 32), blocks=2))
    return compiled(g_reversed_foreign_store, [x, y], *parts)


@nt.jit
def g_reversed_then_strips(x, y: nt.Partition[4, 32]):
    for idx in nt.tiles(y, reverse=True):
        nt.store(y, nt.load(x, idx, (4, 32), padding=0.0), idx)
    for row in nt.strips(y):  # C94
        for idx in nt.tiles(y, row, reverse=True):
            nt.store(y, nt.load(x, idx, (4, 32), padding=0.0) * 2.0, idx)


@refused("C94", errors.ForeignTileStoreError, "both tiles(y) and strips(y)")
def c94_reversed_tiles_and_strips_of_one_partition():
    # reversed or not, tiles(y) gives block b tiles b, b + B, ... and strips(y) rows b, b + B:
    # one scheme per partition
    x, y = randn(20, 100), randn(20, 100)
    return compiled(g_reversed_then_strips, [x, y], x, nt.partition(y, (4, 32), blocks=3))


@nt.jit
def g_reversed_suffix_through_strips(x, w: nt.Partition[1, 32], y: nt.Partition[1, 32]):
    for row in nt.strips(w):
        acc = nt.zeros((1, 32), nt.float32)
        for idx in nt.tiles(y, row, reverse=True):
            acc = acc + nt.load(x, idx, (1, 32), padding=0.0)
            nt.store(y, acc, idx)
        for idx in nt.tiles(w, row):
            nt.store(w, nt.load(x, idx, (1, 32), padding=0.0), idx)


@valid("V78")
def v78_a_reversed_walk_of_another_partitions_strip_tiles():
    """Suffix sums of y's tiles along each row, walked from the last tile through w's strips
    (y has fewer rows: w's strips past them store nothing in y)."""
    x, w, y = randn(7, 100), nans(7, 100), nans(5, 100)

    def launch():
        g_reversed_suffix_through_strips(x, nt.partition(w, (1, 32), blocks=3),
                                         nt.partition(y, (1, 32), blocks=3), interpret=True)

    def check():
        close(w, f64(x))
        xp = np.zeros((5, 128))
        xp[:, :100] = f64(x[:5])
        tiles = xp.reshape(5, 4, 32)
        close(y, np.cumsum(tiles[:, ::-1], axis=1)[:, ::-1].reshape(5, 128)[:, :100])
    return launch, check


@nt.jit
def g_lockstep_crossed(x, dx: nt.Partition[1, 32], loss: nt.Partition[1, 32]):
    for row in nt.strips(dx):
        for idx, jdx in zip(nt.tiles(dx, row), nt.tiles(loss, row)):
            nt.store(loss, nt.load(x, idx, (1, 32), padding=0.0), idx)  # C95


@refused("C95", errors.ForeignTileStoreError, "store() to partition 'loss'", "'dx'")
def c95_a_lockstep_walks_index_stored_into_the_other_partition():
    # zip pairs the two walks' indices; each keeps its own partition's brand
    x, dx, loss = randn(6, 100), randn(6, 100), randn(6, 100)
    parts = (nt.partition(dx, (1, 32), blocks=2), nt.partition(loss, (1, 32), blocks=2))
    return compiled(g_lockstep_crossed, [x, dx, loss], x, *parts)


@nt.jit
def g_inplace_on_a_tensor(x, z: nt.Partition["B"], B: nt.Constant):
    x += 1.0  # C96
    nt.store(z, nt.load_like(x, z))


@refused("C96", errors.TileTypingError, "an array parameter is not an operand")
def c96_an_augmented_assignment_to_a_tensor():
    # x += 1 is x = x + 1: refused, and nothing written through it
    x, z = randn(40), randn(40)
    return compiled(g_inplace_on_a_tensor, [x, z], x, nt.partition(z, 16), 16)


@nt.jit
def g_slice_of_a_tensor(x, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.full((B,), 0.0, nt.float32) + x[1:3])  # C97


@refused("C97", errors.TileTypingError, "integer coordinate(s) of 'x'")
def c97_a_static_slice_of_a_tensor():
    # static slices are tiles' (subtile); an array parameter is read element by element
    x, z = randn(40), randn(40)
    return compiled(g_slice_of_a_tensor, [x, z], x, nt.partition(z, 16), 16)


@nt.jit
def g_lockstep_two_outputs(x, dx: nt.Partition[1, 32], loss: nt.Partition[1, 32]):
    for row in nt.strips(dx):
        for idx, jdx in zip(nt.tiles(dx, row), nt.tiles(loss, row)):
            t = nt.load(x, idx, (1, 32), padding=0.0)
            nt.store(dx, t * 2.0, idx)
            nt.store(loss, t * t, jdx)


@valid("V79")
def v79_two_partitions_walked_in_lockstep():
    x, dx, loss = randn(7, 100), nans(7, 100), nans(7, 100)

    def launch():
        g_lockstep_two_outputs(x, nt.partition(dx, (1, 32), blocks=3),
                               nt.partition(loss, (1, 32), blocks=3), interpret=True)

    def check():
        close(dx, 2.0 * f64(x))
        close(loss, f64(x) ** 2)
    return launch, check


# ============================================================================= tests


@pytest.mark.parametrize("case_id,build,cls,fragments", REFUSED)
def test_refused(case_id, build, cls, fragments):
    case = build()
    before = [np.array(a, copy=True) for a in case.guarded]
    err = catch(case.launch)
    if err is None:
        raise NotRefused(f"{case_id} was accepted; expected {cls.__name__}")
    assert type(err) is cls, f"{case_id}: expected {cls.__name__}, got {type(err).__name__}: {err}"
    for frag in fragments:
        assert frag in err.message, f"{case_id}: {frag!r} not in {err.message!r}"
    if cls.rule:
        assert cls.rule in str(err)
    for after, was in zip(case.guarded, before):
        np.testing.assert_array_equal(after, was)            # nothing ran
    line = marker_line(case_id)
    if (err.filename, err.lineno) != (__file__, line):
        raise WrongLine(f"{case_id}: error points at {err.filename}:{err.lineno}, expected "
                        f"{__file__}:{line}")
    assert open(__file__).read().splitlines()[line - 1].strip() in str(err)   # shows the line


#: compile-time entries that do not go through both paths: C15 compiles only (its intrinsic has
#: no Python body), C76 is refused when the kernel is defined, before either path
DEFINITION_OR_PTX_ONLY = ("C15", "C76")
COMPILE_PATH = [pytest.param(*p.values, id=p.id) for p in REFUSED
                if p.values[0].startswith("C") and p.values[0] not in DEFINITION_OR_PTX_ONLY]


@pytest.mark.parametrize("case_id,build,cls,fragments", COMPILE_PATH)
def test_refused_on_the_compile_path_too(case_id, build, cls, fragments):
    """kernel.ptx() (the GPU compile pipeline, no GPU needed) refuses every compile-time entry
    with the same error as the interpreter, at the same line."""
    case = build()
    in_interpreter = catch(case.launch)
    on_compile_path = catch(case.compile)
    assert in_interpreter is not None and on_compile_path is not None
    assert type(on_compile_path) is type(in_interpreter) is cls
    assert on_compile_path.message == in_interpreter.message
    assert (on_compile_path.filename, on_compile_path.lineno) == \
        (in_interpreter.filename, in_interpreter.lineno)


@pytest.mark.parametrize("build", VALID)
def test_valid(build):
    launch, check = build()
    launch()
    check()


@pytest.mark.parametrize("build", VALID)
def test_valid_on_the_compile_path_too(build, monkeypatch, tmp_path):
    """The same launches, turned into ``kernel.ptx(...)`` calls, compile to PTX (typing,
    ownership pass, lowering, libNVVM; no GPU): no false positive on the GPU path either."""
    from numba_tile.cache import CACHE_ENV
    from numba_tile.kernel import CompletedLaunch
    from numba_tile.runtime.partition import Partition

    ptx = []

    def compile_instead(self, *args, interpret=None, stream=None, on_conflict="wait", grid=None,
                        unchecked=False, **kwargs):
        ptx.append(self.ptx(*args, **kwargs))
        return CompletedLaunch(tuple(a.array if isinstance(a, Partition) else a for a in args))

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))          # compile, do not read a disk cache
    monkeypatch.setattr(nt.Kernel, "__call__", compile_instead)
    launch, _check = build()
    launch()
    assert ptx and all(".entry" in text for text in ptx)


def test_corpus_size():
    ids = [p.values[0] for p in REFUSED]
    assert len(ids) == len(set(ids)) and len(REFUSED) >= 45 and len(VALID) >= 22
    for case_id in ids:
        marker_line(case_id)                                  # one marked line per entry
