"""nt.torch_op on CPU tensors: the op's kernels run in the interpreter, through PyTorch's
dispatcher, torch.compile(fullgraph=True) (aot_eager/eager backends: no compiler toolchain) and
torch.library.opcheck; the refusals at decoration and at call."""

import itertools
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import numba_tile as nt  # noqa: E402
from numba_tile.errors import PartitionShapeError, TileArgumentError  # noqa: E402
from numba_tile.runtime import defaults  # noqa: E402

_ids = itertools.count()


def op_name(tag: str) -> str:
    """A fresh op name: the dispatcher keeps every registration for the process."""
    return f"nt_unit::{tag}_{next(_ids)}"


@nt.jit
def add_kernel(x, y, z: nt.Partition["B"], B: nt.Constant):
    nt.store(z, nt.load_like(x, z) + nt.load_like(y, z))


@nt.jit
def axpby_kernel(x, y, z: nt.Partition[("BM", "BN")], alpha, beta, BM: nt.Constant,
                 BN: nt.Constant):
    nt.store(z, alpha * nt.load_like(x, z) + beta * nt.load_like(y, z))


@nt.jit
def add_into_kernel(x, z: nt.Partition["B"], alpha, B: nt.Constant):
    nt.store(z, nt.load(z) + alpha * nt.load_like(x, z))


def make_add():
    @nt.torch_op(op_name("add"), fake=lambda x, y: torch.empty_like(x))
    def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = torch.empty_like(x)
        add_kernel(x, y, nt.partition(z, 1024), B=1024)
        return z

    return add


