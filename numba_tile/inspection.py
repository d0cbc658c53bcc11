"""What a kernel compiles to, as a user asks it: :class:`KernelInspection`, the methods
``ptx``, ``compiled`` and ``explain`` of :class:`numba_tile.Kernel` (which inherits them), for
the specialization some arguments select, without launching anything."""

from __future__ import annotations

from .runtime.launch_checks import bind_arrays
from .targets import check_target

__all__ = ["KernelInspection"]


class KernelInspection:
    """The inspection methods of :class:`numba_tile.Kernel` (its binding, specialization and
    compile methods do the work)."""

    def ptx(self, *args, cc=(9, 0), **kwargs) -> str:
        """PTX of the specialization these arguments select (compiles, launches nothing).

        Needs no GPU: the PTX comes from libNVVM (``numba-cuda[cu13]``). The kernel is typed
        and ownership-checked first, exactly as a launch with these arguments would, so a
        kernel that would be refused at its first launch is refused here too.

        Args:
            *args: the arguments of a launch (as :meth:`__call__`'s). Arrays may be
                device arrays, NumPy arrays or fake ``__cuda_array_interface__`` objects: only
                their dtype, rank, alignment and strides matter; partitions and constants as
                for a launch.
            **kwargs: the same, by parameter name.
            cc (tuple of two ints): the target compute capability ``(major, minor)``, 8.0 or
                newer (default ``(9, 0)``, Hopper), one the CUDA toolkit compiles for; the
                shared-memory limit checked is that target's. On ``(9, 0)`` the PTX targets
                ``sm_90a`` when the kernel uses Hopper instructions (``wgmma``, TMA).

        Returns:
            str: the PTX module's text.

        Raises:
            TileTypingError: as a launch, and for a ``cc`` below 8.0.
            TileArgumentError: as a launch, and for a ``cc`` that is not a tuple of two ints or
                not a target of the CUDA toolkit.
            OwnershipError: the kernel breaks an ownership rule checked at compile time.

        Examples:
            >>> import numpy as np, numba_tile as nt
            >>> @nt.jit
            ... def double(x, z: nt.Partition["B"], B: nt.Constant):
            ...     nt.store(z, 2.0 * nt.load_like(x, z))
            >>> x = np.zeros(4096, np.float32)
            >>> ptx = double.ptx(x, nt.partition(np.empty_like(x), 1024), 1024, cc=(8, 0))
            >>> ".target sm_80" in ptx
            True
        """
        return self.compiled(*args, cc=cc, **kwargs).ptx

    def compiled(self, *args, cc=(9, 0), **kwargs):
        """The compiled specialization these arguments select, as :meth:`ptx` compiles it.

        Args:
            *args: as :meth:`ptx`.
            **kwargs: as :meth:`ptx`.
            cc (tuple of two ints): as :meth:`ptx`.

        Returns:
            CompiledKernel: its ``ptx`` (str), ``entry`` (the PTX entry's name),
            ``num_threads`` (threads per block), ``cc``, ``shared_bytes`` (the dynamic
            shared memory a block needs), ``param_kinds`` and ``tensor_maps`` (what the
            launch passes).

        Raises:
            TileTypingError, TileArgumentError, OwnershipError: as :meth:`ptx`.
        """
        cc = check_target(self.__qualname__, cc)
        values = self._bind(args, kwargs)
        groups = self._group_lengths(values)
        if groups:
            return self._grouped(groups, values).compiled(*self._flatten(groups, values), cc=cc)
        specs = self._specs(values)
        bound = bind_arrays(self.__qualname__, specs, values, allow_host=None, call_site=None)
        spec = self._signature(bound)
        return self.compile(spec.key, spec.argtypes, spec.grid_param, cc)

    def explain(self, *args, cc=(9, 0), device=None, flops=None, **kwargs):
        """What the specialization these arguments select compiles to, and why: per matrix
        product ``wgmma`` or ``mma.sync`` (and the rule that excluded ``wgmma``), per load
        pipelined (TMA or ``cp.async``, stages, warp specialization) or why not; registers
        and spills (ptxas through nvJitLink, no GPU needed), shared memory, threads,
        occupancy, and a roofline estimate (:mod:`numba_tile.explain`).

        Args:
            *args: as :meth:`ptx`.
            cc (tuple of two ints): the compute capability to compile for.
            device (str or None): "H100", "H200", "A100" or "L40S": whose datasheet figures
                the occupancy and roofline use; None: the GPU at hand, else the usual part of
                ``cc``.
            flops (float or None): the FLOPs one launch computes, for the compute bound.
            **kwargs: as :meth:`ptx`.

        Returns:
            numba_tile.explain.Explanation: print it, or read its fields.

        Raises:
            TileTypingError, TileArgumentError, OwnershipError: as :meth:`ptx`.
        """
        from .explain import explain
        cc = check_target(self.__qualname__, cc)
        values = self._bind(args, kwargs)
        groups = self._group_lengths(values)
        if groups:
            return self._grouped(groups, values).explain(
                *self._flatten(groups, values), cc=cc, device=device, flops=flops)
        return explain(self, args, kwargs, cc=cc, device=device, flops=flops)
