"""The benchmarks' command lines and their plots, without a GPU: every benchmark imports (none
imports PyTorch, CuPy, Triton or matplotlib at import), parses ``--help``, ``--plot`` and
``--no-plot``, and refuses to run without a GPU; ``benchmarks/_plot.py`` draws a PNG from a small
table when matplotlib is importable, and says it skipped the plot when it is not;
``benchmarks/launch.py`` runs end to end in numba_tile's interpreter with NumPy arrays standing in
for a GPU library's (the peers n/a), through its checks, tables and plot."""

import importlib
import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import numba_tile as nt

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ("elementwise", "gemm", "norms", "launch")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NAN = math.nan
try:
    importlib.import_module("matplotlib")      # only to know: _plot imports it when drawing
    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False


def load(name):
    """``benchmarks/<name>.py`` as a module (as tests/unit/test_gemm_benchmark.py does; listed
    in sys.modules while it runs, which its dataclasses need)."""
    spec = importlib.util.spec_from_file_location(f"{name}_benchmark_cli",
                                                  ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.fixture(scope="module")
def plot():
    return load("_plot")


@pytest.mark.parametrize("name", BENCHMARKS)
def test_imports_without_peers(name):
    module = load(name)
    for peer in ("torch", "cupy", "triton", "matplotlib"):
        assert peer not in module.__dict__


@pytest.mark.parametrize("name", BENCHMARKS)
def test_help_parses(name, capsys):
    with pytest.raises(SystemExit) as exc:
        load(name).main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage:") and "--plot PATH" in out and "--no-plot" in out


@pytest.mark.parametrize("name", BENCHMARKS)
def test_plot_options(name):
    module = load(name)
    assert module.parse_args([]).plot == ROOT / "docs" / "plots" / f"{name}.png"
    assert module.parse_args(["--plot", "x/y.png"]).plot == Path("x/y.png")
    assert module.parse_args(["--no-plot"]).plot is None
    assert module.parse_args(["--plot", "x.png", "--no-plot"]).plot is None     # last wins


def test_script_help_runs_as_a_script():
    """``python benchmarks/launch.py --help`` (its own folder first on sys.path)."""
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "launch.py"), "--help"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "--graph-kernels" in out.stdout


def test_elementwise_covers_2_20_to_2_28_with_the_add_at_2_22():
    args = load("elementwise").parse_args([])
    assert args.sizes[0] == 20 and args.sizes[-1] == 28 and 22 in args.sizes
    assert "add" in args.ops and "fp32" in args.dtypes


@pytest.mark.parametrize("argv", [["--arrays", "2"], ["--arrays", "x"], ["--launches", "0"],
                                  ["--replays", "-1"]])
def test_launch_refuses_bad_options(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        load("launch").parse_args(argv)
    assert exc.value.code == 2
    assert "expected" in capsys.readouterr().err


def test_launch_options():
    args = load("launch").parse_args(["--arrays", "8,1", "--launches", "100", "--markdown"])
    assert args.arrays == [1, 8] and args.launches == 100 and args.markdown
    assert not args.skip_graph and args.graph_kernels == 100


@pytest.mark.parametrize("name", BENCHMARKS)
def test_gpu_run_needs_a_gpu(name, monkeypatch):
    if nt.gpu_available():
        pytest.skip("a GPU is present")
    module = load(name)
    with pytest.raises(SystemExit) as exc:
        module.main(["--no-plot"])
    assert "needs a CUDA GPU" in str(exc.value)


# ------------------------------------------------------------------------------ _plot

def fake_panels(plot):
    cats = [("add fp32", "2^20"), ("add fp32", "2^22"), ("add fp16", "2^20"),
            ("add fp16", "2^22")]
    return [plot.Panel("ratios", cats, {"triton": [0.5, 1.0, 2.0, math.nan],
                                        "cupy": [1.5, None, 0.9, 1.1]},
                       "numba_tile / peer", ratio=True),
            plot.Panel("TB/s", cats, {"numba_tile": [0.2, 1.0, 0.1, 0.5],
                                      "triton": [0.4, 1.0, 0.05, math.nan]},
                       "TB/s", log=True, style="lines"),
            plot.Panel("us", [("", "a"), ("", "b")], {"us": [5.0, 40.0]}, "us",
                       ratio=False)]


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="matplotlib is not installed")
def test_plot_draws_a_png(plot, tmp_path, capsys):
    path = tmp_path / "sub" / "fake.png"
    assert plot.plot(path, "fake", fake_panels(plot), note="a note") == path
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert f"plot written to {path}" in capsys.readouterr().out


