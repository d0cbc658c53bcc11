"""A kernel call's values in parameter order: the generated binders of the launch fast path.

``Kernel.__call__`` takes ``*args, **kwargs``, so every call with a keyword builds a dict that
must then be bound to the parameters. Two generated pieces take that off the repeated call:

* :func:`make_binder`: for one positional count and one sequence of keyword names, a function
  ``bind(args, kwargs)`` returning the values in parameter order (defaults filled in), or False
  when those names do not bind each parameter exactly once.
* :func:`call_class`: a subclass of the kernel's class whose ``__call__`` has a keyword-only
  parameter for each of the kernel's constants and defaulted parameters, so the common call
  (arrays by position, constants by keyword: ``k(x, y, nt.partition(z, 256), B=256)``) is bound
  by CPython itself, with no dict. The generated ``__call__`` tries the kernel's last plan
  (``runtime/guards.py``) and hands anything else, with the same arguments, to
  ``Kernel.__call__``: the errors and the slow path are the generic ones.

Both are generated from the parameter list only (names, indices, defaults as constants of the
function's namespace, never formatted into its text). Internal names start with ``_nt_``; a
kernel with a parameter so named keeps the generic ``__call__`` (one named like a launch
option is refused at its definition, ``Kernel.__init__``). A call that gives two wrong
keywords gets the generic error about the first of them in parameter order.
"""

from __future__ import annotations

import inspect
import os

__all__ = ["LAUNCH_OPTIONS", "LAUNCH_OPTION_NAMES", "call_class", "kw_order", "make_binder"]

#: the keyword-only launch options of ``Kernel.__call__``, with their defaults (a kernel may
#: not name a parameter so: ``Kernel.__init__`` refuses it)
LAUNCH_OPTIONS = (("stream", None), ("interpret", None), ("on_conflict", "wait"),
                  ("grid", None), ("unchecked", False))
LAUNCH_OPTION_NAMES = tuple(n for n, _ in LAUNCH_OPTIONS)

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

#: the most positional counts the generated ``__call__`` binds without the generic path
_MAX_CASES = 16


def kw_order(params, npos: int, names) -> tuple | bool:
    """Per parameter after the first ``npos``: (keyword name, None) or (None, default); False
    when ``names`` do not bind each of them exactly once."""
    if npos > len(params) or len(set(names)) != len(names):
        return False
    rest = {p.name: p for p in params[npos:]}
    if any(n not in rest for n in names):
        return False
    order = []
    for p in params[npos:]:
        if p.name in names:
            order.append((p.name, None))
        elif p.default is not inspect.Parameter.empty:
            order.append((None, p.default))
        else:
            return False
    return tuple(order)


def make_binder(params, qualname: str, npos: int, names):
    """``bind(args, kwargs)``: the values in parameter order, for calls with ``npos`` positional
    values and the keywords ``names`` (in that order); False when those do not bind each
    parameter exactly once."""
    order = kw_order(params, npos, names)
    if order is False:
        return False
    env, items = {}, [f"a[{i}]" for i in range(npos)]
    for i, (name, default) in enumerate(order):
        if name is not None:
            env[f"K{i}"] = name
            items.append(f"kw[K{i}]")
        else:
            env[f"D{i}"] = default
            items.append(f"D{i}")
    text = f"def bind(a, kw):\n    return ({', '.join(items)}{',' if len(items) == 1 else ''})\n"
    exec(compile(text, f"<numba_tile binder of {qualname}>", "exec"), env)
    return env["bind"]


def _tup(items) -> str:
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


