"""PTX -> cubin with nvJitLink, so the driver loads machine code rather than JIT-compiling PTX.

libNVVM from pip can be newer than the installed driver (numba-cuda[cu13] brings
libNVVM 13.5, whose PTX ISA 9.5 a 13.0 driver cannot JIT: ``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``).
nvJitLink of the same toolkit as libNVVM assembles that PTX into a cubin for the device,
which any driver of the same major version loads (CUDA minor-version compatibility).
When nvJitLink is missing the PTX is handed to the driver as before.
"""

from __future__ import annotations


class LinkError(RuntimeError):
    """nvJitLink refused the PTX; the message carries its error log."""


def ptx_to_cubin(ptx: str, cc: tuple) -> bytes | None:
    """Assemble ``ptx`` for ``sm_{major}{minor}``.

    Returns:
        The cubin (ELF bytes), or None when nvJitLink is not installed.

    Raises:
        LinkError: nvJitLink is present and failed (the log says why).
    """
    try:
        from cuda.bindings import nvjitlink as nj
    except ImportError:
        return None
    arch = f"-arch=sm_{cc[0]}{cc[1]}"
    try:
        handle = nj.create(2, [arch, "-O3"])
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
        return bytes(out)
    finally:
        nj.destroy(handle)
