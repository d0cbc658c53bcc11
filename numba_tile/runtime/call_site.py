"""The user's line that led to the current call: where a launch-time error points.

:func:`user_call_site` is the kernel statement the interpreter is running (it sets
:data:`INTERPRETED` while a block runs), else the innermost stack frame outside the
numba_tile package. Every error raised at launch names that line; this module sits below
every other runtime module so that any of them can ask.
"""

from __future__ import annotations

import contextvars
import os
import sys

__all__ = ["INTERPRETED", "user_call_site"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


#: the kernel statement the interpreter is running (``interpreter/typed_ir.py`` sets it while a
#: block runs): an object whose ``site()`` is its ``(filename, lineno)``
INTERPRETED: contextvars.ContextVar = contextvars.ContextVar("numba_tile_interpreted",
                                                            default=None)


def user_call_site() -> tuple[str, int] | None:
    """``(filename, lineno)`` of the kernel statement the interpreter is running, else of the
    innermost stack frame outside the numba_tile package.

    Returns:
        tuple[str, int] | None: the user's line that led here, or None if every frame is inside
        numba_tile.
    """
    running = INTERPRETED.get()
    if running is not None:
        site = running.site()
        if site is not None:
            return site
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR):
            return filename, frame.f_lineno
        frame = frame.f_back
    return None
