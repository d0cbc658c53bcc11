"""examples/data_parallel.py: numba_tile's product on each rank's slice, PyTorch's
all-reduce between ranks, every rank's result checked exactly against NumPy. A world of one
everywhere PyTorch is installed; two ranks with torchrun on CPUs (gloo, the interpreter) or on
two GPUs (NCCL), skipped on a machine with one GPU."""

import subprocess
import sys

import pytest

from tests.unit.test_examples import ROOT, example_env

torch = pytest.importorskip("torch")
pytest.importorskip("torch.distributed")


def _run(args, timeout=600):
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=example_env(),
                          capture_output=True, text=True, timeout=timeout)


def test_a_world_of_one():
    proc = _run([str(ROOT / "examples" / "data_parallel.py")])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "data_parallel: world of 1" in proc.stdout
    assert proc.stdout.count("data_parallel: OK") == 1, proc.stdout


@pytest.mark.skipif(torch.cuda.device_count() == 1,
                    reason="two ranks need two GPUs (or none: CPU processes)")
def test_two_ranks_with_torchrun():
    proc = _run(["-m", "torch.distributed.run", "--nproc-per-node", "2",
                 str(ROOT / "examples" / "data_parallel.py")])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "data_parallel: world of 2" in proc.stdout
    for rank in (0, 1):
        assert f"data_parallel: rank {rank}: C = A @ B" in proc.stdout, proc.stdout
    assert proc.stdout.count("data_parallel: OK") == 2, proc.stdout
    assert "WRONG RESULT" not in proc.stdout


def test_shards_cover_the_inner_dimension_once():
    sys.path.insert(0, str(ROOT / "examples"))
    import data_parallel as dp
    for k in (1, 7, 96, 1536):
        for world in (1, 2, 3, 8):
            cuts = [dp.shard(k, r, world) for r in range(world)]
            assert cuts[0][0] == 0 and cuts[-1][1] == k
            assert all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))
