"""numba_tile's configuration fuzzer: ``python -m benchmarks.fuzz --help``.

Tests written for an example pin the configurations it was tuned for; the lowering's bugs
live in the others. The fuzzer samples kernels (``families/``) and their configurations
(tile extents 1 to 256 per axis, 1 to 16 warps, 1 to 5 stages, dtypes, masks and padding,
ragged, empty and offset views, persistent and grouped walks), runs each case in a process of
its own (``runner.py``) on the GPU or in the interpreter, checks it against NumPy in float64
(``case.py``), and classifies it as ok / refused / unclear / wrong / fault / crash
(``report.py`` writes the log and the summary). CONTRIBUTING.md says when to run it.
"""
