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

The source is read once, when the kernel is decorated (:func:`capture_source`), and every
rewrite starts from that text, never from the file as it is at the launch: a file edited
after the import changes nothing a kernel object runs. Before rewriting, the text is compiled
and its bytecode compared with the decorated function's (:func:`_same_code`); text that does
not compile to the function that was decorated (a file edited between the import and the
decoration) is refused. The parameters' roles are the decorated kernel's
(:func:`member_params`), not re-read from the text's annotations.
"""

from __future__ import annotations

import __future__
import ast
import copy
import dataclasses
import dis
import inspect
import textwrap
import types

from .constant_identity import identity
from .errors import TileArgumentError

__all__ = ["Source", "capture_source", "check_parameter_space", "is_group", "member_name",
           "member_params", "expand"]


@dataclasses.dataclass(frozen=True)
class Source:
    """A kernel function's source text, read when the kernel was decorated.

    Attributes:
        lines: the function's source lines (decorators included), or None when unreadable.
        first: the line number of ``lines[0]`` in ``filename``.
        filename: the file the text came from.
        error: why the source could not be read, or None.
    """

    lines: tuple | None
    first: int = 0
    filename: str | None = None
    error: str | None = None


def capture_source(fn) -> Source:
    """``fn``'s source as it is now (``inspect.getsourcelines``); never raises: a function
    whose source cannot be read gets a :class:`Source` saying why, refused only if a launch
    gives it a group."""
    try:
        lines, first = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except Exception as exc:  # noqa: BLE001 - OSError, TypeError, a tokenizer error...
        return Source(None, error=f"{type(exc).__name__}: {exc}")
    return Source(tuple(lines), first, filename)


def member_params(params, lengths: dict) -> tuple:
    """The rewritten kernel's parameters: each group parameter replaced by one parameter per
    member (:func:`member_name`), with the group's role and declared tile shape."""
    out = []
    for p in params:
        if p.name in lengths:
            out.extend(dataclasses.replace(p, name=member_name(p.name, k))
                       for k in range(lengths[p.name]))
        else:
            out.append(p)
    return tuple(out)


#: opcodes whose choice depends on the module around a function, not on its program:
#: CPython 3.11 calls a method of a name the module imports with PUSH_NULL + LOAD_ATTR, of
#: anything else with LOAD_METHOD (the same attribute lookup and call)
_SAME_OP = {"LOAD_METHOD": "LOAD_ATTR"}
_SKIPPED = frozenset({"CACHE", "EXTENDED_ARG", "NOP", "PUSH_NULL"})


def _program(code: types.CodeType) -> tuple:
    """A code object's program, independent of the module it was compiled in: its
    instructions (opcode and argument value; a jump's target as an instruction number, a
    constant by identity, so ``0.0`` is not ``-0.0``, a nested code object as its own
    program), its names and its argument counts."""
    instrs, index = [], {}
    for i in dis.get_instructions(code):
        index[i.offset] = len(instrs)       # a skipped one: the next kept instruction's
        if i.opname not in _SKIPPED:
            instrs.append(i)
    out = []
    for i in instrs:
        if i.opcode in dis.hasjrel or i.opcode in dis.hasjabs:
            arg = ("->", index.get(i.argval))
        elif isinstance(i.argval, types.CodeType):
            arg = _program(i.argval)
        elif i.opcode in dis.hasconst:
            arg = identity(i.argval)
        else:
            arg = i.argval
        out.append((_SAME_OP.get(i.opname, i.opname), arg))
    return (tuple(out), code.co_varnames, code.co_freevars, code.co_cellvars, code.co_argcount,
            code.co_posonlyargcount, code.co_kwonlyargcount)


def _same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """Whether two code objects run the same program (:func:`_program`)."""
    return _program(a) == _program(b)


def _function_code(code: types.CodeType, name: str):
    """The code object of function ``name`` among a module code object's constants."""
    for c in code.co_consts:
        if isinstance(c, types.CodeType) and c.co_name == name:
            return c
    return None


def is_group(value) -> bool:
    """Whether a launch value is a group (a tuple or list, not a scalar, not a partition)."""
    return type(value) in (tuple, list)


def member_name(param: str, k: int) -> str:
    """The rewritten kernel's parameter for member ``k`` of group ``param``."""
    return f"{param}__{k}"


class _Refusal(Exception):
    def __init__(self, node, message, whole=None):
        super().__init__(message)
        self.node = node
        self.whole = whole              # the group used whole, if that is the refusal


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
                                 f"and len({node.id}); to pass one array, pass the array, not "
                                 f"a tuple or list holding it", whole=node.id)
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


def expand(fn, lengths: dict, source: Source):
    """``fn`` rewritten for groups of the given lengths (group parameter name -> length).

    Args:
        fn: the decorated kernel function.
        lengths: group parameter name -> the group's length.
        source: ``fn``'s source, read when it was decorated (:func:`capture_source`).

    Returns:
        The rewritten function (no annotations: its parameters' roles are
        :func:`member_params` of the kernel's).

    Raises:
        TileArgumentError: the source could not be read, does not compile to ``fn``'s code,
            or cannot be rewritten (closure variables, a group used other than by literal
            index or ``len``, a member's parameter name already used, parameter defaults),
            at the user's line: the statement that the rewrite refuses, else the kernel's
            definition.
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
    if source.lines is None:
        raise TileArgumentError(f"{where}: takes a tuple of arrays, which rewrites its "
                                f"source, and its source could not be read when it was "
                                f"decorated ({source.error}): define the kernel in a file",
                                **at_def)
    filename, first = source.filename, source.first
    # the module's ``from __future__ import annotations``, if it has it
    flags = code.co_flags & __future__.annotations.compiler_flag
    try:
        tree = ast.parse(textwrap.dedent("".join(source.lines)))
    except SyntaxError as exc:
        raise TileArgumentError(f"{where}: takes a tuple of arrays, which rewrites its "
                                f"source, and its source does not parse ({exc})",
                                **at_def) from None
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, ast.FunctionDef):
        raise TileArgumentError(f"{where}: takes a tuple of arrays, which rewrites its source, "
                                f"and its source is not a function definition (a lambda?): "
                                f"define it with def", **at_def)
    fdef.decorator_list = []
    # the parameters' roles are the kernel's (member_params): annotations are not evaluated
    # again, and the text must be the decorated function's program
    for a in fdef.args.args:
        a.annotation = None
    fdef.returns = None
    original = _function_code(compile(tree, filename, "exec", flags=flags, dont_inherit=True),
                              fdef.name)
    if original is None or not _same_code(original, fn.__code__):
        raise TileArgumentError(
            f"{where}: takes a tuple of arrays, which rewrites its source, and the source "
            f"read when it was decorated ({filename}, line {first}) does not compile to the "
            f"function that was decorated (was the file edited before the kernel was "
            f"decorated?): define the kernel at module level and import its module again",
            filename=filename, lineno=first)
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
                new_args.append(ast.copy_location(ast.arg(m), a))
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
        err = TileArgumentError(f"{where}: {r}", filename=filename,
                                lineno=getattr(r.node, "lineno", None))
        err.group_used_whole = r.whole      # Kernel._grouped: a list of numbers for an array
        raise err from None
    ast.fix_missing_locations(tree)
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
    from .runtime.call_site import user_call_site
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
