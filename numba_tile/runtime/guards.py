"""Plan guards: for each launch plan, a generated function that answers, for a call's values,
"is this call of the plan's kind, and does it pass the plan's pointer rules?" in straight-line
code, without building and hashing the call's plan key.

A kernel remembers the last plan it launched; the next call tries that plan's guard first, and only
when the guard says no computes the plan key (``launcher.plan_key``) and looks the plan up. The
guard checks exactly what the key holds (``launcher.py``'s docstring lists it), read the same way
and with the same exact-type tests, then the pointer rules of ``Plan.admits``:

* a constant: its class (by identity) and its value (a float or complex by its bit pattern,
  ``constant_identity.py``, so 0.0 and -0.0 differ);
* a runtime scalar: its exact class (``int``, ``float``, ``bool``) and, for an int, the same
  int32 / int64 class;
* an array: whether it came in a :class:`Partition` (whose class is checked by identity, whose
  tile shape and order must be the very objects :func:`numba_tile.partition` interns, and whose
  blocks an exact int or None equal to the plan's), the producer class by identity, shape,
  strides, dtype and device as the producer reports them, the pointer's residue modulo 16;
* every array's byte range inside the address space, and no mutable array's range meeting
  another argument's.

Any exception while reading (a deleted partition field, an interface that raises) is a "no": the
key path, and then the slow path, decide and word the refusal. The code is generated from the plan
key only (classes, ints, tuples, strings: never user code), with every value passed in as a
constant of the generated function's namespace, not formatted into its text.
"""

from __future__ import annotations

import collections
import struct

from numba_tile.constant_identity import identity
from numba_tile.runtime.params import PARAM_KINDS
from numba_tile.runtime.partition import ROW, Partition, intern_order, intern_tile_shape

__all__ = ["make_runner", "runner_for"]

_ADDRESS_END = 1 << 64


def _c_contiguous(shape, strides) -> bool:
    """Whether element ``strides`` are the C-contiguous ones of ``shape`` on every axis of
    extent above 1 (what ``torch.Tensor.is_contiguous()`` answers), for a non-empty shape."""
    if type(shape) is not tuple or type(strides) is not tuple or len(shape) != len(strides):
        return False
    step = 1
    for n, st in zip(reversed(shape), reversed(strides)):
        if type(n) is not int or type(st) is not int or n < 1:
            return False
        if n != 1 and st != step:
            return False
        step *= n
    return True


def runner_for(key: tuple, roles: tuple, plan, kernel):
    """The plan's runner (:func:`make_runner`), or one that always says no."""
    from numba_tile.runtime import launcher
    run = make_runner(key, roles, plan, {"cupy": launcher._read_cupy,
                                         "torch": launcher._read_torch,
                                         "cai": launcher._read_cai, "numba": launcher._read_numba,
                                         "cupy_stream": launcher._cupy_stream}, kernel)
    return run if run is not None else launcher._never_run


