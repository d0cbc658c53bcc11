"""The kernel's shared memory: one dynamic pool, allocated by liveness.

Every op that needs shared memory takes it from one ``extern .shared`` array of the
kernel (dynamic shared memory, sized at launch), in two kinds of region:

* **scratch**, for uses that begin with a block barrier and finish every read before
  the op's lowering returns (layout conversions, reduction partials, ``mma`` operand
  staging): the next such use begins with its own barrier, so all of them share one
  region at offset 0, as large as the largest (separate conversion sites reuse one
  buffer);
* **persistent** regions (pipeline stages that stay live across the iterations of a loop),
  each its own range after the scratch region.

The scratch size and so the persistent offsets are known only when the whole kernel is
lowered: each persistent region's offset is read from an internal constant global that
:meth:`SharedPool.finish` sets afterwards (NVVM folds the loads into immediates). The
total is the launch's dynamic shared memory (``CompiledKernel.shared_bytes``); above
48 KB the launch opts in (``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from .. import compiler_context
from ..errors import TileTypingError

I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)

#: symbol of the kernel's dynamic shared memory
SYMBOL = "__numba_tile_smem"

#: alignment of every region (bytes): 128 for ``ldmatrix``/``cp.async`` rows and the
#: 128-byte swizzle pattern (a 1024-byte pattern for ``wgmma`` would raise it)
ALIGN = 128

#: most dynamic shared memory per block with the opt-in, by compute capability (CUDA C++
#: Programming Guide, "Technical Specifications per Compute Capability": 163 KB on 8.0 and
#: 8.7, 99 KB on 8.6, 8.9 and 12.x, 227 KB on 9.0 and 10.x); unknown: the 48 KB every
#: device gives without opt-in
OPT_IN_LIMIT = {(8, 0): 163 * 1024, (8, 7): 163 * 1024, (8, 6): 99 * 1024, (8, 9): 99 * 1024,
                (9, 0): 227 * 1024, (10, 0): 227 * 1024, (10, 3): 227 * 1024,
                (12, 0): 99 * 1024, (12, 1): 99 * 1024}
DEFAULT_LIMIT = 48 * 1024


def limit_for(cc) -> int:
    """Most dynamic shared memory a block of a device of compute capability ``cc`` can have."""
    return OPT_IN_LIMIT.get(tuple(cc), DEFAULT_LIMIT)


def _round(n: int, a: int = ALIGN) -> int:
    return (n + a - 1) // a * a


@dataclass
class SharedPool:
    """The shared-memory allocations of one compilation (``CompileContext.smem``)."""

    scratch_bytes: int = 0
    persistent: list = field(default_factory=list)   # [(offset global, nbytes, what)]

    def _base(self, builder) -> ir.Value:
        module = builder.module
        gv = module.globals.get(SYMBOL)
        if gv is None:
            gv = ir.GlobalVariable(module, ir.ArrayType(I8, 0), name=SYMBOL, addrspace=3)
            gv.linkage = "external"
            gv.align = ALIGN
        # The base goes through an opaque ``mov``: LLVM then knows no alignment of the
        # addresses computed from it, and NVVM's load/store vectorizer does not merge the
        # conversions' scalar accesses into vector forms its backend rejects ("unsupported
        # operation", libNVVM 13.0 and 13.5 at -opt >= 1, with an over-aligned buffer).
        # Accesses that are 16-byte aligned say so themselves (``align 16`` stores, PTX).
        addr = builder.trunc(builder.ptrtoint(gv, I64), I32)
        mov = ir.InlineAsm(ir.FunctionType(I32, [I32]), "mov.b32 $0, $1;", "=r,r")
        return builder.inttoptr(builder.zext(builder.call(mov, [addr]), I64), I8.as_pointer(3))

    def scratch(self, builder, nbytes: int, what: str) -> ir.Value:
        """An ``i8 addrspace(3)*`` to ``nbytes`` of scratch (see the module docstring: the
        caller begins with a barrier and reads it all back before returning)."""
        self.scratch_bytes = max(self.scratch_bytes, _round(nbytes))
        self._check(what)
        return self._base(builder)

    def allocate(self, builder, nbytes: int, what: str) -> ir.Value:
        """An ``i8 addrspace(3)*`` to a persistent region of ``nbytes`` (its own range)."""
        module = builder.module
        off = ir.GlobalVariable(module, I32, name=module.get_unique_name("__numba_tile_smem_off"))
        off.linkage = "internal"
        off.global_constant = True
        off.initializer = ir.Constant(I32, 0)      # set by finish()
        self.persistent.append((off, _round(nbytes), what))
        self._check(what)
        return builder.gep(self._base(builder), [builder.zext(builder.load(off), I64)])

    def at(self, builder, off) -> ir.Value:
        """An ``i8 addrspace(3)*`` to the persistent region whose offset global is ``off``
        (``persistent[i][0]``), from any block of the kernel."""
        return builder.gep(self._base(builder), [builder.zext(builder.load(off), I64)])

    @property
    def total(self) -> int:
        return self.scratch_bytes + sum(n for _o, n, _w in self.persistent)

    def _check(self, what: str):
        """Raise (at the op being lowered) when the pool outgrows the target's limit."""
        cc = compiler_context.current().cc
        lim = limit_for(cc)
        if self.total > lim:
            parts = ([f"{self.scratch_bytes} bytes of scratch for layout conversions, "
                      f"reductions and mma operands"] if self.scratch_bytes else [])
            parts += [f"{n} bytes for {w}" for _o, n, w in self.persistent]
            so_far = f" ({', '.join(parts)})" if len(parts) > 1 else ""
            raise TileTypingError(
                f"kernel '{compiler_context.current().kernel_name}': {what} takes its shared "
                f"memory per block to at least {self.total} bytes{so_far}, more than the "
                f"{lim} bytes a block can have on compute capability {cc[0]}.{cc[1]} (the "
                f"interpreter checks 9.0's): use smaller tiles or fewer pipeline stages "
                f"(num_stages)")

    def finish(self, cc) -> int:
        """Place the persistent regions after the scratch region; return the total bytes."""
        offset = self.scratch_bytes
        for off, nbytes, _what in self.persistent:
            off.initializer = ir.Constant(I32, offset)
            offset += nbytes
        return offset


def pool() -> SharedPool:
    """The pool of the compilation in progress."""
    ctx = compiler_context.current()
    p = getattr(ctx, "smem", None)
    if p is None:
        p = ctx.smem = SharedPool()
    return p


def address32(builder, ptr) -> ir.Value:
    """The 32-bit ``.shared`` address of an ``addrspace(3)`` pointer (for inline PTX)."""
    return builder.trunc(builder.ptrtoint(ptr, I64), I32)
