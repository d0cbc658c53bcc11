"""The compile pipeline: Numba frontend -> typing -> ownership pass -> NVVM IR -> PTX.

:func:`compile_kernel` runs numba-cuda's pipeline with the ownership pass
(``typing/ownership.py``) inserted right after type inference, then lowers with the
numba_tile rules to NVVM IR and PTX through libNVVM. :func:`check_kernel` runs the
same pipeline up to and including the ownership pass, for interpreter mode, so the
interpreter runs only kernels the compiler would accept.

Errors raised by typing rules come back as :class:`TileTypingError` with the user's
line (Numba's own TypingError is translated); ownership errors keep their class.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from llvmlite import ir as llvm_ir
from numba.core.errors import NumbaError
from numba.cuda.core.compiler import _EarlyPipelineCompletion  # noqa: F401
from numba.cuda.core.compiler_lock import global_compiler_lock
from numba.cuda.core.compiler_machinery import AnalysisPass, FunctionPass, register_pass
from numba.cuda.core.typed_passes import NopythonTypeInference

from . import compiler_context
from .errors import TileError, TileTypingError
from .typing.constants import FoldConstantsPass
from .typing.ownership import OwnershipPass
from .typing.syntax import RewriteSyntax


@dataclass(frozen=True)
class CompiledKernel:
    """A kernel compiled for one specialization.

    Attributes:
        ptx: PTX text.
        entry: the ``.entry`` symbol in ``ptx``.
        param_kinds: C types of the flattened kernel parameters, in order
            (``'u64'`` pointers, ``'i64'``, ``'i32'``, ``'f32'``, ``'f64'``, ``'u8'``...).
        num_threads: threads per block.
        cc: compute capability compiled for.
        shared_bytes: dynamic shared memory per block the launch must give
            (``lowering/shared.py``).
        tensor_maps: ``(tensor parameter name, box rows)`` per TMA tensor map the kernel
            takes (``lowering/tma.py``), in order: its last ``len(tensor_maps)`` parameters
            (kind ``'map'``, 128 bytes each) are those maps, built at launch
            (``runtime/tensormap.py``).
        cluster: blocks per cluster the kernel is written for (``lowering/ws.py``): 2 for a
            warp-specialized persistent loop whose blocks pair up (launched so where the grid
            is even, ``Kernel._load``), 1 otherwise. It runs correctly either way.
    """

    ptx: str
    entry: str
    param_kinds: tuple
    num_threads: int
    cc: tuple
    shared_bytes: int = 0
    tensor_maps: tuple = ()
    cluster: int = 1


def _add_tensor_map_params(ptx: str, entry: str, count: int) -> str:
    """Append ``count`` 128-byte, 64-aligned parameters ``ENTRY_tmapI`` to the ``.entry``'s
    parameter list and name them in the inline PTX that used ``lowering/tma.PLACEHOLDER``.
    The kernel takes their generic address (``cvta.param``), as NVVM does for a
    ``__grid_constant__`` parameter."""
    from .lowering.tma import PLACEHOLDER
    head = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\(", ptx)
    close = ptx.index(")", head.end())
    params = ptx[head.end():close].rstrip()
    extra = ",\n".join(f"\t.param .align 64 .b8 {entry}_tmap{i}[128]" for i in range(count))
    sep = ",\n" if params.strip() else "\n"
    ptx = ptx[:head.end()] + params + sep + extra + "\n" + ptx[close:]
    for i in range(count):
        ptx = ptx.replace(PLACEHOLDER.format(i), f"{entry}_tmap{i}")
    return ptx


#: the oldest target numba_tile compiles for (Ampere, sm_80, and later)
MIN_CC = (8, 0)


def _make_compiler(typing_only: bool):
    from numba.cuda.compiler import CUDACompiler

    class TileCompiler(CUDACompiler):
        def define_pipelines(self):
            from numba.cuda.core.untyped_passes import InlineInlinables

            from .typing.helpers import InlineHelpers
            (pm,) = super().define_pipelines()
            pm._finalized = False
            # user helper functions become kernel code before typing (typing/helpers.py)
            pm.add_pass_after(InlineHelpers, InlineInlinables)
            # Constants folded before Numba's branch pruning and SSA: a branch on a Constant
            # is gone, with the variables only it assigned, before SSA joins them
            pm.add_pass_after(FoldConstantsPass, InlineHelpers)
            # +=, t[:, None], t[a:b], t.T as numba_tile's ops (typing/syntax.py)
            pm.add_pass_after(RewriteSyntax, FoldConstantsPass)
            # the straight-line code a pruned branch leaves in blocks of its own, joined again
            # before SSA (a K loop's loads and product in one block: typing/pipeline.py)
            names = [getattr(p, "__name__", "") for p, _ in pm.passes]
            at = names.index("FindLiterallyCalls")
            pm.passes.insert(at, (MergeStraightLineBlocks, "join straight-line blocks"))
            pm.add_pass_after(OwnershipPass, NopythonTypeInference)
            pm.add_pass_after(TypedIRPass, OwnershipPass)
            if typing_only:
                idx = [p for p, _ in pm.passes].index(TypedIRPass)
                pm.passes = pm.passes[: idx + 1]
                pm.add_pass(_StopAfterChecks, "stop after the ownership pass")
            pm.finalize()
            return [pm]

    return TileCompiler


@register_pass(mutates_CFG=True, analysis_only=False)
class MergeStraightLineBlocks(FunctionPass):
    """Join each block to its only successor where it is that successor's only predecessor
    (Numba's ``merge_adjacent_blocks``), before SSA: a branch that constant pruning removed
    (``if form == "mma":`` on a closure's constant, ``if HAS_BIAS:`` on a Constant) leaves its
    taken side in a block of its own, which would keep a loop's loads and their product apart
    (staging asks them in one block: ``typing/pipeline.py``)."""

    _name = "numba_tile_merge_straight_line_blocks"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        from numba.cuda.core.ir_utils import build_definitions, merge_adjacent_blocks
        before = len(state.func_ir.blocks)
        merge_adjacent_blocks(state.func_ir.blocks)
        if len(state.func_ir.blocks) == before:
            return False
        state.func_ir._definitions = build_definitions(state.func_ir.blocks)
        return True


@register_pass(mutates_CFG=False, analysis_only=True)
class _StopAfterChecks(AnalysisPass):
    _name = "numba_tile_stop_after_checks"

    def __init__(self):
        AnalysisPass.__init__(self)

    def run_pass(self, state):
        raise _EarlyPipelineCompletion(state.typemap)


@register_pass(mutates_CFG=False, analysis_only=True)
class TypedIRPass(AnalysisPass):
    """After the ownership pass, on both paths: refuse reads of never-assigned variables whose
    zero value the backends would not agree on (``typing/undefined.py``), warn about tiles
    too large for registers (``typing/spills.py``), and build what the
    interpreter runs from the typed IR before later passes rewrite it
    (``interpreter/typed_ir.py``: a statement it has no rule for is refused here, on both
    paths); hand that to the compile's ``on_typed`` callback, if any."""

    _name = "numba_tile_typed_ir"

    def __init__(self):
        AnalysisPass.__init__(self)

    def run_pass(self, state):
        from .interpreter.typed_ir import from_state
        from .typing.spills import warn_spilled_tiles
        from .typing.undefined import check_unassigned_reads
        ctx = compiler_context.current()
        check_unassigned_reads(state.func_ir, state.typemap, ctx.kernel_name)
        warn_spilled_tiles(state.func_ir, state.typemap, ctx.kernel_name, ctx.num_warps)
        program = from_state(state, ctx.kernel_name)
        if ctx.on_typed is not None:
            ctx.on_typed(program)
        return False


def _param_kind(t: llvm_ir.Type) -> str:
    if isinstance(t, llvm_ir.PointerType):
        return "u64"
    if isinstance(t, llvm_ir.IntType):
        return {1: "u8", 8: "u8", 16: "i16", 32: "i32", 64: "i64"}[t.width]
    if isinstance(t, llvm_ir.FloatType):
        return "f32"
    if isinstance(t, llvm_ir.DoubleType):
        return "f64"
    if isinstance(t, llvm_ir.HalfType):
        return "f16"
    raise TileTypingError(f"unsupported kernel parameter type {t}")


#: bytes of parameters a kernel may take: CUDA 12.1 and later give Volta and newer GPUs (every
#: numba_tile target, sm_80 and up) 32,764 bytes for PTX ISA 8.1 and later (libNVVM emits
#: newer); libNVVM refuses a kernel over it with a bare ERROR_COMPILATION
PARAM_SPACE = 32764

_PARAM_SIZES: dict = {}


def parameter_bytes(argtypes) -> list:
    """Bytes each kernel parameter of Numba type in ``argtypes`` takes in the kernel's
    parameter space, in order: its flattened fields (a tensor's pointer, extents and strides),
    each aligned to its size as ``cuLaunchKernel`` lays them out (``runtime/params.py``); a
    Constant takes none. Their sum is what the launch passes, before any TMA tensor map."""
    from numba.cuda.descriptor import cuda_target
    from .runtime.params import PARAM_KINDS
    out, pos = [], 0
    for ty in argtypes:
        kinds = _PARAM_SIZES.get(ty)
        if kinds is None:
            fields = cuda_target.target_context.get_arg_packer([ty]).argument_types
            kinds = _PARAM_SIZES[ty] = tuple(_param_kind(f) for f in fields)
        start = pos
        for kind in kinds:
            size = PARAM_KINDS[kind][1]
            pos += -pos % min(size, 8) + size
        out.append(pos - start)
    return out


def _named(err: TileError, ctx, filename=None, lineno=None) -> TileError:
    """``err`` with its message naming the kernel (``kernel 'k': ...``, unless it already
    names one) and, where given, the user's line."""
    message = err.message
    if ctx.kernel_name and not message.startswith("kernel '"):
        message = f"kernel '{ctx.kernel_name}': {message}"
    if message == err.message and filename is None:
        return err
    return type(err)(message, filename=filename or err.filename,
                     lineno=lineno if filename else err.lineno,
                     col=None if filename else err.col)


def _translate(exc: Exception, ctx) -> Exception:
    """Numba's TypingError -> the numba_tile error a typing rule raised, with its line and
    the kernel's name."""
    if isinstance(exc, TileError):
        if exc.lineno is None:      # raised while lowering: the statement being lowered
            code = getattr(ctx.pyfunc, "__code__", None)
            where = _loc_from_traceback(exc, code.co_filename if code else None)
            if where is not None:
                return _named(exc, ctx, where.filename, where.line)
        return _named(exc, ctx)
    loc = getattr(exc, "loc", None)
    if ctx.errors:
        err = ctx.errors[0][1]
        if loc is not None and err.lineno is None:
            return _named(err, ctx, loc.filename, loc.line)
        return _named(err, ctx)
    if type(exc).__name__ == "CudaSupportError":
        code = getattr(ctx.pyfunc, "__code__", None)
        where = _loc_from_traceback(exc, code.co_filename if code else None)
        kw = dict(filename=where.filename, lineno=where.line) if where is not None else {}
        return TileTypingError(
            f"kernel '{ctx.kernel_name}' calls a numba-cuda device function, which numba-cuda "
            f"can only type with a GPU present ({exc}); run it on a machine with a GPU, or write "
            f"the function as a plain Python helper, which interpreter mode types without one",
            **kw)
    if isinstance(exc, NumbaError) or isinstance(exc, AttributeError):
        return _summarize(exc, loc, ctx)
    overload = _failed_overload(exc)
    if overload is not None:
        code = getattr(ctx.pyfunc, "__code__", None)
        where = _loc_from_traceback(exc, code.co_filename if code else None)
        kw = dict(filename=where.filename, lineno=where.line) if where is not None else {}
        first = (str(exc).strip().splitlines() or [""])[0]
        return TileTypingError(
            f"kernel '{ctx.kernel_name}' does not type: Numba's implementation of "
            f"{overload}() failed to compile for these arguments ({type(exc).__name__}: "
            f"{first})", **kw)
    return exc


def _failed_overload(exc) -> str | None:
    """The function whose ``@overload`` implementation Numba was compiling, while typing the
    kernel, when ``exc`` (not one of Numba's errors) was raised inside it (numba-cuda's
    ``getattr(module, name)`` fails so while lowering), or None."""
    tb = exc.__traceback__
    name = None
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "_build_impl" and "typing" in frame.f_code.co_filename:
            key = getattr(frame.f_locals.get("self"), "key", None)
            name = getattr(key, "__name__", None) or str(key)
        tb = tb.tb_next
    return name


_HINTS = [
    # exactly one side masked ("masked" or "masked(align=4)" closes a tile type's name)
    (re.compile(r"Cannot unify (Tile\[(?:(?!masked)[^\n])*?\] and Tile\[[^\n]*?masked(\(align=\d+\))?\] for|"
                r"Tile\[[^\n]*?masked(\(align=\d+\))?\] and Tile\[(?:(?!masked)[^\n])*?\] for)"),
     "a variable holds a masked tile (computed from a load without padding=: its elements "
     "past the array's edge are invalid, and reductions skip them) and an unmasked one "
     "(assigned in two branches, or a loop's accumulator started with zeros()). An "
     "accumulator would lose the elements one step left invalid: load with a padding value "
     "(padding=0 for a running sum) or apply filled(tile, 0) to the masked one"),
    (re.compile(r">>> (bool|truth)\(Tile\["),
     "a tile has no truth value (Python `if`/`while`/`and`/`or` on a tile): choose elementwise "
     "with where(cond, x, y)"),
    (re.compile(r">>> getitem\(Tile\[[^\n]*(slice|ellipsis)"),
     "a tile is indexed by static slices of step 1 and None only (t[0:G], t[:, 64:128], "
     "t[:, None]): the bounds integer literals or Constants, written at the index (no "
     "step, no Ellipsis, no run-time bound); nt.subtile(t, start, shape) names a box"),
    (re.compile(r">>> (getitem|setitem)\(Tile\["),
     "tiles are not indexed element by element: load and store whole tiles (load(x, index, "
     "shape), store(z, tile)), cut static boxes with t[a:b] or nt.subtile, and choose "
     "elements with where()"),
    (re.compile(r">>> \w+\((Tensor|Partition)\[[^\n]*, (int|float|bool|Literal)|>>> \w+\("
                r"(int|float|bool|Literal)[^\n]*, (Tensor|Partition)\["),
     "an array parameter is not an operand: load its tiles (nt.load, nt.load_like), compute "
     "on them, and write with nt.store"),
    (re.compile(r">>> \w+\(.*Tile\["),
     "this function does not take tiles: use the numba_tile ops (numba_tile.exp, where, ...) "
     "instead of math/numpy functions on tiles"),
]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: how Numba's own messages begin (its reports also echo source lines and contexts)
_MESSAGE = re.compile(r"(Untyped global name|No implementation of function|Unknown attribute|"
                      r"Invalid use of|Cannot |Can't |Use of unsupported|module '|name '|"
                      r"Internal error|Unsupported|Type of variable|NameError|AttributeError)")
#: lines of Numba's error reports that are context, not the message
_NOISE = ("Failed in ", 'File "', "During:", "<source", "Enable logging", "- Resolution")


def _loc_from_traceback(exc, filename=None):
    """Location of the IR statement Numba was typing when it raised ``exc`` (its resolution
    failures carry none): the innermost traceback frame holding an IR location (a typing
    constraint's ``loc``, an instruction's ``loc``, or a ``loc`` variable), preferring one in
    the kernel's own file ``filename``."""
    from numba.cuda.core import ir

    def locs(frame):
        for name in ("self", "inst", "stmt", "expr", "constraint", "loc", "value"):
            obj = frame.f_locals.get(name)
            try:     # some objects' attributes query the driver: never let that escape
                loc = obj if isinstance(obj, ir.Loc) else getattr(obj, "loc", None)
            except Exception:  # noqa: BLE001
                continue
            if isinstance(loc, ir.Loc):
                yield loc

    found = fallback = None
    tb = exc.__traceback__
    while tb is not None:
        for loc in locs(tb.tb_frame):
            if filename is None or loc.filename == filename:
                found = loc
            elif fallback is None:
                fallback = loc
        tb = tb.tb_next
    return found or fallback


#: Numba's message for an attribute of a tile, tensor or partition
_ATTRIBUTE = re.compile(r"Unknown attribute '(\w+)' of type (Tile|Tensor|Partition)\[")
#: attributes of an array that ask for its extents or layout, which a kernel does not read
_EXTENTS = ("shape", "size", "ndim", "strides", "nbytes", "itemsize")


def _attribute_advice(attr: str, kind: str) -> str:
    """What to write instead of ``value.attr`` on a tile (``kind`` "Tile") or an array
    parameter ("Tensor", "Partition"), which have no attributes in a kernel."""
    if kind == "Tile":
        return (f"a tile has no attribute {attr!r}: a tile has .shape (static), .ndim, .dtype "
                f"and .T; use numba_tile's functions on it (nt.reshape(t, shape), "
                f"nt.astype(t, dtype), nt.sum(t, axis), ...)")
    what = "a tensor" if kind == "Tensor" else "a partition"
    if attr in _EXTENTS:
        return (f"{what} has no attribute {attr!r} in a kernel: it has x.shape, x.ndim and "
                f"x.dtype (its extents are run-time values); count the tiles along an "
                f"axis with nt.num_tiles(x, axis, TILE), and load without padding= so that "
                f"the elements past the array's end are masked")
    return (f"{what} has no attribute {attr!r} in a kernel: load its tiles (nt.load(x, index, "
            f"shape), nt.load_like(x, z)) and work on those; pass what you need from the host "
            f"array (its extents, its dtype's name) as scalar or Constant arguments")


_UNIFY = re.compile(r"Cannot unify (Tile\[.*?\]) and (Tile\[.*?\]) for '([^'.]+)[^']*'")
_TILE = re.compile(r"Tile\[(\w+), (\([^)]*\)), .*?(masked)?(?:\(align=\d+\))?\]$")


def _short_unify(head: str) -> str:
    """Numba's "Cannot unify Tile[...] and Tile[...] for 'acc.2', defined at ..." as "variable
    'acc' holds a ... tile and a ... tile" (no register layouts, no SSA suffix)."""
    m = _UNIFY.search(head)
    if m is None:
        return head

    def short(t):
        k = _TILE.match(t)
        if k is None:
            return t
        return f"{'a masked' if k.group(3) else 'an unmasked'} {k.group(1)} {k.group(2)} tile"

    return f"variable '{m.group(3)}' holds {short(m.group(1))} and {short(m.group(2))}"


def _summarize(exc, loc, ctx) -> TileTypingError:
    """A Numba error (or an attribute typo) as a short TileTypingError at the user's line."""
    text = _ANSI.sub("", str(exc))
    lines = [ln for ln in text.splitlines()
             if ln.strip() and not ln.lstrip().startswith(_NOISE)
             and set(ln.strip()) != {"^"}]
    head = next((ln.strip() for ln in lines if _MESSAGE.match(ln.strip())),
                lines[0].strip() if lines else type(exc).__name__)
    sig = next((ln.strip() for ln in lines if ln.strip().startswith(">>>")), None)
    hint = next((h for pat, h in _HINTS if pat.search(text)), None)
    head = _short_unify(head)
    attribute = _ATTRIBUTE.search(head)
    if attribute is not None:
        msg = f"kernel '{ctx.kernel_name}': {_attribute_advice(*attribute.groups())}"
    else:
        msg = f"kernel '{ctx.kernel_name}' does not type: {head}"
        if sig and sig not in head:
            msg += f"\n    {sig}"
        if hint:
            msg += f"\n  hint: {hint}"
    filename = lineno = None
    kernel_file = getattr(getattr(ctx, "pyfunc", None), "__code__", None)
    kernel_file = kernel_file.co_filename if kernel_file else None
    if loc is None:
        loc = _loc_from_traceback(exc, kernel_file)
    if loc is not None:
        filename, lineno = loc.filename, loc.line
    if lineno is None and kernel_file:
        # Numba's report names the line twice: 'File "rel/path.py", line N' and
        # 'at /abs/path.py (N)'; either may be relative to the working directory
        pattern = r'File "([^"]+)", line (\d+)|at (\S+\.py) \((\d+)\)'
        for m in re.finditer(pattern, text):
            path, line = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            if os.path.abspath(path) == os.path.abspath(kernel_file):
                filename, lineno = kernel_file, int(line)
                break
    if lineno is None and isinstance(exc, AttributeError) and kernel_file:
        name = re.search(r"attribute '(\w+)'", text)
        if name:
            import inspect
            try:
                src, first = inspect.getsourcelines(ctx.pyfunc)
            except (OSError, TypeError):
                src, first = [], 0
            for i, ln in enumerate(src):
                if re.search(rf"\.{name.group(1)}\b", ln):
                    filename, lineno = kernel_file, first + i
                    break
    return TileTypingError(msg, filename=filename, lineno=lineno)


def _run(pyfunc, argtypes, ctx, typing_only, cc, debug=False, lineinfo=False):
    from numba.cuda import utils
    from numba.cuda.compiler import CUDAFlags, compile_extra
    from numba.cuda.descriptor import cuda_target
    from numba.cuda.target import CUDACallConv

    flags = CUDAFlags()
    flags.no_compile = True
    flags.no_cpython_wrapper = True
    flags.no_cfunc_wrapper = True
    flags.error_model = "numpy"
    flags.compute_capability = cc
    flags.nvvm_options = {"fastmath": False, "opt": 3}
    if lineinfo:
        flags.debuginfo = True
        flags.dbg_directives_only = True
    targetctx = cuda_target.target_context
    from .lowering import linked
    from .lowering.scalars import install
    from .typing.device import compile_for_cc
    # Numba's @overloads of builtins (min(C), sum(C)...) compile for the kernel's target,
    # not the current device's: typing them needs no GPU (typing/device.compile_for_cc)
    with utils.numba_target_override(), compile_for_cc(tuple(cc)[:2]):
        install(targetctx)      # numba_tile's defined scalar operations (its docstring)
        linked.install()        # no CUDA C++ linked into numba_tile's code (its docstring)
        return compile_extra(
            typingctx=cuda_target.typing_context, targetctx=targetctx, func=pyfunc,
            args=tuple(argtypes), return_type=None, flags=flags, locals={},
            pipeline_class=_make_compiler(typing_only), call_conv=CUDACallConv(targetctx),
            abi_info={})


def mma_impl() -> str:
    """``NUMBA_TILE_MMA``: ``"sync"`` keeps every product on ``mma.sync`` (for tests and
    comparisons); unset or anything else: ``"wgmma"``, Hopper's ``wgmma`` for the 16-bit
    products whose shapes fit on compute capability 9.0 (``typing/mma.use_wgmma``; other
    targets and shapes use ``mma.sync`` either way). Read at each compilation, and part of the
    compile cache's key (``Kernel.compile``)."""
    import os
    return "sync" if os.environ.get("NUMBA_TILE_MMA", "").strip().lower() == "sync" \
        else "wgmma"


def _context(pyfunc, argtypes, num_warps, grid_param, unchecked=False, on_typed=None):
    return compiler_context.CompileContext(
        num_warps=num_warps, kernel_name=pyfunc.__qualname__, argtypes=tuple(argtypes),
        grid_param=grid_param, pyfunc=pyfunc, unchecked=unchecked, on_typed=on_typed)


@global_compiler_lock
def check_kernel(pyfunc, argtypes, *, num_warps: int, grid_param: int | None,
                 unchecked: bool = False, on_typed=None, cc: tuple = (8, 0)):
    """Type the kernel and run the ownership pass, without lowering (interpreter mode).

    Args:
        on_typed: called with the interpreter's program of the typed IR, right after the
            checks (``interpreter/typed_ir.Program``).
        cc: the compute capability typed for.

    Raises:
        TileTypingError, OwnershipError: as :func:`compile_kernel`.
    """
    ctx = _context(pyfunc, argtypes, num_warps, grid_param, unchecked, on_typed)
    with compiler_context.compiling(ctx):
        try:
            _run(pyfunc, argtypes, ctx, typing_only=True, cc=cc)
        except Exception as exc:  # noqa: BLE001 - translated or re-raised as is
            raise _translate(exc, ctx) from None


@global_compiler_lock
def compile_kernel(pyfunc, argtypes, *, num_warps: int, grid_param: int | None,
                   cc: tuple = (9, 0), lineinfo: bool = False,
                   unchecked: bool = False,
                   min_blocks_per_sm: int | None = None,
                   num_stages: int = 1, mma: str | None = None,
                   on_typed=None) -> CompiledKernel:
    """Compile ``pyfunc`` for ``argtypes`` to PTX.

    Args:
        pyfunc: the kernel's Python function.
        argtypes: Numba types, one per parameter (constants as ``types.Omitted(value)``).
        num_warps: warps per block.
        grid_param: index of the partition parameter that defines the grid.
        cc: compute capability ``(major, minor)``.
        min_blocks_per_sm: ``.minnctapersm`` launch bound (None: none).
        mma: ``"sync"`` or ``"wgmma"`` (:func:`mma_impl`); None: read ``NUMBA_TILE_MMA`` now.
        on_typed: called with the interpreter's program of the typed IR (as
            :func:`check_kernel`'s), on the first compile only.

    Returns:
        CompiledKernel.

    Raises:
        TileTypingError: an op used with invalid arguments.
        OwnershipError: a broken ownership rule (its subclass says which).
    """
    if tuple(cc) < MIN_CC:
        raise TileTypingError(
            f"kernel '{pyfunc.__qualname__}': numba_tile compiles for compute capability "
            f"{MIN_CC[0]}.{MIN_CC[1]} or newer (Ampere, Hopper and later: cp.async, ldmatrix, "
            f"mma.sync m16n8k16, bf16 conversions), got {cc[0]}.{cc[1]}")
    ck, serialized = _compile(pyfunc, argtypes, num_warps, grid_param, cc, lineinfo, unchecked,
                              min_blocks_per_sm, num_stages, mma, no_pending=False,
                              on_typed=on_typed)
    if serialized:
        # a wgmma group left in flight across iterations made ptxas serialize the wgmmas
        # (C7515, seen at 64 x 64 tiles): the same kernel waiting in each iteration instead
        ck, _ = _compile(pyfunc, argtypes, num_warps, grid_param, cc, lineinfo, unchecked,
                         min_blocks_per_sm, num_stages, mma, no_pending=True)
    return ck


def _serialized(ptx: str, cc) -> bool:
    """Whether ptxas (nvJitLink) says it serialized the kernel's ``wgmma`` instructions; False
    where nvJitLink is not available (the PTX is kept)."""
    from .runtime import linker
    try:
        out = linker.assemble(ptx, tuple(cc[:2]))
    except Exception:  # noqa: BLE001 - no assembler here: keep the PTX as it is
        return False
    return bool(out and re.search(r"wgmma\.mma_async instructions are serialized", out[1]))


#: functions PTX declares that the CUDA driver provides (printf, assert, device malloc)
_SYSTEM_CALLS = frozenset({"vprintf", "__assertfail", "malloc", "free"})


def _compile(pyfunc, argtypes, num_warps, grid_param, cc, lineinfo, unchecked,
             min_blocks_per_sm, num_stages, mma, no_pending, on_typed=None):
    from numba.cuda.compiler import kernel_fixup
    from numba.cuda.cudadrv import nvvm
    ctx = _context(pyfunc, argtypes, num_warps, grid_param, unchecked, on_typed)
    ctx.cc = tuple(cc)
    ctx.num_stages = num_stages
    ctx.no_pending = no_pending
    ctx.min_blocks_per_sm = min_blocks_per_sm       # typing/pipeline.ws_fits
    ctx.mma_impl = mma if mma is not None else mma_impl()   # the caller's, for its cache key
    with compiler_context.compiling(ctx):
        try:
            cres = _run(pyfunc, argtypes, ctx, typing_only=False, cc=cc, lineinfo=lineinfo)
            lib = cres.library
            lib.finalize()
            kernel = lib.get_function(cres.fndesc.llvm_func_name)
            lib._entry_name = cres.fndesc.llvm_func_name
            kernel_fixup(kernel, False)
            if getattr(ctx, "staged", None):
                from .lowering.pipeline import drain_at_exit
                drain_at_exit(kernel)
            threads = ctx.num_threads
            cluster = 1
            if getattr(ctx, "warp_specialized", False):
                from .lowering.ws import PRODUCER_THREADS, split_roles
                from .lowering.ws import cluster as ws_cluster
                split_roles(kernel)
                cluster = 2 if ws_cluster() else 1
                threads += PRODUCER_THREADS
                # setmaxnreg takes effect only with both launch bounds (brief 0.7, C7508)
                min_blocks_per_sm = min_blocks_per_sm or 1
            nvvm.set_launch_bounds(kernel, threads if min_blocks_per_sm is None
                                   else (threads, min_blocks_per_sm))
            kinds = tuple(_param_kind(a.type) for a in kernel.args)
            shared = ctx.smem.finish(cc) if ctx.smem is not None else 0
            # sm_90a-only instructions (wgmma) need the arch-specific target, compute_90a
            ptx = lib.get_asm_str(cc=(cc[0], cc[1], "a") if ctx.arch_specific else cc)
        except Exception as exc:  # noqa: BLE001
            raise _translate(exc, ctx) from None
    extern = next((m for m in re.finditer(r"^\s*\.extern\s+\.func\b[^;]*?([\w$]+)\s*\(",
                                          ptx, re.M) if m.group(1) not in _SYSTEM_CALLS), None)
    if extern:      # a call nothing defines: it would fail at load, on the GPU only
        from .typing.linked import refusal
        raise _named(TileTypingError(refusal(
            f"a call of '{extern.group(1)}', a function the kernel's PTX declares but does not "
            f"define,")), ctx)
    m = re.search(r"\.entry\s+([\w$]+)\s*\(", ptx)
    maps = tuple(getattr(ctx, "tensor_maps", None) or ())
    if maps:
        ptx = _add_tensor_map_params(ptx, m.group(1), len(maps))
        kinds = kinds + ("map",) * len(maps)
    ck = CompiledKernel(ptx=ptx, entry=m.group(1), param_kinds=kinds,
                        num_threads=threads, cc=cc, shared_bytes=shared,
                        tensor_maps=maps, cluster=cluster)
    return ck, bool(getattr(ctx, "used_pending", False)) and _serialized(ptx, cc)
