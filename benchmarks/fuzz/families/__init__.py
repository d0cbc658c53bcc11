"""The kernel families the fuzzer samples, by name (:class:`~.common.Family`).

Each family is a module-level kernel template (parameterized by ``nt.Constant`` values and
compiled with ``nt.jit(num_warps=W, num_stages=S)``), a sampler of its configuration space and
a runner that builds the case's arrays and checks the kernel's results against NumPy.
"""

from __future__ import annotations

from . import (attention, elementwise, indexing, products, reads, reductions, rows, selftest,
               shapes)
from .common import Family

FAMILIES: dict[str, Family] = {}
for _module in (products, attention, reductions, rows, shapes, indexing, reads, elementwise,
                selftest):
    for _f in _module.FAMILIES:
        FAMILIES[_f.name] = _f


def public() -> list[str]:
    """The families sampled by default (the fuzzer's own test families left out)."""
    return sorted(name for name, f in FAMILIES.items() if not f.hidden)
