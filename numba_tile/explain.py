"""``Kernel.explain``: what one specialization of a kernel compiled to, and why.

For the specialization the arguments select, the report gives, per matrix product, whether it
lowered to Hopper's ``wgmma`` or to ``mma.sync`` and, when not ``wgmma``, the rule that
excluded it (``typing/mma.wgmma_refusal``); per tile load, whether it is pipelined (TMA boxes
or ``cp.async`` copies, the stages, warp specialization) or why not
(``typing/pipeline._staged_load``); the registers a thread and the bytes spilled, from
ptxas (nvJitLink, no GPU needed); shared memory, threads and the blocks an SM holds; and a
roofline estimate from the arguments' bytes (and FLOPs, when given) at the device's datasheet
peaks: the GPU at hand, else the one named, else the usual part of the compute capability.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass, field

from . import compiler_context

__all__ = ["Explanation", "DEVICES", "explain"]


@dataclass(frozen=True)
class Device:
    """Datasheet figures of a GPU: dense 16-bit tensor-core TFLOP/s, memory TB/s, and the
    per-SM limits occupancy is computed from."""

    name: str
    tflops_16bit: float
    tb_per_s: float
    smem_per_sm: int
    threads_per_sm: int = 2048
    blocks_per_sm: int = 32
    registers_per_sm: int = 65536


#: the devices a report can be made for, by name; ``_BY_CC`` picks one for a compute capability
DEVICES = {
    "H100": Device("H100 SXM", 989.4, 3.35, 233472),
    "H200": Device("H200 SXM", 989.4, 4.8, 233472),
    "A100": Device("A100 SXM 80GB", 312.0, 2.039, 167936),
    "L40S": Device("L40S", 362.1, 0.864, 102400, threads_per_sm=1536, blocks_per_sm=24),
}
_BY_CC = {(9, 0): "H100", (8, 0): "A100", (8, 9): "L40S"}


def _device(cc, name: str | None) -> Device:
    if name is None:
        from .runtime.driver import gpu_available
        if gpu_available():
            name = _gpu_name()
    for key, dev in DEVICES.items():
        if name and key.lower() in name.lower():
            return dev
    return DEVICES[_BY_CC.get(tuple(cc[:2]), "H100")]


def _gpu_name() -> str | None:
    try:
        from cuda.bindings import driver
        err, dev = driver.cuDeviceGet(0)
        err2, raw = driver.cuDeviceGetName(64, dev)
        return raw.split(b"\0", 1)[0].decode() if not (int(err) or int(err2)) else None
    except Exception:  # noqa: BLE001 - a name is a nicety
        return None


@dataclass(frozen=True)
class Decision:
    """A code path chosen at one op: ``kind`` ("mma" or "load"), where, and what."""

    kind: str
    filename: str
    line: int
    source: str
    text: str


@dataclass(frozen=True)
class Explanation:
    """What :meth:`Kernel.explain <numba_tile.Kernel.explain>` found; ``str()`` renders it.

    Attributes:
        kernel: the kernel's name.
        cc: the compute capability compiled for.
        device: the device whose figures the occupancy and roofline use.
        threads: threads a block (the producer warpgroup of a warp-specialized loop included).
        cluster: blocks a cluster.
        shared_bytes: dynamic shared memory a block.
        registers: registers a thread (None without nvJitLink).
        spilled_bytes: bytes ptxas spilled to local memory (None without nvJitLink).
        consumer_registers: in a warp-specialized kernel, the registers the consumer warps
            take with ``setmaxnreg.inc`` (the producer warpgroup keeps 40); None otherwise, or
            where the consumers keep the launch's (``lowering/ws.consumer_registers``).
        blocks_per_sm: blocks an SM holds at once, and ``limited_by`` what bounds it.
        decisions: the path of each product and load, in source order.
        bytes_moved: bytes of the array arguments (whole arrays: a kernel that reads part of
            one moves less).
        flops: the FLOPs given (None: not given).
        bound_us: the roofline estimate of the run time, in microseconds: the larger of the
            memory time (``bytes_moved`` once at the device's bandwidth) and the compute time
            (``flops`` at its 16-bit tensor-core peak).
        ptxas_warnings: ptxas' "Potential Performance Loss" notes (``"C7509: wgmma.mma_async
            instructions are serialized due to the presence of Extern calls"``: every ``wgmma``
            waits for the previous one), empty without nvJitLink or without such notes.
    """

    kernel: str
    cc: tuple
    device: Device
    threads: int
    cluster: int
    shared_bytes: int
    registers: int | None
    spilled_bytes: int | None
    blocks_per_sm: int | None
    limited_by: str
    decisions: tuple = field(default_factory=tuple)
    consumer_registers: int | None = None
    bytes_moved: int = 0
    flops: float | None = None
    bound_us: float = 0.0
    ptxas_warnings: tuple = field(default_factory=tuple)

    def __str__(self) -> str:
        cc = f"sm_{self.cc[0]}{self.cc[1]}"
        lines = [f"kernel '{self.kernel}' for {cc} ({self.device.name} datasheet figures): "
                 f"{self.threads} threads a block ({self.threads // 32} warps)"
                 + (f", clusters of {self.cluster}" if self.cluster > 1 else "")]
        if self.registers is None:
            lines.append("  registers: not known (nvJitLink is not installed)")
        else:
            lines.append(f"  registers: {self.registers} a thread, {self.spilled_bytes} bytes "
                         f"spilled")
        if self.consumer_registers:
            lines.append(f"  warp-specialized: a producer warpgroup (128 threads, 40 registers "
                         f"each) beside the kernel's warps, which take "
                         f"{self.consumer_registers} registers each (setmaxnreg)")
        lines.append(f"  shared memory: {self.shared_bytes:,} bytes a block")
        if self.blocks_per_sm is not None:
            lines.append(f"  occupancy: {self.blocks_per_sm} block(s) an SM "
                         f"({self.blocks_per_sm * self.threads // 32} warps), limited by "
                         f"{self.limited_by}")
        for w in self.ptxas_warnings:
            hint = (" (a call: a float32 `/` of tiles, whose IEEE slow path is a call, takes "
                    "nt.fdiv; a 64-bit integer division, a constant divisor or 32-bit values)"
                    if w.startswith("C7509") else "")
            lines.append(f"  ptxas: {w}{hint}")
        for d in self.decisions:
            lines.append(f"  line {d.line}: {d.source}")
            lines.append(f"      {d.kind}: {d.text}")
        if not any(d.kind == "mma" for d in self.decisions):
            lines.append("  products: none")
        memory_us = self.bytes_moved / (self.device.tb_per_s * 1e6)
        bw = (f"the array arguments hold {self.bytes_moved / 1e6:,.3f} MB: {memory_us:,.2f} us "
              f"at {self.device.tb_per_s} TB/s if each byte moves once")
        if self.flops:
            compute_us = self.flops / (self.device.tflops_16bit * 1e6)
            bw += (f"; {self.flops / 1e9:,.3f} GFLOP: {compute_us:,.2f} us at "
                   f"{self.device.tflops_16bit} TFLOP/s (16-bit tensor cores)")
        else:
            bw += "; FLOPs not given (explain(..., flops=N) adds the compute time)"
        lines.append(f"  roofline estimate: {bw}; {self.bound_us:,.2f} us")
        return "\n".join(lines)


def _occupancy(dev: Device, threads: int, registers: int | None, shared: int):
    limits = {"threads": dev.threads_per_sm // threads, "blocks": dev.blocks_per_sm}
    if registers is not None:
        warp_regs = -(-max(registers, 1) * 32 // 256) * 256
        limits["registers"] = dev.registers_per_sm // (warp_regs * (threads // 32))
    if shared:
        limits["shared memory"] = dev.smem_per_sm // (shared + 1024)
    which = min(limits, key=limits.get)
    return limits[which], which


def _decisions(notes: dict) -> tuple:
    out = []
    for kind, loc, text in notes.values():
        src = linecache.getline(loc.filename, loc.line).strip() if loc.filename else ""
        out.append(Decision(kind, loc.filename, loc.line, src, text))
    out.sort(key=lambda d: (d.filename, d.line, d.kind))
    return tuple(out)


def _array_bytes(values) -> int:
    total = 0
    for v in values:
        if isinstance(v, (tuple, list)):
            total += _array_bytes(v)
            continue
        arr = getattr(v, "array", v)            # a partition's array
        nbytes = getattr(arr, "nbytes", None)
        if isinstance(nbytes, int) and hasattr(arr, "shape"):
            total += nbytes
    return total


def explain(kernel, args, kwargs, *, cc, device, flops) -> Explanation:
    """``kernel.explain(*args, **kwargs)`` (see :meth:`Kernel.explain`)."""
    from .compiler import compile_kernel, mma_impl
    from .runtime import linker
    from .runtime.launch_checks import bind_arrays
    if flops is not None and not (isinstance(flops, (int, float)) and not isinstance(flops, bool)
                                  and flops >= 0):
        from .errors import TileArgumentError
        raise TileArgumentError(f"kernel '{kernel.__qualname__}': explain(flops=...) takes the "
                                f"FLOPs of one launch, a number >= 0, got {flops!r}")
    values = kernel._bind(args, kwargs)
    specs = kernel._specs(values)
    bound = bind_arrays(kernel.__qualname__, specs, values, allow_host=None, call_site=None)
    spec = kernel._signature(bound)
    snap = kernel.snapshot(spec.key)
    with compiler_context.collecting_decisions() as notes:
        ck = compile_kernel(snap.fn, spec.argtypes, num_warps=kernel.num_warps,
                            min_blocks_per_sm=kernel.min_blocks_per_sm,
                            num_stages=kernel.num_stages, mma=mma_impl(),
                            grid_param=spec.grid_param, cc=cc, unchecked=kernel.unchecked)
    registers = spilled = None
    warnings = ()
    try:
        out = linker.assemble(ck.ptx, tuple(cc[:2]))
    except Exception:  # noqa: BLE001 - the report says what ptxas said below
        out = None
    if out is not None:
        report = linker.spill_report(out[1])
        if report is not None:
            registers, spilled = report
        warnings = linker.performance_warnings(out[1])
    consumers = None
    if ck.num_threads == 32 * kernel.num_warps + 128:        # a producer warpgroup joined
        from .lowering.ws import consumer_registers
        consumers = consumer_registers(32 * kernel.num_warps) or None
    dev = _device(cc, device)
    blocks, limiter = _occupancy(dev, ck.num_threads, registers, ck.shared_bytes)
    moved = _array_bytes(values)
    bound = moved / (dev.tb_per_s * 1e6)
    if flops:
        bound = max(bound, flops / (dev.tflops_16bit * 1e6))
    return Explanation(kernel=kernel.__qualname__, cc=tuple(cc[:2]), device=dev,
                       threads=ck.num_threads, cluster=ck.cluster,
                       shared_bytes=ck.shared_bytes, registers=registers,
                       spilled_bytes=spilled, blocks_per_sm=blocks, limited_by=limiter,
                       consumer_registers=consumers,
                       decisions=_decisions(notes), bytes_moved=moved, flops=flops,
                       bound_us=bound, ptxas_warnings=warnings)
