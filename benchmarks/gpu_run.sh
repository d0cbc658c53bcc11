#!/usr/bin/env bash
# One visit to the GPU machine: GPU tests, examples, benchmarks; logs under $OUT.
# Usage (from the repository root, on the GPU machine; wheels the machine lacks, if any, in .whl/):
#   bash benchmarks/gpu_run.sh [elementwise benchmark args...]
# Environment: SKIP_TESTS=1, SKIP_LAUNCH=1, SKIP_NORMS=1, SKIP_GEMM=1, SKIP_BENCH=1 leave parts out;
# LAUNCH_ARGS are passed to benchmarks/launch.py, NORMS_ARGS to benchmarks/norms.py; PROBE_ARGS
# runs elementwise.py a second time with them. Each benchmark draws its table as a PNG (needs
# matplotlib): into $OUT/plots/ when OUT is given, else docs/plots/ of this tree.
set -u
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
PLOTS=${OUT:+$OUT/plots}; PLOTS=${PLOTS:-docs/plots}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" "$PLOTS"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import numba_tile, numba, numpy; print('numba', numba.__version__, 'numpy', numpy.__version__)"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tee "$OUT/tests.log" | tail -25
  python3 examples/vecadd.py 2>&1 | tee "$OUT/examples.log"
  python3 examples/saxpy.py 2>&1 | tee -a "$OUT/examples.log"
  for ex in persistent histogram scatter_add softmax softmax_chunked layernorm rmsnorm gemm gemm_persistent; do
    python3 examples/$ex.py 2>&1 | tee -a "$OUT/examples.log"
  done
fi
if [ "${SKIP_LAUNCH:-0}" != 1 ]; then
  python3 benchmarks/launch.py --markdown --plot "$PLOTS/launch.png" ${LAUNCH_ARGS:-} 2>&1 \
    | tee "$OUT/launch.log"
fi
if [ "${SKIP_NORMS:-0}" != 1 ]; then
  python3 benchmarks/norms.py --markdown --plot "$PLOTS/norms.png" ${NORMS_ARGS:-} 2>&1 \
    | tee "$OUT/norms.log"
fi
if [ "${SKIP_GEMM:-0}" != 1 ]; then
  python3 benchmarks/gemm.py --markdown --out "$OUT/gemm.json" --plot "$PLOTS/gemm.png" 2>&1 \
    | tee "$OUT/gemm.log"
fi
if [ "${SKIP_BENCH:-0}" != 1 ]; then
  python3 benchmarks/elementwise.py --plot "$PLOTS/elementwise.png" "$@" 2>&1 | tee "$OUT/bench.log"
  if [ -n "${PROBE_ARGS:-}" ]; then
    python3 benchmarks/elementwise.py --no-plot $PROBE_ARGS 2>&1 | tee "$OUT/probe.log"
  fi
fi
