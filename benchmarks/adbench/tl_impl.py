"""tensorlang side of the benchmark: the objectives of ba.tl and gmm.tl, their derivatives, and
ADBench's sparse BA Jacobian.

The BA Jacobian never forms a dense matrix.  Observation i's two reprojection residuals depend
on one camera row, one point row and one weight: 15 local parameters.  Two ways to get every
observation's 2 x 15 block from tensorlang's derivatives, both O(p) in time and memory:

main    reverse mode on the per-observation residual `project` of ba.tl (the cameras and points
        gathered per observation, so row i of each argument belongs to observation i alone):
        the vjp with the cotangent "component a of every residual" (a = 0, 1) returns, in row
        i of its cotangents, row a of observation i's block.  Two vjps fill all blocks.
jvp15   forward mode on the gathered residual `reproj_error` with one-hot column seeds: the
        tangent along "column c of every camera" is, per observation, column c of its block
        (each observation sees one camera), so 11 + 3 + 1 jvps fill all blocks (the column
        colouring of a Jacobian with this sparsity).

`ref_numpy.ba_csr` lays the blocks out in ADBench's CSR.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import ref_numpy

HERE = Path(__file__).resolve().parent
VARIANTS = {"main": "tensorlang", "jvp15": "tensorlang (15 jvps)"}


def _module(name: str):
    import tensorlang as tl
    return tl.load(HERE / name)


def _bind(fn, backend: str | None):
    """fn on `backend`; None keeps the default ($TENSORLANG_BACKEND, else Numba)."""
    return fn if backend is None else fn.compile(backend)


# ---------------------------------------------------------------------------- BA
class BAJacobian:
    """Residuals and sparse Jacobian of ba.tl for one set of index arrays."""

    def __init__(self, backend: str | None = "numba"):
        self.backend = backend
        self.mod = _module("ba.tl")
        self.residuals = _bind(self.mod["ba_residuals"], backend)
        self._jvps = None
        self._vjps = None
        self._seeds = {}

    def vjps(self):
        """(vjp of `project` in its three parameter arrays, vjp of the weight residuals)."""
        if self._vjps is None:
            import tensorlang as tl
            self._vjps = (_bind(tl.vjp(self.mod["project"], wrt=("cam_o", "X_o", "w")), self.backend),
                          _bind(tl.vjp(self.mod["weight_error"], wrt="w"), self.backend))
        return self._vjps

    def jvps(self):
        """(jvp in cams, in X, in w of the reprojection residuals, jvp of the weight residuals),
        derived on first use."""
        if self._jvps is None:
            import tensorlang as tl
            reproj = self.mod["reproj_error"]
            self._jvps = tuple(_bind(tl.jvp(f, wrt=w), self.backend) for f, w in
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
        """(J (p, 2, 15), d werr / d w (p,)) by two vjps of the per-observation residuals."""
        vjp_project, vjp_werr = self.vjps()
        cam_o = args["cams"][args["cam"]]
        X_o = args["X"][args["pt"]]
        w, feats = args["w"], args["feats"]
        p = w.shape[0]
        J = np.empty((p, 2, 15))
        for a, seed in enumerate(self.seeds((p, 2), 2)):
            gc, gx, gw = vjp_project(cam_o, X_o, w, feats, seed)
            J[:, a, :11], J[:, a, 11:14], J[:, a, 14] = gc, gx, gw
        dwerr = vjp_werr(w, self.seeds((p,), 1)[0])
        return J, dwerr

    def blocks_jvp(self, args: dict):
        """The same blocks by 15 jvps with one-hot column seeds."""
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

    def jacobian(self, inst, args: dict | None = None, method: str = "vjp"):
        args = args or self.arguments(inst)
        J, dwerr = self.blocks(args) if method == "vjp" else self.blocks_jvp(args)
        return ref_numpy.ba_csr(J, dwerr, inst.obs, inst.n, inst.m)


def build_ba(variant, inst):
    ba = BAJacobian()
    args = ba.arguments(inst)
    method = "jvp" if variant == "jvp15" else "vjp"
    return (lambda: ba.residuals(**args)), (lambda: ba.jacobian(inst, args, method))


# ---------------------------------------------------------------------------- GMM
def tri_table(d: int) -> np.ndarray:
    """gmm.tl's i64 table: tri[j, j] = j (the column of q[j] in a row of icf), tri[r, c] for
    r > c the column of the packed l entry (r, c); entries above the diagonal are 0 (unread)."""
    tri = np.zeros((d, d), dtype=np.int64)
    tri[np.arange(d), np.arange(d)] = np.arange(d)
    rows, cols = ref_numpy.lower_pairs(d)
    tri[rows, cols] = d + np.arange(rows.size)
    return tri


class GMMParts:
    """The pieces of gmm.tl: beta (n x K) and the Wishart prior."""

    def __init__(self, backend: str | None = "numba"):
        self.mod = _module("gmm.tl")
        self.beta_fn = _bind(self.mod["gmm_beta"], backend)
        self.prior_fn = _bind(self.mod["gmm_prior"], backend)

    def beta(self, inst):
        return self.beta_fn(inst.alphas, inst.means, inst.icf, inst.x, tri_table(inst.d))

    def prior(self, inst):
        mgl = ref_numpy.multigammaln(0.5 * (inst.d + inst.m + 1), inst.d)
        return self.prior_fn(inst.icf, tri_table(inst.d), inst.gamma, float(inst.m), mgl)


def gmm_arguments(inst) -> dict:
    """gmm_objective's arguments: the instance, the i64 table and the constant multigammaln."""
    return dict(alphas=inst.alphas, means=inst.means, icf=inst.icf, x=inst.x,
                tri=tri_table(inst.d), gamma=inst.gamma, m=float(inst.m),
                mgl=ref_numpy.multigammaln(0.5 * (inst.d + inst.m + 1), inst.d))


