"""Tuples of arrays as kernel arguments (grouped GEMM's per-group A, B and C).

A parameter given a tuple (or list) of arrays, or of :func:`numba_tile.partition` objects, is
a *group*. The kernel is then specialized for the group's length: its source is rewritten so
that the group's ``n`` members are ``n`` ordinary parameters (``As__0``, ``As__1``, ...: each
a tensor or partition with every check a single array gets, ownership and overlap included),
and a launch passes them one by one. In the kernel a group is used only through

* ``As[k]`` with ``k`` an integer literal or the variable of a ``numba_tile.static_range``
  loop (``for g in nt.static_range(len(As)): ... As[g] ...``, unrolled at the rewrite), and
* ``len(As)``, a literal.

Anything else (an index known only at run time, the group passed whole to a function) is
refused at the rewrite, at the user's line: a member's type differs per member (its own
extents, strides and ownership), so a run-time choice among them has no single type. The
rewritten function has the kernel's globals and line numbers, so errors point at the user's
source. Kernels with closure variables cannot be rewritten (their cells are not in the
source); they are refused when called with a group.
"""

from __future__ import annotations

import __future__
import ast
import copy
import inspect
import textwrap

from .errors import TileArgumentError

__all__ = ["is_group", "member_name", "expand", "check_parameter_space"]


def is_group(value) -> bool:
    """Whether a launch value is a group (a tuple or list, not a scalar, not a partition)."""
    return type(value) in (tuple, list)


def member_name(param: str, k: int) -> str:
    """The rewritten kernel's parameter for member ``k`` of group ``param``."""
    return f"{param}__{k}"


class _Refusal(Exception):
    def __init__(self, node, message):
        super().__init__(message)
        self.node = node


def _is_static_range(call) -> bool:
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    return name == "static_range"


class _Rewrite(ast.NodeTransformer):
    """Replaces ``len(G)``, unrolls ``static_range`` loops, and turns ``G[k]`` into members."""

    def __init__(self, lengths: dict):
        self.lengths = lengths          # group name -> length

    # len(G) -> n
    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Name) and node.args[0].id in self.lengths:
            return ast.copy_location(ast.Constant(self.lengths[node.args[0].id]), node)
        self.generic_visit(node)
        return node

    def visit_For(self, node):
        if not (isinstance(node.iter, ast.Call) and _is_static_range(node.iter)):
            self.generic_visit(node)
            return node
        if node.orelse:
            raise _Refusal(node, "a static_range loop has no else branch")
        if not isinstance(node.target, ast.Name):
            raise _Refusal(node, "a static_range loop binds one name")
        bounds = [self.visit(copy.deepcopy(a)) for a in node.iter.args]
        if node.iter.keywords or not 1 <= len(bounds) <= 3 or not all(
                isinstance(b, ast.Constant) and type(b.value) is int for b in bounds):
            raise _Refusal(node, "static_range takes 1 to 3 integer literals or len() of a "
                                 "group (its trip count is known when the kernel is rewritten)")
        values = range(*(b.value for b in bounds))
        if len(values) > 1024:
            raise _Refusal(node, f"static_range of {len(values)} iterations (at most 1024)")
        for sub in ast.walk(node):
            if sub is not node and isinstance(sub, (ast.Break, ast.Continue)):
                raise _Refusal(sub, "break and continue do not apply in a static_range loop "
                                    "(its body is unrolled)")
        out = []
        name = node.target.id
        for v in values:
            for stmt in node.body:
                stmt = _Substitute(name, v).visit(copy.deepcopy(stmt))
                stmt = self.visit(stmt)
                out.extend(stmt if isinstance(stmt, list) else [stmt])
        if not out:
            out = [ast.copy_location(ast.Pass(), node)]
        return out

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Name) and node.value.id in self.lengths:
            g = node.value.id
            k = self.visit(node.slice)
            if isinstance(k, ast.UnaryOp) and isinstance(k.op, ast.USub) \
                    and isinstance(k.operand, ast.Constant) and type(k.operand.value) is int:
                k = ast.Constant(-k.operand.value)          # xs[-1]
            if not (isinstance(k, ast.Constant) and type(k.value) is int):
                raise _Refusal(node, f"group '{g}' indexed by a value known only at run time: "
                                     f"index it by an integer literal or the variable of a "
                                     f"numba_tile.static_range loop")
            n = self.lengths[g]
            if not -n <= k.value < n:
                raise _Refusal(node, f"{g}[{k.value}] is out of range: the group has {n} "
                                     f"members")
            if not isinstance(node.ctx, ast.Load):
                raise _Refusal(node, f"a member of group '{g}' cannot be assigned")
            return ast.copy_location(ast.Name(member_name(g, k.value % n), ast.Load()), node)
        self.generic_visit(node)
        return node

    def visit_Name(self, node):
        if node.id in self.lengths:
            raise _Refusal(node, f"group '{node.id}' used whole: use its members ({node.id}[k]) "
                                 f"and len({node.id})")
        return node


class _Substitute(ast.NodeTransformer):
    """The loop variable ``name`` as the literal ``value`` (loads); an assignment to it is
    refused."""

    def __init__(self, name, value):
        self.name, self.value = name, value

    def visit_Name(self, node):
        if node.id == self.name:
            if not isinstance(node.ctx, ast.Load):
                raise _Refusal(node, f"the static_range variable '{self.name}' is assigned in "
                                     f"the loop")
            return ast.copy_location(ast.Constant(self.value), node)
        return node


