"""`tiling.crowded` compiled, for the generated kernels' call-time test.  A module of its
own, so that the code generator, which reads `tiling.TILE`, never imports Numba."""
from __future__ import annotations

from numba import njit

from .tiling import crowded as _crowded

crowded = njit(cache=True, nogil=True)(_crowded)