def call_class(kernel_cls, params, qualname: str, defaults):
    """A subclass of ``kernel_cls`` whose ``__call__`` binds the kernel's constants and
    defaulted parameters as keyword-only parameters (the module docstring); None where the
    generic ``__call__`` must stay (a parameter named like a launch option or ``_nt_*``, or
    nothing to bind by keyword).

    ``defaults`` is the process's launch defaults object (``runtime/defaults.py``): read on each
    call, as ``Kernel.__call__`` reads it."""
    names = [p.name for p in params]
    options = {n for n, _ in LAUNCH_OPTIONS}
    if any(n in options or n.startswith("_nt_") for n in names):
        return None
    empty = inspect.Parameter.empty
    slots = [i for i, p in enumerate(params) if p.role == "constant" or p.default is not empty]
    if not slots:
        return None
    n = len(params)
    # the generic __call__ looked up on each fallback (a test may patch Kernel.__call__)
    env = {"_nt_M": _MISSING, "_nt_D": defaults, "_nt_base": kernel_cls}
    sig = ["_nt_self", "*_nt_args"]
    for name, default in LAUNCH_OPTIONS:
        env[f"_nt_o_{name}"] = default
        sig.append(f"{name}=_nt_o_{name}")
    sig += [f"{names[i]}=_nt_M" for i in slots] + ["**_nt_kw"]
    slotset = set(slots)
    # the trailing run of keyword-bindable parameters: a call with k positional values binds
    # without the generic path when every parameter from k on is one of them
    first = n
    while first > 0 and first - 1 in slotset:
        first -= 1
    cases = []
    for k in range(n, max(first, n - _MAX_CASES) - 1, -1):
        head = [f"{names[i]} is _nt_M" for i in slots if i < k]
        tail, items = [], []
        for i in range(k, n):
            p = params[i]
            if p.default is empty:
                tail.append(f"{names[i]} is not _nt_M")
                items.append(names[i])
            else:
                env[f"_nt_d{i}"] = p.default
                items.append(f"(_nt_d{i} if {names[i]} is _nt_M else {names[i]})")
        test = " and ".join(head + tail) or "True"
        value = "_nt_args" if not items else f"_nt_args + {_tup(items)}"
        cases.append((k, test, value))
    lines = [f"def __call__({', '.join(sig)}):",
             "    if (not _nt_kw and _nt_D.watch is None and grid is None",
             "            and (interpret is False or (interpret is None and not _nt_self.interpret",
             "                                        and _nt_D.interpret is not True))",
             "            and (unchecked is True or (unchecked is False and not _nt_self.unchecked))",
             "            and (on_conflict == 'wait' or on_conflict == 'raise')):",
             "        _nt_plan = _nt_self._last_plan",
             "        if _nt_plan is not None:",
             "            _nt_k = len(_nt_args)",
             "            _nt_v = None"]
    for j, (k, test, value) in enumerate(cases):
        lines += [f"            {'if' if j == 0 else 'elif'} _nt_k == {k}:",
                  f"                if {test}:",
                  f"                    _nt_v = {value}"]
    lines += ["            if _nt_v is not None:",
              "                _nt_s = stream",
              "                if _nt_s is None:",
              "                    _nt_s = _nt_D.stream",
              "                _nt_h = 0 if _nt_s is None else _nt_self._handle(_nt_s)",
              "                if _nt_h is not None:",
              "                    _nt_r = _nt_plan.run(_nt_v, _nt_h, on_conflict)",
              "                    if _nt_r is not None:",
              "                        return _nt_r"]
    # anything else: the generic call, with the keywords the slots took given back
    for i in slots:
        env[f"_nt_n{i}"] = names[i]
        lines += [f"    if {names[i]} is not _nt_M:",
                  f"        _nt_kw[_nt_n{i}] = {names[i]}"]
    opts = ", ".join(f"{name}={name}" for name, _ in LAUNCH_OPTIONS)
    lines += [f"    return _nt_base.__call__(_nt_self, *_nt_args, {opts}, **_nt_kw)"]
    text = "\n".join(lines) + "\n"
    # a file name inside the package: user_call_site (runtime/launch_checks.py) skips the
    # frame, so an error of the generic path still points at the user's line
    exec(compile(text, os.path.join(_PACKAGE_DIR, f"<generated __call__ of {qualname}>"),
                 "exec"), env)
    fn = env["__call__"]
    fn.__doc__ = kernel_cls.__call__.__doc__
    fn.__qualname__ = f"{kernel_cls.__qualname__}.__call__"
    fn.source = text
    cls = type(kernel_cls.__name__, (kernel_cls,), {"__call__": fn, "__module__":
                                                    kernel_cls.__module__})
    cls.__qualname__ = kernel_cls.__qualname__
    return cls


class _Missing:
    """The value of a keyword-only slot the call did not give."""

    __slots__ = ()

    def __repr__(self):
        return "<not given>"


_MISSING = _Missing()