@pytest.mark.skipif(not HAVE_MATPLOTLIB, reason="matplotlib is not installed")
def test_plot_of_nothing_but_missing_values(plot, tmp_path):
    cats = [("g", "a"), ("g", "b")]
    panels = [plot.Panel("r", cats, {"p": [math.nan, math.nan]}, "x", ratio=True),
              plot.Panel("v", cats, {"p": [None, math.nan]}, "x", log=True)]
    path = tmp_path / "empty.png"
    assert plot.plot(path, "nothing measured", panels) == path
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_plot_without_matplotlib(plot, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib raises
    path = tmp_path / "none.png"
    assert plot.plot(path, "fake", fake_panels(plot)) is None
    assert not path.exists()
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("plot skipped: matplotlib")


def test_plot_none_draws_nothing(plot, capsys):
    assert plot.plot(None, "fake", fake_panels(plot)) is None
    assert capsys.readouterr().out == ""


def test_panel_refuses_a_series_of_the_wrong_length(plot):
    with pytest.raises(ValueError, match="has 1 values for 2 categories"):
        plot.Panel("t", [("", "a"), ("", "b")], {"s": [1.0]}, "y")
    with pytest.raises(ValueError, match="better"):
        plot.Panel("t", [("", "a")], {"s": [1.0]}, "y", ratio=True, better="faster")


def test_ratio_ticks(plot):
    assert 1.0 in plot._ratio_ticks(0.8, 1.25)
    ticks = plot._ratio_ticks(1 / 300, 10.0)
    assert 1.0 in ticks and len(ticks) <= 9


@pytest.mark.parametrize("name", ["elementwise", "gemm", "norms"])
def test_benchmark_panels_from_fake_rows(name, plot, tmp_path):
    module = load(name)
    if name == "elementwise":
        rows = [("add", "fp32", 22, {"numba_tile": 1.0, "triton": 2.0, "cupy": 1.0}),
                ("add", "bf16", 22, {"numba_tile": float("nan"), "triton": 2.0})]
        expect = {"triton": [0.5, NAN], "cupy": [1.0, NAN], "numba-cuda": [NAN, NAN]}
    elif name == "gemm":
        rows = [("fp16", (16, 4096, 4096), {"numba_tile": {"status": "ok", "tflops": 10.0},
                                            "cublas": {"status": "ok", "tflops": 20.0},
                                            "triton": {"status": "WRONG"}}),
                ("bf16", (4096, 4096, 4096), {"numba_tile": {"status": "error"},
                                              "cublas": {"status": "ok", "tflops": 700.0}})]
        expect = {"cuBLAS": [0.5, NAN], "Triton": [NAN, NAN]}
    else:
        rows = [("softmax", "fp32", 1024, {"numba_tile": 1000.0, "triton": 2000.0,
                                           "torch": "error"}),
                ("rmsnorm", "bf16", 256, {"numba_tile": "WRONG", "triton": 1.0, "torch": 1.0})]
        expect = {"Triton": [0.5, NAN], "PyTorch": [NAN, NAN]}
    ratio, absolute = module.plot_panels(rows)
    assert ratio.ratio and not absolute.ratio
    assert len(ratio.categories) == len(absolute.categories) == 2
    assert set(ratio.series) == set(expect)
    for peer, values in expect.items():
        assert np.array_equal(np.array(ratio.series[peer], float), np.array(values), equal_nan=True)
    if HAVE_MATPLOTLIB:
        assert plot.plot(tmp_path / f"{name}.png", name, [ratio, absolute]) is not None


# ------------------------------------------------------------------------------ launch.py on the CPU

def test_launch_runs_in_the_interpreter(tmp_path, monkeypatch, capsys):
    """The whole of benchmarks/launch.py but the GPU: NumPy arrays stand in for Numba's
    (numba_tile launches run in its interpreter), the peers and the other libraries are n/a."""
    launch = load("launch")

    def numpy_sources():
        numpy_arrays = launch.Source("Numba", None, lambda a: np.array(a, copy=True),
                                     lambda a: np.array(a, copy=True),
                                     lambda a, host: a.__setitem__(slice(None), host),
                                     lambda: None)
        return {"CuPy": "ImportError: no cupy here", "PyTorch": "RuntimeError: no GPU here",
                "Numba": numpy_arrays}

    def no_numba_cuda():
        raise ImportError("numba-cuda cannot launch here")

    monkeypatch.setattr(launch, "load_sources", numpy_sources)
    monkeypatch.setattr(launch, "numba_kernels", no_numba_cuda)
    monkeypatch.setattr(launch.nt, "gpu_available", lambda: True)
    monkeypatch.delattr(launch.nt, "Graph", raising=False)   # its capture needs the driver
    path = tmp_path / "launch.png"
    with nt.launch_defaults(interpret=True), pytest.raises(SystemExit) as exc:
        launch.main(["--launches", "2", "--windows", "2", "--warmup", "1", "--graph-kernels",
                     "3", "--replays", "1", "--graph-windows", "1", "--markdown",
                     "--plot", str(path)])
    out = capsys.readouterr().out
    assert exc.value.code == 0, out
    rows = {tuple(c.strip() for c in line.split("|")[1:4]): line for line in out.splitlines()
            if line.startswith("| ") and line.split("|")[1].strip().isdigit()}
    for k in (1, 3, 8):
        assert "| n/a |" in rows[(str(k), "numba_tile", "CuPy")]
        assert "| n/a |" in rows[(str(k), "CuPy RawKernel", "CuPy")]
        for impl in ("numba_tile", "numba_tile, partition reused"):
            cells = [c.strip() for c in rows[(str(k), impl, "Numba")].split("|")]
            assert float(cells[4]) > 0 and cells[6] == "-"      # timed; no peer to divide by
    assert "| numba_tile, no graph | Numba |" in out
    assert "torch.cuda.graph of numba_tile launches | - | n/a |" in out
    assert "| numba_tile Graph | - | n/a |" in out and "predates the graph API" in out
    if HAVE_MATPLOTLIB:
        assert path.read_bytes()[:8] == PNG_MAGIC
    else:
        assert "plot skipped" in out and not path.exists()


def test_launch_check_catches_a_wrong_result(monkeypatch, capsys):
    launch = load("launch")
    src = launch.Source("Numba", None, lambda a: np.array(a, copy=True), lambda a: a + 1.0,
                        lambda a, host: None, lambda: None)
    cell = launch.Cell(3, launch.NT, "Numba")
    with nt.launch_defaults(interpret=True):
        launch.prepare_cell(cell, np.random.default_rng(0), {"Numba": src}, {}, lambda: None)
    assert cell.status == "WRONG" and cell.launch is None
    assert "WRONG" in capsys.readouterr().out


# ------------------------------------------------------------------------------ GPU-only probes

@pytest.mark.parametrize("name", ["sweeps", "launch_breakdown"])
def test_gpu_probes_import_parse_and_refuse_without_a_gpu(name, capsys):
    module = load(name)
    for peer in ("torch", "cupy", "triton", "matplotlib"):
        assert peer not in module.__dict__
    with pytest.raises(SystemExit) as exc:
        module.main(["--help"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("usage:")
    if nt.gpu_available():
        return
    assert module.main([]) == 1
    assert "needs a GPU" in capsys.readouterr().err