def expand(fn, lengths: dict):
    """``fn`` rewritten for groups of the given lengths (group parameter name -> length).

    Raises:
        TileArgumentError: the source cannot be read or rewritten (closure variables, a group
            used other than by literal index or ``len``, a member's parameter name already
            used, parameter defaults), at the user's line: the statement that the rewrite
            refuses, else the kernel's definition.
    """
    where = f"kernel '{fn.__qualname__}'"
    code = fn.__code__
    # the kernel's definition: where each refusal that no one statement causes points
    at_def = {"filename": code.co_filename, "lineno": code.co_firstlineno}
    if code.co_freevars:
        raise TileArgumentError(
            f"{where}: takes a tuple of arrays for {', '.join(repr(g) for g in lengths)}, which "
            f"rewrites its source; it uses variables of an enclosing function "
            f"({', '.join(code.co_freevars)}), which a rewritten copy would not see: "
            f"define the kernel at module level", **at_def)
    try:
        lines, first = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or code.co_filename
    except (OSError, TypeError) as exc:
        raise TileArgumentError(f"{where}: takes a tuple of arrays, which rewrites its "
                                f"source, and its source cannot be read ({exc}): define the "
                                f"kernel in a file", **at_def) from None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise TileArgumentError(f"{where}: takes a tuple of arrays, which rewrites its source, "
                                f"and its source is not a function definition (a lambda?): "
                                f"define it with def", **at_def)
    fdef.decorator_list = []
    at_fdef = {"filename": filename, "lineno": fdef.lineno}
    used = {}
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name):
            used.setdefault(n.id, n.lineno)
    for a in fdef.args.args:
        used.setdefault(a.arg, a.lineno)
    new_args = []
    for a in fdef.args.args:
        if a.arg in lengths:
            for k in range(lengths[a.arg]):
                m = member_name(a.arg, k)
                if m in used:
                    raise TileArgumentError(
                        f"{where}: takes a tuple of arrays for {a.arg!r}, whose members become "
                        f"parameters {member_name(a.arg, 0)!r}, {member_name(a.arg, 1)!r}, ...; "
                        f"the name {m!r} (for {a.arg}[{k}]) is already used in the kernel: "
                        f"rename it", filename=filename, lineno=used[m])
                new_args.append(ast.copy_location(ast.arg(m, copy.deepcopy(a.annotation)), a))
        else:
            new_args.append(a)
    if fdef.args.defaults:
        raise TileArgumentError(f"{where}: takes a tuple of arrays for "
                                f"{', '.join(repr(g) for g in lengths)}, and a kernel with "
                                f"parameter defaults cannot (its parameters are rewritten): "
                                f"pass every argument and drop the defaults", **at_fdef)
    fdef.args.args = new_args
    try:
        fdef.body = [s for stmt in fdef.body
                     for s in (lambda r: r if isinstance(r, list) else [r])(
                         _Rewrite(lengths).visit(stmt))]
    except _Refusal as r:
        raise TileArgumentError(f"{where}: {r}", filename=filename,
                                lineno=getattr(r.node, "lineno", None)) from None
    ast.fix_missing_locations(tree)
    # the module's ``from __future__ import annotations``, if it has it (string annotations
    # stay strings, read by signature.parse_params as the original's are)
    flags = fn.__code__.co_flags & __future__.annotations.compiler_flag
    code = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    ns: dict = {}
    exec(code, fn.__globals__, ns)      # noqa: S102 - the user's own kernel source, rewritten
    new = ns[fdef.name]
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__numba_tile_groups__ = dict(lengths)   # for check_parameter_space's message
    return new


def check_parameter_space(kernel_name: str, fn, names, argtypes) -> None:
    """Refuses a specialization whose parameters (``names``, of Numba types ``argtypes``) need
    more bytes than CUDA gives a kernel's parameters (``compiler.PARAM_SPACE``), before it is
    compiled (libNVVM would fail with a bare ``ERROR_COMPILATION``), naming the groups that
    take the most (``fn`` is the rewritten function of :func:`expand`, or any kernel's).

    Raises:
        TileArgumentError: over the limit, at the user's launch line.
    """
    from .compiler import PARAM_SPACE, parameter_bytes
    sizes = parameter_bytes(argtypes)
    total = sum(sizes)
    if total <= PARAM_SPACE:
        return
    from .runtime.launch_checks import user_call_site
    lengths = getattr(fn, "__numba_tile_groups__", {})
    per = dict(zip(names, sizes))
    parts = []
    for g, n in sorted(lengths.items(), key=lambda gn: -sum(
            per.get(member_name(gn[0], k), 0) for k in range(gn[1]))):
        each = [per.get(member_name(g, k), 0) for k in range(n)]
        each_text = (f"{each[0]}" if min(each) == max(each) else f"{min(each)} to {max(each)}")
        parts.append(f"group argument '{g}' has {n} members, taking {sum(each)} bytes "
                     f"({each_text} per member: pointer, extents and strides)")
    what = "; ".join(parts) if parts else f"its {len(names)} parameters"
    advice = ("split the group over several launches (each under the limit), or stack its "
              "arrays into one array of one more axis and pass that" if parts else
              "pass fewer arguments, or stack arrays into one array of one more axis")
    site = user_call_site() or (None, None)
    raise TileArgumentError(
        f"kernel '{kernel_name}': the launch's parameters need {total} bytes, more than the "
        f"{PARAM_SPACE} bytes CUDA gives a kernel's parameters: {what}; {advice}",
        filename=site[0], lineno=site[1])
