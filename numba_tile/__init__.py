"""numba_tile: safe, fast tile programming for GPUs in Python.

A kernel is a Python function over tiles, decorated with :func:`jit`; parameters are
read-only tensors, mutable :class:`Partition` parameters (the block's own tile of an
array split on the host by :func:`partition`) and compile-time :class:`Constant` values.
Before any GPU work runs, numba_tile checks that no two blocks write the same memory
and that nothing writes an input; a launch keeps every argument alive until the GPU is
done with it. See ``docs/`` and ``examples/``.

Public API (everything else is private):

* decorator and annotations: :func:`jit`, :class:`Tensor`, :class:`Partition`,
  :class:`Constant`; host side: :func:`partition` (tile orders: :func:`grouped`),
  :func:`synchronize`, :func:`launch_defaults` (the stream of launches that give none),
  :class:`Graph` (capture launches once, replay them as a CUDA graph),
  :func:`gpu_available`; PyTorch custom ops: :func:`torch_op`;
* ops (inside kernels): :func:`load`, :func:`load_like`, :func:`store`, :func:`tiles`,
  :func:`strips`,
  :func:`num_tiles`, :func:`where`, :func:`filled`,
  :func:`astype`, :func:`minimum`, :func:`maximum`, :func:`mulhi`, :func:`umulhi`, math functions (:func:`exp`,
  :func:`exp2`, :func:`log`, :func:`log2`, :func:`sqrt`, :func:`rsqrt`, :func:`abs`,
  :func:`tanh`, :func:`sigmoid`, :func:`sin`, :func:`cos`, :func:`floor`, :func:`ceil`),
  constructors (:func:`full`, :func:`zeros`, :func:`arange`), shape ops
  (:func:`reshape`, :func:`expand_dims`, :func:`broadcast_to`, :func:`permute`,
  :func:`transpose`), reductions (:func:`sum`, :func:`prod`, :func:`max`, :func:`min`,
  :func:`argmax`, :func:`argmin`, :func:`cumsum`), random numbers (:func:`rand`,
  :func:`randn`, :func:`randint`, :func:`randint4x`: Philox, bit-identical to Triton's),
  :func:`bid`,
  :func:`num_blocks`, and the operators on tiles;
* unchecked ops (only in kernels marked ``@jit(unchecked=True)``, launched with
  ``unchecked=True``): :func:`gather`, :func:`scatter`, :func:`atomic_add`,
  :func:`atomic_max`, :func:`atomic_min`, :func:`atomic_xchg`, :func:`atomic_cas`, and
  :class:`Mutable` parameters;
* dtypes: ``float16``, ``bfloat16``, ``float32``, ``float64``, ``int8``, ``int16``,
  ``int32``, ``int64``, ``uint8``, ``uint16``, ``uint32``, ``uint64``, ``bool_``, and the
  storage-only ``float8_e4m3fn``, ``float8_e5m2`` (promotion table in
  :mod:`numba_tile.dtypes`);
* errors: :mod:`numba_tile.errors`.
"""

from __future__ import annotations

from . import _compat  # noqa: F401  (first: NumPy 2.5 needs it before numba-cuda initializes)
from . import errors
from ._registry import finalize as _finalize
from .dtypes import (bfloat16, bool_, float8_e4m3fn, float8_e5m2, float16, float32, float64, int8,
                     int16, int32, int64, uint8, uint16, uint32, uint64)
from .autotune import Config, autotune
from .kernel import Constant, Kernel, Mutable, Partition, Tensor, jit
from .language import (abs_ as abs, arange, argmax, argmin, astype, atomic_add, atomic_cas,
                       atomic_max, cumsum,
                       atomic_min, atomic_xchg, bid, broadcast_to, ceil, cos, exp, exp2,
                       expand_dims, filled, floor, full, gather, item, matmul, max, min, mma, permute, prod, reshape,
                       scatter, subtile, sum, transpose,
                       load, load_at, load_like, log, log2, maximum, minimum, mulhi, num_blocks, num_tiles,
                       rsqrt, umulhi,
                       rand, randint, randint4x, randn,
                       sigmoid, sin, sqrt, static_range, store, strips, tanh, tiles, where, zeros,
                       trunc, rint, erf, erfc, log1p, expm1, log10, cbrt, tan, asin, acos, atan,
                       sinh, cosh, asinh, acosh, atanh, atan2, hypot, copysign, fdiv, isnan, isinf, isfinite)
from .runtime.capture import Graph
from .runtime.defaults import launch_defaults
from .runtime.driver import gpu_available
from .runtime.inflight import synchronize_all as synchronize
from .runtime.partition import grouped, partition
from .torch_library import torch_op

# The three rule sets of every op family; finalize() checks none is missing.
from .typing import creation as _t1, elementwise as _t2, memory as _t3, program as _t4  # noqa: E402,F401
from .typing import partition as _t5, shape as _t7, unchecked as _t6  # noqa: E402,F401
from .typing import mma as _t9, reduction as _t8  # noqa: E402,F401
from .typing import device as _t11  # noqa: E402,F401
# helpers and device functions register how kernel snapshots copy them (frozen.py)
from .typing import helpers as _t12  # noqa: E402,F401
from .typing import random as _t10  # noqa: E402,F401
from .lowering import creation as _l1, elementwise as _l2, memory as _l3, program as _l4  # noqa: E402,F401
from .lowering import partition as _l5, shape as _l7, unchecked as _l6  # noqa: E402,F401
from .lowering import mma as _l9, reduction as _l8  # noqa: E402,F401
from .lowering import device as _l11  # noqa: E402,F401
from .lowering import random as _l10  # noqa: E402,F401
from .lowering import scalar_ufuncs as _l12  # noqa: E402,F401
from .interpreter import creation as _i1, elementwise as _i2, memory as _i3, program as _i4  # noqa: E402,F401
from .interpreter import partition as _i5, shape as _i7, unchecked as _i6  # noqa: E402,F401
from .interpreter import mma as _i9, reduction as _i8  # noqa: E402,F401
from .interpreter import device as _i11  # noqa: E402,F401
from .interpreter import random as _i10  # noqa: E402,F401

_finalize()

__version__ = "0.1.0"

# ``abs``, ``sum``, ``max`` and ``min`` are left out of ``__all__`` so that a star import
# does not shadow Python's builtins; use them as ``numba_tile.sum`` etc.
# re-exported on purpose, outside __all__ (see above)
_PUBLIC_NOT_STARRED = (abs, max, min, sum)

__all__ = [
    "jit", "Kernel", "autotune", "Config", "Tensor", "Partition", "Mutable", "Constant", "partition", "grouped",
    "synchronize", "launch_defaults", "Graph", "torch_op",
    "gpu_available", "errors",
    "load", "load_at", "load_like", "store", "tiles", "static_range", "where", "filled", "astype", "minimum", "maximum",
    "mulhi", "umulhi",
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos",
    "floor", "ceil", *("trunc", "rint", "erf", "erfc", "log1p", "expm1", "log10", "cbrt", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "atan2", "hypot", "copysign", "fdiv", "isnan", "isinf", "isfinite"), "full", "zeros", "arange", "bid", "num_blocks", "num_tiles", "strips",
    "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "bool_",
    "uint8", "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2",
    "mma", "matmul",
    "reshape", "expand_dims", "broadcast_to", "permute", "transpose", "subtile", "item",
    "prod", "argmax", "argmin", "cumsum",
    "rand", "randn", "randint", "randint4x",
    "gather", "scatter", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas",
]