def make_axpby():
    def fake(x, y, alpha, beta):
        return x.new_empty(x.shape)

    @nt.torch_op(op_name("axpby"), fake=fake)
    def axpby(x: torch.Tensor, y: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
        z = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        axpby_kernel(x, y, nt.partition(z, (16, 128)), alpha, beta, BM=16, BN=128)
        return z

    return axpby


def make_add_into(mutates=("z",)):
    @nt.torch_op(op_name("add_into"), mutates_args=mutates)
    def add_into(x: torch.Tensor, z: torch.Tensor, alpha: float) -> None:
        add_into_kernel(x, nt.partition(z, 1024), alpha, B=1024)

    return add_into


ADD = make_add()
AXPBY = make_axpby()
ADD_INTO = make_add_into()


def rand(rng, *shape):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


# -- values -----------------------------------------------------------------------------------

def test_ragged_1d_values_against_float64():
    rng = np.random.default_rng()
    x, y = rand(rng, 3000), rand(rng, 3000)
    z = ADD(x, y)
    assert z.shape == (3000,) and z.dtype == torch.float32 and z.device.type == "cpu"
    np.testing.assert_allclose(z.numpy(), x.numpy().astype(np.float64) + y.numpy(), rtol=1e-6)
    # the op is registered with the dispatcher under its name
    ns, name = ADD._qualname.split("::")
    z2 = getattr(getattr(torch.ops, ns), name)(x, y)
    assert torch.equal(z, z2)


def test_ragged_2d_strided_values_against_float64():
    rng = np.random.default_rng()
    base = rand(rng, 37, 600)
    x = base[:, ::2]                       # a strided view, 37 x 300: ragged in both axes
    y = rand(rng, 37, 300)
    z = AXPBY(x, y, 1.5, -0.25)
    want = 1.5 * x.numpy().astype(np.float64) - 0.25 * y.numpy().astype(np.float64)
    np.testing.assert_allclose(z.numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mutates", [("z",), "unknown"])
def test_mutating_op(mutates):
    op = ADD_INTO if mutates == ("z",) else make_add_into(mutates)
    rng = np.random.default_rng()
    x, z = rand(rng, 3000), rand(rng, 3000)
    z0 = z.numpy().astype(np.float64)
    assert op(x, z, 2.5) is None
    np.testing.assert_allclose(z.numpy(), z0 + 2.5 * x.numpy(), rtol=1e-6, atol=1e-6)


def test_cpu_tensors_run_in_the_interpreter_and_defaults_are_restored():
    seen = []

    @nt.torch_op(op_name("probe"), fake=lambda x: torch.empty_like(x))
    def probe(x: torch.Tensor) -> torch.Tensor:
        seen.append((defaults.current().interpret, defaults.current().stream))
        return x.clone()

    @nt.torch_op(op_name("probe_scalar"), fake=lambda n: torch.empty(n))
    def probe_scalar(n: int) -> torch.Tensor:
        seen.append((defaults.current().interpret, defaults.current().stream))
        return torch.zeros(n)

    before = (defaults.current().interpret, defaults.current().stream)
    probe(torch.ones(4))
    assert seen[-1] == (True, before[1])
    assert (defaults.current().interpret, defaults.current().stream) == before
    with nt.launch_defaults(interpret=False):
        probe_scalar(3)                     # no tensor argument: the caller's defaults
    assert seen[-1] == (False, before[1])


def test_launch_errors_pass_through_and_restore_defaults():
    @nt.torch_op(op_name("bad_tiles"), fake=lambda x: torch.empty_like(x))
    def bad_tiles(x: torch.Tensor) -> torch.Tensor:
        z = torch.empty_like(x)
        add_kernel(x, x, nt.partition(z, 512), B=1024)     # tile shape differs from B
        return z

    with pytest.raises(PartitionShapeError):
        bad_tiles(torch.ones(2048))
    assert defaults.current().interpret is None


# -- torch.compile, opcheck -------------------------------------------------------------------

def graph_ops(record):
    def backend(gm, example_inputs):
        record.extend(n.target for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward
    return backend


def test_compile_fullgraph_calls_the_op():
    rng = np.random.default_rng()
    x, y = rand(rng, 3000), rand(rng, 3000)
    targets = []
    f = torch.compile(lambda a, b: ADD(a, b) * 2.0 + 1.0, fullgraph=True,
                      backend=graph_ops(targets))
    np.testing.assert_allclose(f(x, y).numpy(),
                               (x.numpy().astype(np.float64) + y.numpy()) * 2 + 1, rtol=1e-6,
                               atol=1e-6)
    ns, name = ADD._qualname.split("::")
    assert getattr(getattr(torch.ops, ns), name).default in targets


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_compile_fullgraph_values(backend):
    rng = np.random.default_rng()
    def f(a, b, c):
        ab = ADD(a.reshape(-1), b.reshape(-1)).view(a.shape)     # 1-D op, viewed as 2-D
        return AXPBY(ab, c, 2.0, 0.5).sum(dim=1)

    f = torch.compile(f, fullgraph=True, backend=backend)
    for rows in (37, 70):                  # a second shape: recompiled (or dynamic), still right
        a, b, c = rand(rng, rows, 300), rand(rng, rows, 300), rand(rng, rows, 300)
        want = (2.0 * (a.numpy().astype(np.float64) + b.numpy()) + 0.5 * c.numpy()).sum(axis=1)
        np.testing.assert_allclose(f(a, b, c).numpy(), want, rtol=1e-4, atol=1e-4)


def test_compile_fullgraph_mutating_op():
    rng = np.random.default_rng()
    x, z = rand(rng, 3000), rand(rng, 3000)
    z0 = z.numpy().astype(np.float64)

    def f(a, out):
        ADD_INTO(a, out, -1.5)
        return out * 2.0

    got = torch.compile(f, fullgraph=True, backend="aot_eager")(x, z)
    np.testing.assert_allclose(z.numpy(), z0 - 1.5 * x.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got.numpy(), 2 * (z0 - 1.5 * x.numpy()), rtol=1e-6, atol=1e-6)


def test_opcheck():
    rng = np.random.default_rng()
    torch.library.opcheck(ADD, (rand(rng, 3000), rand(rng, 3000)))
    torch.library.opcheck(AXPBY, (rand(rng, 37, 300), rand(rng, 37, 300), 0.5, 2.0))
    torch.library.opcheck(ADD_INTO, (rand(rng, 3000), rand(rng, 3000), 3.0))


# -- refusals ---------------------------------------------------------------------------------

def test_missing_fake_is_refused_at_decoration():
    name = op_name("no_fake")
    with pytest.raises(TileArgumentError) as info:
        @nt.torch_op(name)
        def no_fake(x: torch.Tensor) -> torch.Tensor:
            return x.clone()
    msg = str(info.value)
    assert name in msg and "fake" in msg and "got None" in msg and "no_fake" in msg
    assert info.value.filename == __file__


def test_fake_that_cannot_take_the_arguments_is_refused():
    with pytest.raises(TileArgumentError, match=r"fake: expected a function that takes"):
        @nt.torch_op(op_name("arity"), fake=lambda x: torch.empty_like(x))
        def arity(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return x + y
    with pytest.raises(TileArgumentError, match=r"fake: expected a function .* got 3 \(int\)"):
        nt.torch_op(op_name("not_callable"), fake=3)


@pytest.mark.parametrize("name", ["add", "a::b::c", "my lib::add", "mylib::", 7])
def test_bad_name_is_refused(name):
    with pytest.raises(TileArgumentError, match=r"name: expected 'namespace::op_name'") as info:
        nt.torch_op(name)
    assert info.value.filename == __file__


def test_bad_mutates_args_are_refused():
    with pytest.raises(TileArgumentError, match=r"mutates_args: expected the names .* got 'z'"):
        nt.torch_op(op_name("m"), mutates_args="z")
    with pytest.raises(TileArgumentError, match=r"mutates_args: expected names of parameters "
                                                r"of .*w\(x: .*, got 'out'"):
        @nt.torch_op(op_name("m"), mutates_args=("out",))
        def w(x: torch.Tensor) -> None:
            pass


def test_bad_device_types_are_refused():
    with pytest.raises(TileArgumentError, match=r"device_types: expected None .* got 0 \(int\)"):
        nt.torch_op(op_name("d"), device_types=0)


def test_unannotated_function_is_refused():
    with pytest.raises(TileArgumentError, match=r"cannot infer the op's schema .*unannotated"):
        @nt.torch_op(op_name("u"), fake=lambda x: x)
        def unannotated(x):
            return x


def test_returned_launch_handle_is_refused():
    @nt.torch_op(op_name("handle"), fake=lambda x, y: torch.empty_like(x))
    def returns_handle(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        z = torch.empty_like(x)
        return add_kernel(x, y, nt.partition(z, 1024), B=1024)

    with pytest.raises(TileArgumentError, match=r"returned a numba_tile launch handle as its "
                                                r"return value; expected the output tensors"):
        returns_handle(torch.ones(8), torch.ones(8))


def test_missing_or_old_torch_is_refused(monkeypatch):
    monkeypatch.delattr(torch.library, "custom_op")
    with pytest.raises(TileArgumentError, match=r"needs PyTorch >= 2.4 .* got torch "):
        nt.torch_op("mylib::old")
    monkeypatch.setitem(sys.modules, "torch", None)     # `import torch` raises ImportError
    with pytest.raises(TileArgumentError, match=r"torch_op\('mylib::x'\): needs PyTorch >= 2.4 "
                                                r"\(torch.library.custom_op\), but torch cannot "
                                                r"be imported") as info:
        nt.torch_op("mylib::x")
    assert info.value.filename == __file__


def test_numba_tile_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import numba_tile as nt\n"
            "try:\n"
            "    nt.torch_op('mylib::x')\n"
            "except nt.errors.TileArgumentError as e:\n"
            "    print('refused:', e.message)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "refused: torch_op('mylib::x'): needs PyTorch" in out.stdout


# -- mutates_args is checked against the body's launches ----------------------------------------

def test_a_write_into_an_argument_not_in_mutates_args_is_refused_before_it_runs():
    @nt.torch_op(op_name("sneaky"))
    def sneaky(x: torch.Tensor, z: torch.Tensor, alpha: float) -> None:
        add_into_kernel(x, nt.partition(z, 1024), alpha, B=1024)   # z is not in mutates_args

    rng = np.random.default_rng()
    x, z = rand(rng, 3000), rand(rng, 3000)
    before = z.clone()
    with pytest.raises(TileArgumentError, match=r"add_into_kernel.*argument 'z'.*mutates_args"):
        sneaky(x, z, 2.5)
    assert torch.equal(z, before)                  # refused before the launch ran
    assert defaults.current().watch is None        # the watch ends with the body


def test_a_write_through_a_view_of_an_undeclared_argument_is_refused():
    @nt.torch_op(op_name("sneaky_view"), mutates_args=("out",))
    def sneaky_view(x: torch.Tensor, out: torch.Tensor, y: torch.Tensor) -> None:
        add_into_kernel(x, nt.partition(out, 1024), 1.0, B=1024)      # declared: fine
        add_into_kernel(x[:500], nt.partition(y.view(-1)[100:600], 512), 1.0, B=512)

    rng = np.random.default_rng()
    x, out, y = rand(rng, 3000), rand(rng, 3000), rand(rng, 3000)
    out0 = out.numpy().astype(np.float64)
    y0 = y.clone()
    with pytest.raises(TileArgumentError, match="argument 'y'"):
        sneaky_view(x, out, y)
    np.testing.assert_allclose(out.numpy(), out0 + x.numpy(), rtol=1e-6, atol=1e-6)
    assert torch.equal(y, y0)


def test_writes_into_outputs_and_declared_arguments_pass_and_reads_of_others_are_free():
    @nt.torch_op(op_name("honest"), mutates_args=("z",),)
    def honest(x: torch.Tensor, z: torch.Tensor) -> None:
        tmp = torch.empty_like(x)
        add_kernel(x, x, nt.partition(tmp, 1024), B=1024)           # reads x twice: fine
        add_into_kernel(tmp, nt.partition(z, 1024), 0.5, B=1024)

    rng = np.random.default_rng()
    x, z = rand(rng, 2500), rand(rng, 2500)
    z0 = z.numpy().astype(np.float64)
    honest(x, z)
    np.testing.assert_allclose(z.numpy(), z0 + x.numpy(), rtol=1e-6, atol=1e-6)


@nt.jit(unchecked=True)
def scatter_add_kernel(idx, vals, out: nt.Mutable, B: nt.Constant):
    i = nt.bid(0)
    nt.atomic_add(out, nt.load(idx, (i,), (B,), padding=-1), nt.load(vals, (i,), (B,)))


def test_an_unchecked_kernels_mutable_array_counts_as_a_write():
    @nt.torch_op(op_name("scatter"), mutates_args=("out",))
    def scatter(idx: torch.Tensor, vals: torch.Tensor, out: torch.Tensor,
                other: torch.Tensor) -> None:
        scatter_add_kernel(idx, vals, out, 16, grid=1, unchecked=True)          # declared
        scatter_add_kernel(idx, vals, other, B=16, grid=1, unchecked=True)      # not declared

    rng = np.random.default_rng()
    idx = torch.from_numpy(rng.integers(0, 40, 16).astype(np.int64))
    vals = rand(rng, 16)
    out, other = torch.zeros(40), torch.zeros(40)
    with pytest.raises(TileArgumentError, match="argument 'other'"):
        scatter(idx, vals, out, other)
    want = np.zeros(40)
    np.add.at(want, idx.numpy(), vals.numpy().astype(np.float64))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)
    assert not other.any()
