"""numba_tile's benchmarks (scripts run on a GPU machine) and its configuration fuzzer
(``python -m benchmarks.fuzz``)."""