def _guard_body(key: tuple, roles: tuple, plan, readers: dict):
    """The guard's statements, its namespace, the names of its variables (pointers, scalars,
    arrays, producer streams, the call's objects) and those of the stream variables that may
    hold a producer stream."""
    from numba_tile.runtime import launcher
    env = {"Partition": Partition, "ROW": ROW, "END": _ADDRESS_END, "_cupy_stream":
           readers["cupy_stream"]}
    # CuPy's current stream as launcher._cupy_stream reads it, inline: its export version is
    # read once (CuPy reads it once, at import)
    current_stream = launcher._cupy_current_stream()
    body = []
    ptr_names, arr_names, stream_names, obj_names, scalar_names = [], [], [], [], []
    k = 0                            # array index
    need_cs = True                   # the next CuPy array asks CuPy's current stream
    cs = None
    torch_stream_vars = []
    # where the process sees one CUDA device, every device array is on it: the plan's device
    # is that one, and the array's need not be read (a CUDA array of another device cannot
    # exist in this process)
    from numba_tile.runtime import driver
    one_device = driver.device_count() == 1

    def device_test(read, k):
        return "" if one_device and plan.device == 0 else f" or {read} != DEV{k}"

    unpack = []                      # the name each value is read into, in parameter order
    ranges = {}                      # array index -> the texts of its byte range's ends
    for i, (role, entry) in enumerate(zip(roles, key)):
        v = f"v{i}"
        unpack.append(f"a{k}" if role != "constant" and type(entry) is tuple and len(entry) == 4
                      and entry[0] == launcher.ARRAY else v)
        if role == "constant":
            cls, value = entry
            env[f"T{i}"] = cls
            if cls is float or cls is complex:
                env[f"V{i}"] = entry        # the key holds the value's identity (its bits)
                env["IDENTITY"] = identity
                body.append(f"if type({v}) is not T{i} or IDENTITY({v}) != V{i}: return None")
            elif cls is bool or value is None:
                env[f"V{i}"] = value
                body.append(f"if {v} is not V{i}: return None")
            else:
                env[f"V{i}"] = value
                body.append(f"if type({v}) is not T{i} or {v} != V{i}: return None")
            obj_names.append(v)
            continue
        if entry == "i32":
            body.append(f"if type({v}) is not int or not -2147483648 <= {v} < 2147483648: "
                        f"return None")
        elif entry == "i64":
            body.append(f"if type({v}) is not int or -2147483648 <= {v} < 2147483648 "
                        f"or not -9223372036854775808 <= {v} < 9223372036854775808: return None")
        elif entry is float or entry is bool:
            env[f"T{i}"] = entry
            body.append(f"if type({v}) is not T{i}: return None")
        elif type(entry) is tuple and len(entry) == 4:
            part, cls, residue, fields = entry
            a = f"a{k}"
            if part != launcher.ARRAY:
                _tag, ts, blocks, order = part
                env[f"TS{i}"] = intern_tile_shape(ts)
                env[f"O{i}"] = intern_order(order)
                body.append(f"if type({v}) is not Partition: return None")
                body.append(f"{a} = {v}.array")
                body.append(f"if {v}.tile_shape is not TS{i} or {v}.order is not O{i}: "
                            f"return None")
                if blocks is None:
                    body.append(f"if {v}.blocks is not None: return None")
                else:
                    env[f"B{i}"] = blocks
                    body.append(f"b = {v}.blocks")
                    body.append(f"if type(b) is not int or b != B{i}: return None")
            env[f"C{k}"] = cls
            body.append(f"if type({a}) is not C{k}: return None")
            reader = launcher._READERS.get(cls)
            p, s = f"p{k}", f"s{k}"
            if reader is readers["cupy"]:
                shape, strides, dtype, device, _ro = fields
                env[f"S{k}"], env[f"ST{k}"], env[f"D{k}"], env[f"DEV{k}"] = (
                    shape, strides, dtype, device)
                if need_cs:
                    # CuPy's current stream, asked where plan_key asks it: at the first CuPy
                    # array and at the first after a CUDA Array Interface read (Python code,
                    # which may make another CuPy stream current)
                    cs = f"cs{k}"
                    if current_stream is None:
                        body.append(f"{cs} = _cupy_stream()")
                    elif current_stream is False:
                        body.append(f"{cs} = None")
                    else:
                        env["GCS"] = current_stream
                        body.append(f"{cs} = GCS().ptr or 1")
                    need_cs = False
                body.append(f"d = {a}.data")
                body.append(f"{p} = d.ptr")
                # the dtype by identity: NumPy's dtypes of its own types are singletons (an
                # equal dtype that is another object, one with metadata, takes the key path)
                body.append(f"if {a}.shape != S{k} or {a}.strides != ST{k} or {a}.dtype is not "
                            f"D{k}{device_test('d.device_id', k)}: return None")
                s = cs                  # the stream variable of this array: CuPy's, as read
            elif reader is readers["torch"]:
                shape, strides, dtype, device, _ro = fields
                env[f"S{k}"], env[f"ST{k}"], env[f"D{k}"], env[f"DEV{k}"] = (
                    shape, strides, dtype, device)
                body.append(f"if not {a}.is_cuda: return None")
                body.append(f"{p} = {a}.data_ptr()")
                # a plan of C-contiguous strides asks is_contiguous() (PyTorch's own flag,
                # kept by its C++ metadata: no Python code can set it apart from the strides;
                # it ignores the strides of extent-1 axes, which no element address uses)
                strides_test = f"not {a}.is_contiguous()" if _c_contiguous(shape, strides) \
                    else f"{a}.stride() != ST{k}"
                body.append(f"if {a}.shape != S{k} or {strides_test} or {a}.dtype is not "
                            f"D{k}{device_test(f'{a}.get_device()', k)}: return None")
                body.append(f"{s} = None")
                torch_stream_vars.append(s)
            elif reader is readers.get("numba"):
                # launcher._read_numba, inline (its tests, in its order; any exception is a
                # "no", where the reader falls back for a pointer or device it cannot read: the
                # key path then reads it). A numba-cuda array's attributes are plain Python
                # attributes that may hold anything: exact types throughout (an int subclass
                # or a dtype-like object may say it equals anything), as the reader's
                shape, strides, dtype, device, _ro = fields
                env[f"S{k}"], env[f"ST{k}"], env[f"D{k}"], env[f"DEV{k}"] = (
                    shape, strides, dtype, device)
                need_cs = True
                body.append(f"g = {a}.gpu_data")
                body.append(f"{p} = g.device_ctypes_pointer.value")
                body.append(f"if {p} is None: {p} = 0")
                body.append(f"st = {a}.stream")
                body.append(f"{s} = int(st) if st != 0 else None")
                body.append(f"sh = {a}.shape")
                body.append(f"sd = {a}.strides")
                items = " or ".join(f"type({t}[{i}]) is not int"
                                    for t, n in (("sh", len(shape)), ("sd", len(strides)))
                                    for i in range(n))
                body.append(f"if type(sh) is not tuple or type(sd) is not tuple or sh != S{k} "
                            f"or sd != ST{k}{' or ' + items if items else ''} "
                            f"or {a}.dtype is not D{k}: return None")
                if device_test("dv", k):
                    body.append("dv = g.context.device.id")
                    body.append(f"if type(dv) is not int{device_test('dv', k)}: return None")
                body.append(f"if {s} is not None and (type({s}) is not int "
                            f"or not 0 < {s} < END): return None")
            elif reader is readers["cai"]:
                env[f"R{k}"], env[f"F{k}"] = reader, fields
                need_cs = True
                body.append(f"got = R{k}({a})")
                body.append(f"if got is None or got[1] != F{k}: return None")
                body.append(f"{p} = got[0]")
                body.append(f"{s} = got[2]")
            else:
                return None
            if not one_device:
                # several devices: the pointer's device asked of the driver (a producer's
                # may be wrong), as the slow path does (arrays._owner_device)
                env["PDEV"] = launcher._pointer_owner
                env[f"DEV{k}"] = fields[3]
                body.append(f"if {p} and PDEV({p}) != DEV{k}: return None")
            span = plan.spans[k]
            if span is not None:
                env[f"L{k}"], env[f"H{k}"] = span
            if residue == -1:
                body.append(f"if type({p}) is not int or {p}: return None")
            elif span is not None and span[0] == 0:
                env[f"AL{k}"] = residue
                env[f"LIM{k}"] = _ADDRESS_END - span[1]
                # a positive address (a negative int, which a forged pointer could be, is
                # no address; the slow path words the refusal) whose range, which starts at
                # it, ends inside the address space: one chained comparison
                body.append(f"if type({p}) is not int or not 0 < {p} < LIM{k} "
                            f"or {p} & 15 != AL{k}: return None")
                ranges[k] = (p, f"{p} + H{k}")
            else:
                env[f"AL{k}"] = residue
                body.append(f"if type({p}) is not int or {p} <= 0 or {p} & 15 != AL{k}: "
                            f"return None")
            if span is not None and k not in ranges:
                body.append(f"lo{k} = {p} + L{k}")
                body.append(f"hi{k} = {p} + H{k}")
                body.append(f"if lo{k} < 0 or hi{k} >= END: return None")
                ranges[k] = (f"lo{k}", f"hi{k}")
            ptr_names.append(p)
            arr_names.append(a)
            stream_names.append(s)
            obj_names.append(a)
            k += 1
            continue
        else:
            return None
        scalar_names.append(v)
        obj_names.append(v)
    # an end used by more than one pair is computed once
    uses = collections.Counter(i for pair in plan.pairs for i in pair)
    for i, n in sorted(uses.items()):
        lo, hi = ranges[i]
        if n > 1 and hi != f"hi{i}":
            body.append(f"hi{i} = {hi}")
            ranges[i] = (lo, f"hi{i}")
    for x, y in plan.pairs:
        (lx, hx), (ly, hy) = ranges[x], ranges[y]
        body.append(f"if {lx} < {hy} and {ly} < {hx}: return None")
    # every value read at once (a call of another length raises: "no")
    body.insert(0, f"{', '.join(unpack)}{',' if len(unpack) == 1 else ''} = values")
    names = (ptr_names, scalar_names, arr_names, stream_names, obj_names)
    return body, env, names, [n for n in stream_names if n not in torch_stream_vars]


