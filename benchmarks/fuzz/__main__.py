"""``python -m benchmarks.fuzz``: the configuration fuzzer's command line (``cli.py``)."""

import sys

from .cli import main

sys.exit(main())
