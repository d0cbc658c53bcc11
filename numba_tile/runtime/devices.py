"""The rules of a launch that meets more than one GPU (docs/safety.md, R16).

* :func:`launch_device`: a launch runs on the device of its mutable arrays;
* :func:`check_devices` (called by ``launch_checks.bind_arrays`` on every call whose arrays
  span devices): mutable arrays on that device, read-only ones on it or on a peer it can read;
* :func:`check_stream_device`: a stream of the launch device's primary context;
* :func:`prepare_peer_launch`: a launch that reads a peer is not captured, is filed in a
  registry queue of its own and waits for its peer arrays' producer streams.

Where the process sees several devices, an array's device is the driver's answer for its
pointer (``arrays._owner_device``), on the slow path and on a plan's (``guards``,
``launcher.Plan.admits``).
"""

from __future__ import annotations

from typing import Sequence

from numba_tile.errors import CaptureError, TileArgumentError
from numba_tile.runtime import driver, inflight

__all__ = ["launch_device", "launch_owner", "check_devices", "check_stream_device",
           "prepare_peer_launch"]


def _arg_error(message: str) -> TileArgumentError:
    from numba_tile.runtime.call_site import user_call_site
    site = user_call_site() or (None, None)
    return TileArgumentError(message, filename=site[0], lineno=site[1])


def launch_device(arrays: Sequence) -> int | None:
    """The device a launch runs on: that of its first non-empty mutable array, else of its
    first non-empty array, else of its first array (None: no array, or host arrays).

    A launch writes on one device, the one its mutable arguments live on; read-only arguments
    may live on a peer of it (:func:`check_devices`)."""
    return _launch_owner(arrays).array.device if arrays else None


def launch_owner(arrays: Sequence):
    """The array whose device is the launch's (:func:`launch_device`); ``arrays`` not empty."""
    return _launch_owner(arrays)


def _launch_owner(arrays: Sequence):
    first = None
    for b in arrays:
        if b.array.size:
            if b.mutable:
                return b
            if first is None:
                first = b
    return first if first is not None else arrays[0]


def check_devices(arrays: list, err, stream: int | None = None) -> None:
    """Arrays on more than one device: every non-empty mutable array on the launch device
    (:func:`launch_device`); every non-empty read-only array on it or on a peer whose memory
    the launch device can read. Peer access is enabled on first use (``cuCtxEnablePeerAccess``,
    what PyTorch does for a copy between two GPUs) and the access the launch device has to all
    the memory a peer array spans is asked of the driver (``driver.range_access``), so memory
    of a pool or a virtual-memory mapping that its owner did not open to the launch device is
    refused before the kernel could fault on it. Empty arrays are never read: their device
    does not matter. A launch that reads a peer inside a graph capture is refused first
    (``CaptureError``), before any driver call the capture would forbid."""
    owner = _launch_owner(arrays)
    dev = owner.array.device
    role = "mutable argument" if owner.mutable else "argument"
    peers = [b for b in arrays if b.array.size and b.array.device != dev]
    if peers and stream is not None and not any(b.mutable for b in peers) \
            and driver.gpu_available() and driver.stream_capture_status(stream):
        # first, before any driver call a capture forbids: a replay would skip the per-call
        # peer checks and orderings (prepare_peer_launch refuses it again at the launch)
        raise err(CaptureError,
                  f"read-only argument '{peers[0].spec.name}' is on CUDA device "
                  f"{peers[0].array.device} and {role} '{owner.spec.name}' on CUDA device {dev} "
                  f"(the launch's): a launch that reads another GPU's memory cannot be captured "
                  f"into a CUDA graph (its peer access and its ordering after the peers' streams "
                  f"are checked at each call, and a replay would skip them); copy "
                  f"'{peers[0].spec.name}' to device {dev} first, or launch outside the capture")
    for b in arrays:
        a = b.array
        if a.device == dev or a.size == 0:
            continue
        if b.mutable:
            raise err(TileArgumentError,
                      f"mutable arguments '{owner.spec.name}' (CUDA device {dev}) and "
                      f"'{b.spec.name}' (CUDA device {a.device}) are on different devices: a "
                      f"launch writes on one device; only read-only arguments may live on a "
                      f"peer GPU")
        where = (f"read-only argument '{b.spec.name}' (CUDA device {a.device}) and {role} "
                 f"'{owner.spec.name}' (CUDA device {dev}, the launch's) are on different "
                 f"devices")
        try:
            possible = driver.can_access_peer(dev, a.device)
        except driver.CudaDriverError as e:
            raise err(TileArgumentError, f"{where}, and the driver could not tell whether device "
                      f"{dev} can read device {a.device}'s memory ({e})") from None
        if not possible:
            raise err(TileArgumentError,
                      f"{where}, and device {dev} cannot read device {a.device}'s memory "
                      f"(cuDeviceCanAccessPeer: no peer-to-peer path between them): copy "
                      f"'{b.spec.name}' to device {dev} first")
        try:
            driver.enable_peer_access(dev, a.device)
            lo, hi = a.byte_bounds
            flags = driver.range_access(lo, hi, dev)
        except driver.CudaDriverError as e:
            raise err(TileArgumentError, f"{where}, and peer access from device {dev} to device "
                      f"{a.device} could not be set up ({e})") from None
        if any(f is None or not f & driver.ACCESS_READ for f in flags):
            raise err(TileArgumentError,
                      f"{where}, and device {dev} has no read access to all of "
                      f"'{b.spec.name}''s memory (access flags {flags} of the allocation ranges "
                      f"it spans, in address order; None: no allocation): memory from a pool or "
                      f"a virtual-memory mapping must be opened to device {dev} by its owner "
                      f"(cuMemPoolSetAccess, cuMemSetAccess), or copied to device {dev}")


