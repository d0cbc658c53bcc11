"""The configuration fuzzer's own machinery (``benchmarks/fuzz``): each outcome is classified
as it should be, in a process of its own (a refused kernel is ``refused``, a refusal naming
nothing is ``unclear``, a deliberately wrong reference is ``wrong``, an internal exception a
``crash``, a process that aborts or hangs a ``fault`` that ends only its own process); the
comparison's tolerances; the views and their guards; the sampler's determinism and balance;
the replay of a logged case; the command line."""

import json
import os

import numpy as np
import pytest

from benchmarks.fuzz import cli
from benchmarks.fuzz.arrays import Arrays, guard_intact
from benchmarks.fuzz.case import Env, execute
from benchmarks.fuzz.families import FAMILIES, public
from benchmarks.fuzz.runner import Runner


def _run_all(cases, timeout=120.0, jobs=2):
    got = {}
    runner = Runner("cpu", jobs, timeout)
    try:
        runner.run(cases, lambda case, result: got.__setitem__(case["id"], result))
    finally:
        runner.close()
    return got


def test_each_outcome_in_a_process_of_its_own():
    names = ["_ok", "_wrong", "_refused", "_unclear", "_crash", "_abort"]
    cases = [cli.draw(n, 7, i) for i, n in enumerate(names)]
    got = _run_all(cases)
    outcome = {case["family"]: got[case["id"]] for case in cases}
    assert outcome["_ok"].outcome == "ok"
    assert outcome["_wrong"].outcome == "wrong"
    assert "want=" in outcome["_wrong"].message and outcome["_wrong"].detail["failures"]
    assert outcome["_refused"].outcome == "refused"
    assert "scale_rows" in outcome["_refused"].message
    assert outcome["_unclear"].outcome == "unclear"
    assert outcome["_crash"].outcome == "crash" and "KeyError" in outcome["_crash"].message
    # the abort killed only its own process: the other cases ran to their results
    assert outcome["_abort"].outcome == "fault"
    assert "signal 6" in outcome["_abort"].message


def test_a_hung_case_is_killed_at_its_timeout():
    case = cli.draw("_hang", 1, 0)
    got = _run_all([case, cli.draw("_ok", 1, 1)], timeout=3.0)
    assert got[case["id"]].outcome == "fault"
    assert "timeout" in got[case["id"]].message
    assert got[cli.draw("_ok", 1, 1)["id"]].outcome == "ok"


FAKE_SANITIZER = """#!/bin/sh
# compute-sanitizer's command line:
#   --tool TOOL --report-api-errors no --error-exitcode N PROGRAM ARGS...
code=$6
shift 6
"$@" || exit $?
if [ -n "$FAKE_SANITIZER_ERROR" ]; then
    echo "========= Invalid __shared__ write of size 16 bytes"
    echo "=========     at 0x1a0 in gemm"
    exit $code
fi
"""


@pytest.mark.parametrize("report", [False, True])
def test_cases_under_the_sanitizer(tmp_path, monkeypatch, report):
    """Under ``--sanitize`` each case is a fresh ``python -m benchmarks.fuzz.worker`` under
    compute-sanitizer (a stand-in here): its error exit code is a fault with its report."""
    fake = tmp_path / "compute-sanitizer"
    fake.write_text(FAKE_SANITIZER)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    if report:
        monkeypatch.setenv("FAKE_SANITIZER_ERROR", "1")
    case = cli.draw("_ok", 2, 0)
    got = {}
    runner = Runner("cpu", 1, 300.0, sanitize="memcheck")
    try:
        runner.run([case], lambda c, r: got.__setitem__(c["id"], r))
    finally:
        runner.close()
    result = got[case["id"]]
    if report:
        assert result.outcome == "fault"
        assert "memcheck reported errors (the case itself: ok)" in result.message
        assert "Invalid __shared__ write" in result.message
    else:
        assert result.outcome == "ok", result.message


def test_a_kernel_numba_tile_refuses_is_refused_naming_it():
    # products need M, N, K of at least 16: an (8, 16, 16) tile is a TileTypingError
    case = cli.draw("mma_grid", 5, 0)
    case["config"].update(tile=[8, 16, 16], shape=[20, 20, 20], dtype="float16",
                          acc="float32", out="float32", precision=None, num_warps=4,
                          num_stages=1, env={}, views=["plain", "plain"], out_view="plain",
                          ptx80=False)
    result = execute(case, "cpu")
    assert result.outcome == "refused", result.message
    assert "'mma_grid'" in result.message and "mma()" in result.message


