"""tensorlang side of the benchmark: the objectives of ba.tl and gmm.tl, their derivatives, and
ADBench's sparse BA Jacobian.

The BA Jacobian never forms a dense matrix.  Observation i's residual depends on one camera row,
one point row and one weight, so the tangent of the residuals along the seed "column c of every
camera" (a one-hot in the parameter, all cameras at once) is, for each observation, the column c
of its own 2 x 15 block.  Fifteen jvps (11 camera, 3 point, 1 weight seeds) fill every block;
`ref_numpy.ba_csr` lays them out in CSR.  This is the classical column colouring of a Jacobian
with this sparsity, and each jvp costs O(p), so the Jacobian costs O(p) time and memory.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import ref_numpy

HERE = Path(__file__).resolve().parent
VARIANTS = {"main": "tensorlang"}


def _module(name: str):
    import tensorlang as tl
    return tl.load(HERE / name)


# ---------------------------------------------------------------------------- BA
class BAJacobian:
    """Residuals and sparse Jacobian of ba.tl for one set of index arrays."""

    def __init__(self, backend: str = "numba"):
        self.backend = backend
        self.mod = _module("ba.tl")
        self.residuals = self.mod["ba_residuals"].compile(backend)
        self._jvps = None
        self._seeds = {}

    def jvps(self):
        """(jvp in cams, in X, in w of the reprojection residuals, jvp of the weight residuals),
        derived on first use."""
        if self._jvps is None:
            import tensorlang as tl
            reproj = self.mod["reproj_error"]
            self._jvps = tuple(tl.jvp(f, wrt=w).compile(self.backend) for f, w in
                               ((reproj, "cams"), (reproj, "X"), (reproj, "w"),
                                (self.mod["weight_error"], "w")))
        return self._jvps

    @staticmethod
    def arguments(inst) -> dict:
        return dict(cams=inst.cams, X=inst.X, w=inst.w, feats=inst.feats,
                    cam=np.ascontiguousarray(inst.obs[:, 0]), pt=np.ascontiguousarray(inst.obs[:, 1]))

    def seeds(self, shape: tuple, cols: int) -> list[np.ndarray]:
        key = (shape, cols)
        if key not in self._seeds:
            out = []
            for c in range(cols):
                s = np.zeros(shape)
                s.reshape(shape[0], -1)[:, c] = 1.0
                out.append(s)
            self._seeds[key] = out
        return self._seeds[key]

    def blocks(self, args: dict):
        """(J (p, 2, 15), d werr / d w (p,))."""
        cams, X, w = args["cams"], args["X"], args["w"]
        jvp_cams, jvp_X, jvp_w, jvp_werr = self.jvps()
        p = w.shape[0]
        J = np.empty((p, 2, 15))
        for c, seed in enumerate(self.seeds(cams.shape, 11)):
            J[:, :, c] = jvp_cams(**args, d_cams=seed)[1]
        for c, seed in enumerate(self.seeds(X.shape, 3)):
            J[:, :, 11 + c] = jvp_X(**args, d_X=seed)[1]
        ones = self.seeds(w.shape, 1)[0]
        J[:, :, 14] = jvp_w(**args, d_w=ones)[1]
        dwerr = jvp_werr(w=w, d_w=ones)[1]
        return J, dwerr

    def jacobian(self, inst, args: dict | None = None):
        args = args or self.arguments(inst)
        J, dwerr = self.blocks(args)
        return ref_numpy.ba_csr(J, dwerr, inst.obs, inst.n, inst.m)


def build_ba(variant, inst):
    ba = BAJacobian()
    args = ba.arguments(inst)
    return (lambda: ba.residuals(**args)), (lambda: ba.jacobian(inst, args))


BUILD = {"ba": build_ba}
