"""The explicit compile context: options of the kernel being compiled.

Typing rules need the kernel's ``num_warps`` (tile types carry their register layout,
which depends on the threads per block) and lowering rules need to know which kernel
parameter defines the launch grid. :func:`compiling` sets them for the duration of one
compilation; Numba compiles synchronously under its compiler lock.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass, field

_CURRENT: contextvars.ContextVar = contextvars.ContextVar("numba_tile_compile", default=None)


@dataclass
class CompileContext:
    """Per-compilation facts.

    Attributes:
        num_warps: warps per block (threads = 32 * num_warps).
        kernel_name: qualified name of the kernel's Python function.
        argtypes: Numba types of the kernel's parameters (constants as Omitted).
        grid_param: index of the partition parameter that defines the grid.
        pyfunc: the kernel's Python function.
        unchecked: the kernel is marked unchecked (``@jit(unchecked=True)``).
        smem: the kernel's shared-memory pool (``lowering/shared.SharedPool``), made by the
            first op that needs shared memory; None when none does.
        cc: the compute capability being compiled for.
        num_stages: pipeline stages of staged loads (``typing/pipeline.py``; 1: none).
        mma_impl: ``"sync"`` or ``"wgmma"`` (see the field).
        arch_specific: whether the lowering emitted ``sm_90a`` instructions.
        ordered_partitions: names of the partition parameters whose accesses (loads and
            stores of the block's own or branded tiles) the lowering must order with a
            block barrier (``bar.sync 0``) before each one: a partition the kernel
            accesses at two or more places, one of them a store, in register layouts that
            give one element to different threads. Set by the ownership pass from the
            typed IR (``typing/ownership.partition_access_facts``); None until then (then
            the lowering of a safe kernel orders every partition access). Never used
            in unchecked kernels, which order their own accesses.
        errors: ``(location, error)`` of numba_tile errors raised by typing rules at
            calls not (yet) typed, oldest first.
        on_typed: called with the interpreter's program of the typed IR right after the
            ownership pass (``compiler.TypedIRPass``). None: nobody asked.
    """

    num_warps: int = 4
    kernel_name: str = ""
    argtypes: tuple = ()
    grid_param: int | None = None
    pyfunc: object = None
    unchecked: bool = False
    smem: object = None
    cc: tuple = (9, 0)
    # "wgmma": 16-bit products whose shapes fit lower to Hopper's wgmma on cc 9.0
    # (lowering/wgmma.py; compile_kernel's default, compiler.mma_impl), "sync": mma.sync
    # everywhere (NUMBA_TILE_MMA=sync; also this field's default, for typing-only checks)
    mma_impl: str = "sync"
    # set by a lowering that emits sm_90a-only instructions: the PTX targets sm_90a
    arch_specific: bool = False
    num_stages: int = 1
    ordered_partitions: frozenset | None = None
    errors: list = field(default_factory=list)
    on_typed: object = None

    @property
    def num_threads(self) -> int:
        return 32 * self.num_warps

    def orders(self, param: str) -> bool:
        """True when an access of partition ``param`` needs a block barrier before it.

        Args:
            param: the partition parameter's name.

        Returns:
            False in unchecked kernels; otherwise whether the ownership pass found
            ``param`` accessed in a way two threads can race on (every partition when the
            pass has not run).
        """
        if self.unchecked:
            return False
        return self.ordered_partitions is None or param in self.ordered_partitions


def current() -> CompileContext:
    ctx = _CURRENT.get()
    if ctx is None:
        raise RuntimeError("numba_tile ops are only usable inside a @numba_tile.jit kernel")
    return ctx


@contextmanager
def compiling(ctx: CompileContext):
    token = _CURRENT.set(ctx)
    code = _OWN_CODE.set(True)
    try:
        yield ctx
    finally:
        _OWN_CODE.reset(code)
        _CURRENT.reset(token)


#: True while numba-cuda compiles code of numba_tile's: a kernel, or a device function's frozen
#: copy (``typing/device.compiled_device_function``)
_OWN_CODE: contextvars.ContextVar = contextvars.ContextVar("numba_tile_own_code",
                                                          default=False)


@contextmanager
def own_code():
    """Mark what numba-cuda compiles inside as numba_tile's (``lowering/scalars.py`` gives its
    scalar shifts and float-to-integer casts defined results; other code keeps Numba's)."""
    token = _OWN_CODE.set(True)
    try:
        yield
    finally:
        _OWN_CODE.reset(token)


def in_own_code() -> bool:
    """Whether numba-cuda is compiling numba_tile's code now (:func:`own_code`)."""
    return _OWN_CODE.get()


def _loc_key(loc):
    return None if loc is None else (loc.filename, loc.line, getattr(loc, "col", None))


def record_error(exc, loc=None):
    """Keep a numba_tile error a typing rule raised at the call at ``loc``."""
    ctx = _CURRENT.get()
    if ctx is not None:
        ctx.errors.append((_loc_key(loc), exc))


def clear_errors(loc):
    """Forget errors recorded at ``loc``: Numba typed that call on a later attempt."""
    ctx = _CURRENT.get()
    if ctx is not None and ctx.errors and loc is not None:
        key = _loc_key(loc)
        ctx.errors[:] = [(k, e) for k, e in ctx.errors if k != key]


def first_error():
    """The first recorded error still standing (Numba's first, literal, attempt at a call
    gives the most precise message), or None."""
    ctx = _CURRENT.get()
    return ctx.errors[0][1] if ctx is not None and ctx.errors else None


# ------------------------------------------------------------------------ decisions (explain)

#: where a compile's decisions go while ``Kernel.explain`` collects them (None: nobody asks)
_DECISIONS: contextvars.ContextVar = contextvars.ContextVar("numba_tile_decisions",
                                                           default=None)


@contextmanager
def collecting_decisions():
    """Collect the code-path decisions of the compiles inside (``note``) into the dict this
    yields: ``{(kind, filename, line, col): (kind, loc, text)}``, the last decision for each
    site kept (Numba types a call more than once; a compile may run twice)."""
    out: dict = {}
    token = _DECISIONS.set(out)
    try:
        yield out
    finally:
        _DECISIONS.reset(token)


def note(kind: str, loc, text: str, ident=None) -> None:
    """Record which code path the compile chose at the op at ``loc`` and why (``kind``:
    "mma" or "load"), for ``Kernel.explain``; ``ident`` tells apart two ops of one line.
    Nothing unless a caller collects."""
    out = _DECISIONS.get()
    if out is not None and loc is not None:
        out[(kind,) + (_loc_key(loc) or ()) + (ident,)] = (kind, loc, text)