def check_stream_device(kernel: str, stream: int, device: int,
                        owner_name: str | None = None) -> None:
    """A stream belongs to the context it was made in: a launch on ``device`` takes only a
    stream of ``device``'s primary context (the one numba_tile, PyTorch, CuPy and Numba share).
    Asked on the slow path (``Kernel._launch``) for handles other than 0, 1, 2; a plan's runner
    leaves it to the driver, which refuses a stream of another context (measured on the H200,
    ``tests/gpu/test_peer_devices.py``). Not asked of a stream being captured into a graph (the
    query would invalidate the capture), and asked with the thread's capture mode relaxed
    (another stream's capture in global mode stays valid).

    ``owner_name``: the argument whose device is the launch's, named in the refusal.

    Raises:
        TileArgumentError: a stream the driver does not know, or of another context.
    """
    if driver.stream_capture_status(stream):
        return
    from numba_tile.runtime.capture import relaxed
    try:
        with relaxed():
            ctx, owner = driver.stream_owner(stream)
    except driver.CudaDriverError as e:
        raise _arg_error(f"kernel '{kernel}': stream: the driver does not know stream handle "
                         f"{stream:#x} ({e.name}); was it destroyed?") from None
    if ctx != driver._context_ints.get(device):
        whose = (f"CUDA device {owner}" if owner != device else
                 f"a context of CUDA device {device} other than its primary one")
        chosen = f"argument '{owner_name}'" if owner_name else "its arrays"
        raise _arg_error(f"kernel '{kernel}': stream: stream handle {stream:#x} belongs to "
                         f"{whose}, and the launch runs on CUDA device {device}, the device of "
                         f"{chosen}: use a stream of device {device}")


def prepare_peer_launch(kernel: str, stream: int, device: int, devices: set, arrays: list,
                        streams: list):
    """For a launch on ``device`` whose non-empty arrays span ``devices`` (more than one):
    refuses it inside a graph capture, makes ``stream`` wait for the work queued on each peer
    array's producer stream (a stream of the peer: ``streams.producer_streams`` compares
    handles only, so its entry in ``streams`` is set to None) and returns the registry queue
    the launch is filed in (``inflight.peer_key``: apart from the default streams' batches,
    which hold every device's launches under one handle). Called with ``device``'s context
    current.

    Raises:
        CaptureError: ``stream`` is capturing: a replay would skip the per-call peer checks.
    """
    if driver.stream_capture_status(stream):
        raise CaptureError(
            f"kernel '{kernel}': a launch that reads another GPU's memory (arguments on CUDA "
            f"devices {sorted(devices)}, the launch on device {device}) cannot be captured into "
            f"a CUDA graph: its peer access and its ordering after the peers' streams are "
            f"checked at each call, and a replay would skip them; copy the peer's data to "
            f"device {device} first, or launch it outside the capture")
    for i, a in enumerate(arrays):
        if a.device != device and a.stream is not None and a.size:
            driver.wait_for_peer_stream(stream, a.stream, a.device)
            streams[i] = None
    return inflight.peer_key(stream, device)