def _combined_pack(plan, ptr_names, scalar_names, env):
    """One ``pack_into`` call (its text) that writes the call's pointers and scalars and, between
    them, the plan's own values of the other parameters (constants of the plan: its template),
    in place of one call per value; None when there is at most one value to write or a tensor
    map lies between them (its bytes are written by their own setter)."""
    own = plan.params
    written = dict(zip(plan.ptr_slots, ptr_names))
    written.update(zip(plan.scalar_slots, scalar_names))
    if len(written) < 2:
        return None
    first, last = min(written), max(written)
    fmt, args, pos = ["<"], [], own.offsets[first]
    start = pos
    for i in range(first, last + 1):
        code, size = PARAM_KINDS[own.kinds[i]]
        if own.kinds[i] == "map":
            return None
        off = own.offsets[i]
        if off > pos:
            fmt.append(f"{off - pos}x")          # alignment padding: no parameter's bytes
        fmt.append(code)
        pos = off + size
        if i in written:
            args.append(written[i])
        else:
            env[f"TV{i}"] = plan.template[i]
            args.append(f"TV{i}")
    env["PACKALL"] = struct.Struct("".join(fmt)).pack_into
    return f"PACKALL(BUF, {int(start)}, {', '.join(args)})"


def make_runner(key: tuple, roles: tuple, plan, readers: dict, kernel):
    """The plan's *runner*: its guard's checks followed by the common launch, inline.

    ``run(values, stream, on_conflict)`` returns None when the call is not of the plan's kind
    (nothing was done), else the launch's handle. The inline launch covers the common case: the
    stream is not capturing, the in-flight registry holds launches of this stream only (or none),
    the producers' streams are the launch stream, and the context of the plan's device is
    current. Anything else goes to ``launcher.enqueue_plan`` (before anything is queued), which
    handles capture, cross-stream ordering and producer streams.

    The inline launch is ``enqueue_plan``'s, step for step: the registry's lock around the
    launch and its registration, the plan's buffer written by its setters (inline), CuPy's
    ``launchKernel`` where CuPy is imported (``cuda.bindings``' otherwise, and after a CuPy
    error), then ``InflightRegistry.file_locked`` (the registry's event, and its entry: a plan
    entry, described lazily). Where CuPy is imported, the current context and the capture status
    are asked through its bindings (``cuCtxGetCurrent``, ``cudaStreamIsCapturing``: C integers
    in and out; ``cuda.bindings`` builds handle objects): 0.12 and 0.15 us against 0.17 and
    0.39 us on the H200 host (one run, 2026-12-01).
    """
    from numba_tile.runtime import driver, inflight, launcher
    made = _guard_body(key, roles, plan, readers)
    if made is None:
        return None
    body, env, names, stream_vars = made
    ptr_names, scalar_names, arr_names, stream_names, obj_names = names
    _module, func, _params, nthreads, shared = plan.loaded
    fast = launcher._fast_launch if launcher._fast_launch is not None \
        else launcher._find_fast_launch()
    env.update(ENQ=launcher.enqueue_plan, ENQ_DEV=launcher.enqueue_plan_on, KERNEL=kernel,
               PLAN=plan, INFLIGHT=inflight,
               DRIVER=driver, FUNC=func, FUNCADDR=plan.func_address, PARAMS=plan.params,
               BUF=plan.params._buf, ADDR=plan.params.address,
               NB=plan.nblocks, NT=nthreads, SH=shared, CUPY_LAUNCH=fast if fast else None,
               DEV=plan.device, TORCH=plan.torch_arrays, CTXI=driver._context_ints,
               HOLDS=launcher.held_storages, CTX_CURRENT=launcher._cupy_context_current(),
               CAPTURING=launcher._cupy_stream_is_capturing())

    def tup(items):
        return f"({', '.join(items)}{',' if len(items) == 1 else ''})"

    def lst(items):
        return f"[{', '.join(items)}]"

    enq = (f"ENQ(KERNEL, PLAN, stream, {lst(ptr_names)}, {lst(scalar_names)}, "
           f"{lst(arr_names)}, {lst(stream_names)}, objs, on_conflict)")
    # another context current: the launch under driver.device_context (which gives the
    # thread's context back after it)
    enq_dev = f"ENQ_DEV(DEV, {enq[4:-1]})"
    lines = ["def run(values, stream, on_conflict):", "    try:"]
    lines += [f"        {line}" for line in body]
    lines += [f"        objs = {tup(obj_names)}",
              "    except Exception:",
              "        return None"]
    # driver.ensure_context, inline
    if env["CTX_CURRENT"] is not None:
        lines += ["    if CTX_CURRENT() != CTXI.get(DEV):",
                  f"        return {enq_dev}"]
    else:
        lines += ["    cu = DRIVER._mod or DRIVER._cu()",
                  "    cur = cu.cuCtxGetCurrent()[1]",
                  "    if cur is None or int(cur) != CTXI.get(DEV):",
                  f"        return {enq_dev}"]
    if env["CAPTURING"] is not None:
        # CuPy's runtime binding; the legacy stream by its explicit handle (1): the runtime
        # reads 0 as the per-thread stream where CuPy was built for it. It raises for the legacy
        # stream while a blocking stream captures: enqueue_plan then refuses with the reason
        lines += ["    try:",
                  "        st = CAPTURING(stream or 1)",
                  "    except Exception:",
                  f"        return {enq}",
                  "    reg = INFLIGHT._default",
                  "    if st or reg is None:",
                  f"        return {enq}"]
    else:
        if env["CTX_CURRENT"] is not None:
            lines += ["    cu = DRIVER._mod or DRIVER._cu()"]
        lines += ["    err, st = cu.cuStreamIsCapturing(stream)",
                  "    reg = INFLIGHT._default",
                  "    if err or int(st) or reg is None:",
                  f"        return {enq}"]
    if stream_vars:
        canon = " or ".join(f"({v} is not None and ({v} or 1) != (stream or 1))"
                            for v in dict.fromkeys(stream_vars))
        lines += [f"    if {canon}:",
                  f"        return {enq}"]
    # the storages of PyTorch arrays, read after the guard's reads (which may run user code)
    # (launcher.held_storages, inline: each storage must hold the bytes the launch uses)
    holds = []
    if plan.torch_arrays:
        lines += ["    try:"]
        for i in plan.torch_arrays:
            st, base = f"st{i}", f"sb{i}"
            lines.append(f"        {st} = {arr_names[i]}.untyped_storage()")
            span = plan.spans[i]
            if span is not None:
                env[f"SL{i}"], env[f"SH{i}"] = span
                p = ptr_names[i]
                lines += [f"        {base} = {st}.data_ptr()",
                          f"        if type({base}) is not int or not ({base} <= {p} + SL{i} "
                          f"and {p} + SH{i} <= {base} + {st}.nbytes()):",
                          "            return None"]
            holds.append(st)
        lines += ["    except Exception:",
                  "        return None"]
    lines += [f"    keep = {tup(arr_names + ['KERNEL'] + holds)}"]
    # the plan's buffer, written by its setters inline (the same struct pack_into calls as
    # Plan.pack, at the same offsets)
    if len(ptr_names) != len(plan.ptr_setters) or len(scalar_names) != len(plan.scalar_setters):
        return None
    combined = _combined_pack(plan, ptr_names, scalar_names, env)
    if combined is not None:
        packs = [f"        {combined}"]
    else:
        packs = []
        for kind, setters, vals in (("P", plan.ptr_setters, ptr_names),
                                    ("Q", plan.scalar_setters, scalar_names)):
            for k, ((pack_into, off), v) in enumerate(zip(setters, vals)):
                env[f"{kind}S{k}"] = pack_into
                packs.append(f"        {kind}S{k}(BUF, {int(off)}, {v})")
    for k, (pack_into, off, j, _slot, enc) in enumerate(plan.map_setters):
        env[f"MS{k}"], env[f"ME{k}"] = pack_into, enc       # tensor maps: of the pointer
        packs.append(f"        MS{k}(BUF, {int(off)}, ME{k}({ptr_names[j]}))")
    lines += ["    with reg._lock:",
              "        queues = reg._streams",
              "        qkey = stream if stream != 2 else INFLIGHT.queue_key(stream)",
              "        if queues and (len(queues) > 1 or qkey not in queues):",
              f"            return {enq}"]
    lines += packs
    bindings = ["cu = DRIVER._mod or DRIVER._cu()",
                "err, = cu.cuLaunchKernel(FUNC, NB, 1, 1, NT, 1, 1, SH, stream, ADDR, 0)",
                "if err:",
                "    DRIVER._raise('cuLaunchKernel', err)"]
    if fast and plan.func_address:
        lines += ["        try:",
                  "            CUPY_LAUNCH(FUNCADDR, NB, 1, 1, NT, 1, 1, SH, stream, ADDR, 0)",
                  "        except Exception:"]
        lines += [f"            {line}" for line in bindings]
    else:
        lines += [f"        {line}" for line in bindings]
    # the entry's description, lazily: keep's first items are the arrays (Plan.describe zips)
    lazy = f"(PLAN, {tup(ptr_names)}, keep, {tup(stream_names)})"
    env["LH"] = inflight.LaunchHandle
    lines += [f"        {line.format(result='entry', lazy=lazy)}"
              for line in inflight.InflightRegistry.INLINE_FILING]
    lines += ["        if entry is not None:",
              "            return entry",
              f"        return reg.file_locked(stream, keep, (), objs, {lazy}, DEV)"]
    text = "\n".join(lines) + "\n"
    exec(compile(text, f"<numba_tile plan runner of {len(key)} parameters>", "exec"), env)
    run = env["run"]
    run.source = text
    return run
