"""PTX -> cubin with nvJitLink, so the driver loads machine code rather than JIT-compiling PTX.

libNVVM from pip can be newer than the installed driver (numba-cuda[cu13] brings
libNVVM 13.5, whose PTX ISA 9.5 a 13.0 driver cannot JIT: ``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``).
nvJitLink of the same toolkit as libNVVM assembles that PTX into a cubin for the device,
which any driver of the same major version loads (CUDA minor-version compatibility).
When nvJitLink is missing the PTX is handed to the driver as before.
"""

from __future__ import annotations

import re


class LinkError(RuntimeError):
    """nvJitLink refused the PTX; the message carries its error log."""


def ptx_to_cubin(ptx: str, cc: tuple) -> bytes | None:
    """Assemble ``ptx`` for ``sm_{major}{minor}``.

    A ``.minnctapersm`` launch bound (``jit(min_blocks_per_sm=...)``) is a request: when
    ptxas can meet it only by spilling registers to local memory, the PTX is assembled
    again without it (see :func:`assemble`).

    Returns:
        The cubin (ELF bytes), or None when nvJitLink is not installed.

    Raises:
        LinkError: nvJitLink is present and failed (the log says why).
    """
    out = assemble(ptx, cc)
    return None if out is None else out[0]


_SPILLS = re.compile(r"(\d+) bytes spill stores")
#: nvJitLink's own summary line: "info    : used 64 registers, used 1 barriers, 56 stack, ..."
_SUMMARY = re.compile(r"used (\d+) registers,[^\n]*?(\d+) stack")
_MIN_BLOCKS = re.compile(r"^\s*\.minnctapersm\s+\d+\s*$", re.M)


def spill_report(log: str) -> tuple[int, int] | None:
    """``(registers, spilled bytes)`` from an nvJitLink ``-verbose`` info log, or None when
    it has no function report. Spilled bytes: ptxas' "bytes spill stores" where the log
    carries ptxas' lines, else the stack frame of nvJitLink's summary (a numba_tile kernel
    has no local arrays, so its stack holds only spills)."""
    m = _SUMMARY.search(log)
    if m is None:
        return None
    stores = [int(n) for n in _SPILLS.findall(log)]
    return int(m.group(1)), max(stores + [int(m.group(2))])


def performance_warnings(log: str) -> tuple[str, ...]:
    """ptxas' "Potential Performance Loss" notes of an nvJitLink ``-verbose`` log, each as
    ``"C7509: wgmma.mma_async instructions are serialized due to ..."`` (the function name
    left out): a serialized ``wgmma`` waits for the previous one to finish."""
    out = []
    for m in re.finditer(r"\((C\d{4})\) Potential Performance Loss: ([^\n]*?)"
                         r"(?: in the function '[^']*')?(?: in line \d+)?\s*$", log, re.M):
        text = f"{m.group(1)}: {m.group(2).strip()}"
        if text not in out:
            out.append(text)
    return tuple(out)


def assemble(ptx: str, cc: tuple) -> tuple[bytes, str] | None:
    """``(cubin, ptxas report)`` of ``ptx`` for ``sm_{major}{minor}``, or None without a
    usable nvJitLink.

    When the PTX carries ``.minnctapersm`` and ptxas reports spill stores under it, the
    directive is removed and the PTX assembled again: the bound trades registers for
    occupancy, and a spill would cost more than the occupancy gains (the report returned
    is the final one's).

    Raises:
        LinkError: nvJitLink failed (the log says why).
    """
    out = _link(ptx, cc, verbose=True)
    if out is None:
        return None
    cubin, log = out
    report = spill_report(log)
    if _MIN_BLOCKS.search(ptx) and report is not None and report[1] > 0:
        out = _link(_MIN_BLOCKS.sub("", ptx), cc, verbose=True)
    return out


def _link(ptx: str, cc: tuple, verbose: bool) -> tuple[bytes, str] | None:
    try:
        from cuda.bindings import nvjitlink as nj
    except ImportError:
        return None
    # PTX for an arch-specific target (sm_90a: wgmma) links only for that target
    suffix = "a" if f".target sm_{cc[0]}{cc[1]}a" in ptx else ""
    arch = f"-arch=sm_{cc[0]}{cc[1]}{suffix}"
    options = [arch, "-O3"] + (["-verbose"] if verbose else [])
    try:
        handle = nj.create(len(options), options)
    except Exception:  # noqa: BLE001 - library present but unusable: let the driver JIT
        return None
    try:
        data = ptx.encode()
        try:
            nj.add_data(handle, nj.InputType.PTX, data, len(data), "numba_tile.ptx")
            nj.complete(handle)
        except nj.nvJitLinkError as exc:
            size = nj.get_error_log_size(handle)
            log = bytearray(size)
            if size:
                nj.get_error_log(handle, log)
            raise LinkError(f"nvJitLink ({arch}) failed: {exc}\n{log.decode(errors='replace')}") from None
        out = bytearray(nj.get_linked_cubin_size(handle))
        nj.get_linked_cubin(handle, out)
        size = nj.get_info_log_size(handle)
        info = bytearray(size)
        if size:
            nj.get_info_log(handle, info)
        return bytes(out), info.decode(errors="replace").replace("\0", "")
    finally:
        nj.destroy(handle)