def gmm_functions(backend: str | None = "numba"):
    """(objective, gradient in (alphas, means, icf)) of gmm.tl."""
    import tensorlang as tl
    f = _module("gmm.tl")["gmm_objective"]
    return _bind(f, backend), _bind(tl.grad(f, wrt=("alphas", "means", "icf")), backend)


def build_gmm(variant, inst):
    args = gmm_arguments(inst)
    f = _bind(_module("gmm.tl")["gmm_objective"], "numba")
    state = {}

    def gradient():
        if "g" not in state:   # derived on first use, so its cold time is its own
            state["g"] = gmm_functions("numba")[1]
        return state["g"](**args)
    return (lambda: f(**args)), gradient


# ---------------------------------------------------------------------------- LSTM
def lstm_arguments(inst) -> dict:
    """lstm_objective's arguments: ADBench's 2l x 4b parameter rows as (layer, weight or bias,
    gate, b), the 2l state rows as (layer, hidden or cell, b) (views, no copies)."""
    return dict(main=inst.main_params.reshape(inst.layers, 2, 4, inst.b), extra=inst.extra_params,
                state=inst.state.reshape(inst.layers, 2, inst.b), seq=inst.sequence)


def lstm_functions(backend: str | None = "numba"):
    """(objective, gradient in (main_params, extra_params) in ADBench's layout)."""
    import tensorlang as tl
    f = _module("lstm.tl")["lstm_objective"]
    g = _bind(tl.grad(f, wrt=("main", "extra")), backend)

    def gradient(**args):
        gm, ge = g(**args)
        return gm.reshape(-1, gm.shape[-1] * gm.shape[-2]), ge
    return _bind(f, backend), gradient


def build_lstm(variant, inst):
    args = lstm_arguments(inst)
    f = _bind(_module("lstm.tl")["lstm_objective"], "numba")
    state = {}

    def gradient():
        if "g" not in state:
            state["g"] = lstm_functions("numba")[1]
        return state["g"](**args)
    return (lambda: f(**args)), gradient


# problem -> (file, the objective's function); a problem whose function is missing is skipped
OBJECTIVES = {"gmm": ("gmm.tl", "gmm_objective"), "ba": ("ba.tl", "ba_residuals"),
              "lstm": ("lstm.tl", "lstm_objective")}


def missing(problem: str) -> str:
    """Why tensorlang cannot run `problem` yet ("" when it can)."""
    file, fn = OBJECTIVES[problem]
    if not (HERE / file).exists():
        return f"no {file} yet"
    if fn not in _module(file).names:
        return f"{file} has no {fn} yet"
    return ""


def costs(problem: str) -> list[tuple[str, str]]:
    """(what, tl.cost polynomial) of the objective and the derivative programs that run."""
    import tensorlang as tl
    if missing(problem):
        return []
    if problem == "ba":
        mod = _module("ba.tl")
        return [("residuals (ba_residuals)", str(tl.cost(mod["ba_residuals"]))),
                ("vjp of project in (cam_o, X_o, w), called twice",
                 str(tl.cost(tl.vjp(mod["project"], wrt=("cam_o", "X_o", "w"))))),
                ("jvp of reproj_error in cams, called 11 times (15-jvp row)",
                 str(tl.cost(tl.jvp(mod["reproj_error"], wrt="cams"))))]
    if problem == "gmm":
        f = _module("gmm.tl")["gmm_objective"]
        return [("objective (gmm_objective)", str(tl.cost(f))),
                ("gradient in (alphas, means, icf)",
                 str(tl.cost(tl.grad(f, wrt=("alphas", "means", "icf")))))]
    if problem == "lstm":
        f = _module("lstm.tl")["lstm_objective"]
        return [("objective (lstm_objective)", str(tl.cost(f))),
                ("gradient in (main, extra)", str(tl.cost(tl.grad(f, wrt=("main", "extra")))))]
    return []


BUILD = {"ba": build_ba, "gmm": build_gmm, "lstm": build_lstm}