def test_the_pipelined_gemm_of_small_tiles_runs_in_the_interpreter():
    """The configuration of the pipelined-load fault (16 x 16 float16 tiles, 4 warps, 3
    stages: fewer 16-byte chunks than threads) is a case of the fuzzer's space."""
    case = cli.draw("mma_grid", 5, 1)
    case["config"].update(tile=[16, 16, 16], shape=[40, 48, 64], dtype="float16",
                          acc="float32", out="float16", precision=None, num_warps=4,
                          num_stages=3, env={}, views=["plain", "plain"], out_view="plain",
                          ta=False, tb=False, pad=None, align=8, group=None, ptx80=False)
    result = execute(case, "cpu")
    assert result.outcome == "ok", result.message
    assert "cp.async" in result.detail["ptx"]


def _env():
    return Env({"seed": 3}, "cpu")


def test_check_tolerances_nan_and_integers():
    env = _env()
    want = np.array([1.0, 2.0, np.nan, np.inf, 1000.0])
    got = np.array([1.0, 2.0, np.nan, np.inf, 1000.2], np.float16)      # 1000.2 -> 1000
    assert env.check("f16 rounding", got, want)
    assert not env.check("off by one", np.array([1, 2, 4], np.int32), np.array([1, 2, 3]))
    assert env.failures[-1]["index"] == (2,) and env.failures[-1]["max_error"] == 1.0
    assert not env.check("nan vs number", np.array([np.nan], np.float32), np.array([1.0]))
    assert env.check("scaled", np.array([1e-3], np.float32), np.array([0.0]),
                     scale=np.array([10.0]), srtol=1e-3)
    assert not env.check("shape", np.zeros(3, np.float32), np.zeros(4))


@pytest.mark.parametrize("kind", ["plain", "framed", "flip", "strided", "transposed",
                                  "broadcast"])
def test_views_hold_their_values_and_guard_their_base(kind):
    rng = np.random.default_rng(0)
    values = rng.standard_normal((5, 7)).astype(np.float32)
    view = Arrays(gpu=False).view(values, kind, rng)
    expect = np.broadcast_to(values[:1], values.shape) if kind == "broadcast" else values
    np.testing.assert_array_equal(view.host, expect)
    np.testing.assert_array_equal(np.asarray(view.dev), expect)
    if kind in ("framed", "flip", "strided"):
        base = view.base_host.copy()
        assert guard_intact(view, base)[0]
        outside = np.ones(base.shape, bool)
        outside[view.key] = False
        base[tuple(np.argwhere(outside)[0])] = 1.0          # a write past the view
        ok, message = guard_intact(view, base)
        assert not ok and "outside the view" in message


def test_an_output_written_past_its_view_is_wrong():
    env = _env()
    out = env.output((4, 4), "float32", "framed")
    out.dev[...] = 2.0
    outside = np.ones(out.base_dev.shape, bool)
    outside[out.key] = False
    out.base_dev[tuple(np.argwhere(outside)[0])] = 0.0
    assert not env.check_view("z", out, np.full((4, 4), 2.0))
    assert env.failures[0]["check"] == "z: guard"


def test_cases_are_drawn_again_from_their_ids_and_families_take_turns():
    fams = public()
    a = [cli.make_case(42, i, fams) for i in range(2 * len(fams))]
    b = [cli.make_case(42, i, fams) for i in range(2 * len(fams))]
    assert a == b
    assert {c["family"] for c in a[:len(fams)]} == set(fams)
    assert {c["family"] for c in a[len(fams):]} == set(fams)
    assert cli.parse_id(a[5]["id"]) == a[5]
    assert [cli.make_case(43, i, fams) for i in range(4)] != a[:4]
    for c in a:
        json.dumps(c)        # configurations are JSON values (the log and --replay)


def test_replay_runs_the_logged_case(tmp_path, capsys):
    assert cli.main(["--mode", "cpu", "-n", "2", "--jobs", "1", "--seed", "9", "--families",
                     "_ok,_wrong", "--out", str(tmp_path), "--quiet"]) == 1
    lines = (tmp_path / "cases.jsonl").read_text().splitlines()
    wrong = next(i for i, line in enumerate(lines, 1) if '"_wrong"' in line
                 and '"family"' in line)
    summary = (tmp_path / "summary.md").read_text()
    assert f"--replay {tmp_path / 'cases.jsonl'}:{wrong}" in summary
    capsys.readouterr()
    assert cli.main(["--mode", "cpu", "--replay", f"{tmp_path / 'cases.jsonl'}:{wrong}"]) == 1
    out = capsys.readouterr().out
    assert "outcome wrong" in out and json.loads(lines[wrong - 1])["id"] in out


def test_command_line_options(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.parse_args(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for opt in ("--mode", "--seed", "--jobs", "--families", "--sanitize", "--out", "--case",
                "--replay", "--time-budget"):
        assert opt in text
    with pytest.raises(SystemExit):
        cli.parse_args(["--mode", "cpu", "--sanitize", "memcheck"])
    assert cli.main(["--list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in public()) and "_abort" not in listed
    assert cli.main(["--mode", "cpu", "--families", "nope"]) == 2
    assert set(FAMILIES) > set(public())
