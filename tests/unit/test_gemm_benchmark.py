"""The CPU-side parts of ``benchmarks/gemm.py`` (shapes, configurations, options, ratios, the
table, the JSON file, its ``--interpret`` check) and of the GEMM examples (argument checks,
configurations, the interpreter path). The GPU path is exercised on a GPU machine only
(``tests/gpu/test_gemm_examples.py`` runs the examples there)."""

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import numba_tile as nt
from examples import gemm, gemm_persistent
from numba_tile.dtypes import BFLOAT16_NP

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    """benchmarks/gemm.py as a module (it imports neither PyTorch nor Triton at import)."""
    spec = importlib.util.spec_from_file_location("gemm_benchmark", ROOT / "benchmarks" / "gemm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "torch" not in module.__dict__ and "triton" not in module.__dict__
    return module


def test_default_shapes(bench):
    shapes = bench.default_shapes()
    assert shapes[:4] == [(1024,) * 3, (2048,) * 3, (4096,) * 3, (8192,) * 3]
    layer = shapes[4:]
    assert len(layer) == 9 and len(set(layer)) == 9
    assert {m for m, _, _ in layer} == {16, 128, 4096}
    assert {(k, n) for _, n, k in layer} == {(4096, 4096), (4096, 14336), (14336, 4096)}


@pytest.mark.parametrize("argv, shapes", [
    ([], None),
    (["--quick"], [(4096, 4096, 4096), (16, 4096, 4096), (4096, 14336, 4096)]),
    (["--sizes", "1024,16x14336x4096"], [(1024, 1024, 1024), (16, 14336, 4096)]),
    (["--quick", "--sizes", "512"], [(512, 512, 512)]),
    (["--interpret"], [(300, 264, 72), (200, 136, 100), (16, 72, 48)]),
])
def test_shapes_from_options(bench, argv, shapes):
    args = bench.parse_args(argv)
    assert args.shapes == (shapes if shapes is not None else bench.default_shapes())
    assert args.dtypes == ["fp16", "bf16"] and args.configs is None and args.out is None


def test_options(bench):
    args = bench.parse_args(["--dtypes", "bf16", "--configs", "128x128x32x4,64x64x64x4x3",
                             "--out", "x.json", "--reps", "7"])
    assert args.dtypes == ["bf16"] and args.out == "x.json" and args.reps == 7
    assert args.configs == [gemm.GemmConfig(128, 128, 32, 4, 1),
                            gemm.GemmConfig(64, 64, 64, 4, 3)]


@pytest.mark.parametrize("argv", [["--dtypes", "fp32"], ["--sizes", "12x34"], ["--sizes", "0"],
                                  ["--configs", "128x128x32"], ["--configs", "axbxcxd"]])
def test_bad_options_are_refused(bench, argv, capsys):
    with pytest.raises(SystemExit) as exc:
        bench.parse_args(argv)
    assert exc.value.code == 2
    assert "expected" in capsys.readouterr().err


def test_sweep_configs(bench):
    large, medium, small = bench.sweep_configs(4096), bench.sweep_configs(128), \
        bench.sweep_configs(16)
    assert [(c.bm, c.bn, c.bk, c.num_warps, c.num_stages) for c in large] == \
        [tuple(c) for c in bench.LARGE_M_CONFIGS]
    assert all(c.num_stages > 1 for c in large)
    # up to 2048 rows the 64-row tiles join (more blocks than 132 SMs at 1024^3)
    assert {c.bm for c in bench.sweep_configs(1024)} == {64, 128}
    assert (64, 64, 64, 4) in [(c.bm, c.bn, c.bk, c.num_warps) for c in medium]
    assert {c.bm for c in small} == {16, 64}
    assert {c.bm for c in bench.sweep_configs(40)} == {64}       # next power of two of 40
    for cfgs in (large, medium, small):
        assert len(cfgs) == len(set(cfgs)) and all(c.num_stages for c in cfgs)
    assert bench.configs_for(16, [gemm.GemmConfig(32, 32, 32, 2)]) == \
        [gemm.GemmConfig(32, 32, 32, 2)]


def test_tflops_and_ratios(bench):
    assert bench.tflops(4096, 4096, 4096, 1.0) == pytest.approx(2 * 4096**3 / 1e9)
    res = {"numba_tile": {"status": "ok", "tflops": 300.0, "config": "128x128x32 w4",
                          "rel_err": 1e-4,
                          "sweep": [{"tflops": 300.0, "mma": "wgmma"},
                                    {"tflops": 250.0, "mma": "mma.sync"},
                                    {"tflops": 200.0, "mma": "mma.sync"},
                                    {"status": "error", "mma": "mma.sync"}]},
           "cublas": {"status": "ok", "tflops": 600.0}, "triton": {"status": "WRONG"}}
    assert bench.ratio(res, "cublas") == 0.5
    assert math.isnan(bench.ratio(res, "triton"))
    cells = bench.row_cells("fp16", (16, 4096, 4096), res)
    # the mma.sync column: the best of the sweep's configurations that lowered to mma.sync
    assert cells[4:11] == ["300.0", "128x128x32 w4", "250.0", "600.0", "WRONG", "0.500", "-"]
    rows = [("fp16", (1, 1, 1), res), ("bf16", (1, 1, 1), dict(res, triton={"status": "ok",
                                                                              "tflops": 150.0}))]
    summ = bench.summary(rows)
    assert [s[0] for s in summ] == ["fp16", "bf16", "all"]
    assert summ[2][1] == [0.5, 0.5] and summ[2][2] == [2.0]


def test_table_and_json(bench, tmp_path, capsys):
    res = {"numba_tile": {"status": "ok", "tflops": 1.5, "ms": float("nan"), "config": "c",
                          "sweep": [{"status": "error", "error": "E"}]},
           "cublas": {"status": "error"}}
    bench.print_table([("fp16", (2, 3, 4), res)], markdown=True)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| dtype | M | N | K | numba_tile TFLOP/s")
    assert out[2].startswith("| fp16 | 2 | 3 | 4 | 1.5 | c | - | error | n/a |")
    path = tmp_path / "out.json"
    bench.write_json(path, {"rows": bench.rows_json([("fp16", (2, 3, 4), res)])})
    data = json.loads(path.read_text())
    assert data["rows"][0]["M"] == 2 and data["rows"][0]["numba_tile"]["ms"] is None


def test_gpu_run_needs_a_gpu_or_says_what_is_missing(bench, monkeypatch):
    if nt.gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(SystemExit) as exc:
        bench.main([])
    assert "needs a CUDA GPU" in str(exc.value)
    monkeypatch.setitem(sys.modules, "torch", None)      # import torch raises ImportError
    with pytest.raises(SystemExit) as exc:
        bench.import_torch()
    assert "needs PyTorch" in str(exc.value) and "--interpret" in str(exc.value)


def test_interpret_run(bench, tmp_path, capsys):
    path = tmp_path / "i.json"
    with pytest.raises(SystemExit) as exc:
        bench.main(["--interpret", "--sizes", "40x72x48", "--out", str(path)])
    out = capsys.readouterr().out
    assert exc.value.code == 0, out
    rows = json.loads(path.read_text())["rows"]
    assert {r["dtype"] for r in rows} == {"fp16", "bf16"}
    assert len(rows) == 2 * len(bench.sweep_configs(40))
    assert all(r["result"] == "OK" and r["max_abs_err"] == 0 for r in rows), out


def test_interpret_run_fails_on_a_wrong_result(bench, monkeypatch, capsys):
    matmul = bench.nt_gemm.matmul

    def off_by_one(a, b, c, **kw):
        h = matmul(a, b, c, **kw)
        c[-1, -1] += 1
        return h

    monkeypatch.setattr(bench.nt_gemm, "matmul", off_by_one)
    with pytest.raises(SystemExit) as exc:
        bench.main(["--interpret", "--dtypes", "fp16", "--sizes", "16x16x16",
                    "--configs", "16x16x16x4"])
    assert exc.value.code == 1
    assert "WRONG" in capsys.readouterr().out


# ------------------------------------------------------------------------------ the examples

F16 = np.float16


@pytest.mark.parametrize("call, fragment", [
    (lambda: gemm.matmul(np.zeros((4, 8)), np.zeros((8, 4)), np.zeros((4, 4)), interpret=True),
     "matmul: a: expected float16 or bfloat16, got float64"),
    (lambda: gemm.matmul(np.zeros(8, F16), np.zeros((8, 4), F16), np.zeros((4, 4), F16),
                         interpret=True),
     "matmul: a: expected a 2-D array, got shape (8,)"),
    (lambda: gemm.matmul(np.zeros((4, 8), F16), np.zeros((6, 4), F16), np.zeros((4, 4), F16),
                         interpret=True),
     "matmul: b: expected (8, N) float16 (a's columns and dtype), got (6, 4) float16"),
    (lambda: gemm.matmul(np.zeros((4, 8), F16), np.zeros((8, 4), F16),
                         np.zeros((4, 4), np.float32), interpret=True),
     "matmul: c: expected (4, 4) float16 (a's rows, b's columns, their dtype), got (4, 4) "
     "float32"),
    (lambda: gemm_persistent.matmul_persistent(np.zeros((4, 8), F16), np.zeros((8, 5), F16),
                                               np.zeros((4, 4), F16), 2, interpret=True),
     "matmul_persistent: c: expected (4, 5) float16"),
])
def test_example_arguments_are_refused_before_launch(call, fragment):
    with pytest.raises(ValueError) as err:
        call()
    assert fragment in str(err.value)


@pytest.mark.parametrize("m, bm", [(1, 16), (16, 16), (17, 32), (64, 64), (65, 64), (255, 64),
                                   (256, 128), (8192, 128)])
def test_default_config(m, bm):
    cfg = gemm.default_config(m, 4096, 4096)
    assert cfg.bm == bm and cfg.bm >= 16 and cfg.bn >= 64


def test_config_text_and_options():
    cfg = gemm.GemmConfig(128, 128, 32, 4, 3)
    assert str(cfg) == "128x128x32 w4 s3"
    assert cfg.jit_options() == {"num_warps": 4, "num_stages": 3}
    assert gemm.as_config((64, 64, 64, 4), 1, 1, 1) == gemm.GemmConfig(64, 64, 64, 4, 1)
    assert gemm.kernel_for(cfg) is gemm.kernel_for(gemm.GemmConfig(128, 128, 32, 4, 3))


@pytest.mark.parametrize("dt", [np.float16, BFLOAT16_NP], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("blocks", [1, 5, 64])
def test_persistent_example_in_the_interpreter(dt, blocks):
    a, b = gemm.integer_operands(np.random.default_rng(), 150, 72, 40, dt)
    c = np.full((150, 72), np.nan, dt)
    gemm_persistent.matmul_persistent(a, b, c, blocks, config=(32, 32, 16, 4, 2),
                                      interpret=True).sync()
    np.testing.assert_array_equal(c.astype(np.float64), gemm.rounded_product(a, b, dt))
