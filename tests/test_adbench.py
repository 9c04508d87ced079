"""ADBench objectives (benchmarks/adbench) on the benchmark's own smallest inputs, against the
NumPy references: BA ba1 (residuals and the sparse Jacobian, whose reference is the complex step)
GMM gmm/1k/gmm_d2_K5 and LSTM lstm_l2_c1024; plus the loaders' errors on malformed files.

The inputs are read from ../shared/adbench beside the repository (or $ADBENCH_DATA); without
them the data-dependent tests are skipped.
"""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks.adbench import data, ref_numpy

TOL = 1e-9


def rel(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - b)) / np.max(np.abs(b)))


@pytest.fixture(scope="module")
def data_dir():
    try:
        return data.find_data_dir()
    except data.DataError as exc:
        pytest.skip(str(exc))


# ---------------------------------------------------------------------------- BA
@pytest.fixture(scope="module")
def ba1(data_dir):
    return data.load_ba(data.ba_files(data_dir)[0])


@pytest.fixture(scope="module")
def ba_tl():
    from benchmarks.adbench.tl_impl import BAJacobian
    return BAJacobian(backend=None)


def test_ba_loader_replicates(ba1):
    assert (ba1.n, ba1.m, ba1.p) == (49, 7776, 31843)
    assert ba1.obs[100].tolist() == [100 % 49, 100 % 7776]


def test_ba_residuals_match_numpy(ba1, ba_tl):
    reproj, werr = ba_tl.residuals(**ba_tl.arguments(ba1))
    want_r, want_w = ref_numpy.ba_residuals(ba1.cams, ba1.X, ba1.w, ba1.feats, ba1.obs)
    assert reproj.shape == (ba1.p, 2) and werr.shape == (ba1.p,)
    assert rel(reproj, want_r) <= TOL and rel(werr, want_w) <= TOL


def test_ba_jacobian_matches_complex_step(ba1, ba_tl):
    J = ba_tl.jacobian(ba1)
    assert J.shape == (3 * ba1.p, 11 * ba1.n + 3 * ba1.m + ba1.p)
    assert J.nnz == 31 * ba1.p
    Jb, dw = ref_numpy.ba_jacobian_blocks(ba1.cams, ba1.X, ba1.w, ba1.feats, ba1.obs)
    want = ref_numpy.ba_csr(Jb, dw, ba1.obs, ba1.n, ba1.m)
    assert np.array_equal(J.indptr, want.indptr) and np.array_equal(J.indices, want.indices)
    assert rel(J.data, want.data) <= TOL


def random_ba(rng, n=3, m=4, p=9) -> data.BA:
    i = np.arange(p)
    cams = rng.normal(size=(n, 11))
    cams[:, 3:6] -= 5.0                     # points in front of the cameras
    cams[1, 0:3] = 0.0                      # one camera on the |r| = 0 branch
    return data.BA(cams, rng.normal(size=(m, 3)), rng.uniform(0.5, 1.5, p),
                   rng.normal(size=(p, 2)), np.stack([rng.integers(0, n, p), i % m], 1))


def test_ba_jacobian_both_methods_and_rotation_branch(ba_tl):
    """Random cameras (one with r = 0, so the value bracket's other branch runs), cameras shared
    unevenly: reverse (vjp) and forward (jvp) blocks agree with the complex step, and the
    Jacobian agrees with central differences of the residuals along a random direction."""
    rng = np.random.default_rng(7)
    b = random_ba(rng)
    args = ba_tl.arguments(b)
    Jb, dw = ref_numpy.ba_jacobian_blocks(b.cams, b.X, b.w, b.feats, b.obs)
    for blocks in (ba_tl.blocks(args), ba_tl.blocks_jvp(args)):
        assert rel(blocks[0], Jb) <= TOL and rel(blocks[1], dw) <= TOL
    J = ba_tl.jacobian(b)
    x = np.concatenate([b.cams.ravel(), b.X.ravel(), b.w])
    d = rng.normal(size=x.shape)

    def res(v):
        n, m = b.n, b.m
        c, X, w = v[:11 * n].reshape(n, 11), v[11 * n:11 * n + 3 * m].reshape(m, 3), v[11 * n + 3 * m:]
        r, we = ba_tl.residuals(**dict(args, cams=c, X=X, w=w))
        return np.concatenate([r.ravel(), we])
    eps = 1e-6
    fd = (res(x + eps * d) - res(x - eps * d)) / (2 * eps)
    assert np.allclose(J @ d, fd, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------- GMM
@pytest.fixture(scope="module")
def gmm_small(data_dir):
    return data.load_gmm(data_dir / "gmm" / "1k" / "gmm_d2_K5.txt")


def test_gmm_numpy_reference_matches_the_published_value(gmm_small):
    g = gmm_small
    e = ref_numpy.gmm_objective(g.alphas, g.means, g.icf, g.x, g.gamma, g.m)
    assert abs(e - (-5240.5905625495)) <= 1e-9 * 5240.6


def test_gmm_parts_match_numpy(gmm_small):
    """gmm.tl's beta (the per-point, per-component exponents) and Wishart prior."""
    from benchmarks.adbench.tl_impl import GMMParts
    g = gmm_small
    parts = GMMParts(backend=None)
    beta = parts.beta(g)
    D = g.d
    rows, cols = ref_numpy.lower_pairs(D)
    q = g.icf[:, :D]
    L = np.zeros((g.k, D, D))
    L[:, rows, cols] = g.icf[:, D:]
    xc = g.x[:, None] - g.means[None]
    z = np.exp(q)[None] * xc + np.einsum("kij,nkj->nki", L, xc)
    assert rel(beta, g.alphas + q.sum(1) - 0.5 * (z * z).sum(2)) <= TOL
    prior = (np.sum(0.5 * g.gamma ** 2 * (np.sum(np.exp(2 * q), 1) + np.sum(g.icf[:, D:] ** 2, 1))
                    - g.m * q.sum(1))
             - g.k * ((D + g.m + 1) * D * np.log(g.gamma / np.sqrt(2))
                      - ref_numpy.multigammaln(0.5 * (D + g.m + 1), D)))
    assert abs(parts.prior(g) - prior) <= TOL * abs(prior)


def test_gmm_gradient_by_hand_matches_the_complex_step(data_dir):
    """The hand-derived GMM gradient (the reference at 2.5 million points) against the complex
    step, on a d = 10 file whose factors have off-diagonal entries, taken in several chunks."""
    g = data.load_gmm(data_dir / "gmm" / "1k" / "gmm_d10_K5.txt")
    x = g.x[:150]
    want = ref_numpy.gmm_gradient(g.alphas, g.means, g.icf, x, g.gamma, g.m)
    got = ref_numpy.gmm_gradient_by_hand(g.alphas, g.means, g.icf, x, g.gamma, g.m, chunk=2000)
    for a, b in zip(got, want):
        assert rel(a, b) <= TOL


def gmm_tl():
    from benchmarks.adbench import tl_impl
    why = tl_impl.missing("gmm")
    if why:
        pytest.skip(why)
    return tl_impl


def test_gmm_objective_and_gradient_match_numpy(gmm_small):
    """E and its gradient in (alphas, means, icf) against NumPy and the complex step."""
    tl_impl = gmm_tl()
    g = gmm_small
    f, grad = tl_impl.gmm_functions(backend=None)
    args = tl_impl.gmm_arguments(g)
    want = ref_numpy.gmm_objective(g.alphas, g.means, g.icf, g.x, g.gamma, g.m)
    assert abs(f(**args) - want) <= TOL * abs(want)
    for got, ref in zip(grad(**args), ref_numpy.gmm_gradient(g.alphas, g.means, g.icf, g.x,
                                                                g.gamma, g.m)):
        assert rel(got, ref) <= TOL


def test_gmm_logsumexps_are_stable(data_dir):
    """At D = 64 most points have every exponent below -745, where exp underflows to 0 for every
    component (a plain log(sum(exp)) is -inf); the stable logsumexp gives the finite objective."""
    tl_impl = gmm_tl()
    g = data.load_gmm(data_dir / "gmm" / "1k" / "gmm_d64_K5.txt")
    beta = tl_impl.GMMParts(backend=None).beta(g)
    assert np.min(np.max(beta, axis=1)) < -745          # a point where every exp(beta) == 0.0
    f, _ = tl_impl.gmm_functions(backend=None)
    want = ref_numpy.gmm_objective(g.alphas, g.means, g.icf, g.x, g.gamma, g.m)
    assert abs(f(**tl_impl.gmm_arguments(g)) - want) <= TOL * abs(want)


# ---------------------------------------------------------------------------- loaders
def test_missing_data_directory_says_where_it_looked(tmp_path):
    with pytest.raises(data.DataError, match="looked in") as err:
        data.find_data_dir(tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(err.value)


@pytest.mark.parametrize("text, where, what", [
    ("2 2 3\n1\n2\n0 0\n1 1\n0 0 0\n0 0 0\n1 2\n3 4\n1 0\n", ":10", "ends early"),
    ("2 2 3\n1\n2\n0 0\n1 1\n0 0 0\n0 0\n", ":7", "found 2 value"),
    ("2 2 1\n1\n2\n0 0\n1 x\n0 0 0\n0 0 0\n1 2\n1 0\n", ":5", "'x' is not a number"),
    ("2 2 1\n1\n2\n0 0\n1 1\n0 0 0\n0 0 0\n1 2\n1 0\n7\n", ":10", "unexpected data"),
    ("2 2 1\n1\n2\n0 0\n1 1\n0 0 0\n0 0 0\n1 2\n1 0.5\n", ":9", "m must be an integer"),
    ("2 0 1\n", ":1", "integers >= 1"),
])
def test_malformed_gmm_file_names_file_and_line(tmp_path, text, where, what):
    path = tmp_path / "g.txt"
    path.write_text(text)
    with pytest.raises(data.DataError, match=what) as err:
        data.load_gmm(path)
    assert f"{path}{where}" in str(err.value)


def test_gmm_replicate_mode_and_truncated_ba(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("2 1 4\n0.5\n1 2\n0 0 0\n3 4\n1 0\n")
    g = data.load_gmm(path)
    assert g.replicated and g.x.shape == (4, 2) and np.all(g.x == [3, 4])
    ba = tmp_path / "b.txt"
    ba.write_text("2 3 4\n" + " ".join(["1"] * 11) + "\n1 2 3\n0.5\n")
    with pytest.raises(data.DataError, match=f"{ba}:4: the file ends early"):
        data.load_ba(ba)


def test_lstm_objective_and_gradient_match_numpy(data_dir):
    """lstm.tl (a recurrence over time and layers) on lstm_l2_c1024: the value on the whole
    sequence; the gradient in (main, extra) on its first 12 steps against the complex step."""
    from benchmarks.adbench import tl_impl
    inst = data.load_lstm(data.lstm_files(data_dir)[0])
    f, grad = tl_impl.lstm_functions(backend=None)
    want = ref_numpy.lstm_objective(inst.main_params, inst.extra_params, inst.state, inst.sequence)
    assert abs(f(**tl_impl.lstm_arguments(inst)) - want) <= TOL * want
    short = data.LSTM(inst.main_params, inst.extra_params, inst.state, inst.sequence[:12])
    got = grad(**tl_impl.lstm_arguments(short))
    ref = ref_numpy.lstm_gradient(short.main_params, short.extra_params, short.state, short.sequence)
    assert got[0].shape == inst.main_params.shape
    assert rel(got[0], ref[0]) <= TOL and rel(got[1], ref[1]) <= TOL


def test_lstm_loader(data_dir):
    files = data.lstm_files(data_dir)
    l = data.load_lstm(files[0])
    assert (l.layers, l.c, l.b) == (2, 1024, 14)
    v = ref_numpy.lstm_objective(l.main_params, l.extra_params, l.state, l.sequence)
    assert abs(v - 0.66666517955885) <= 1e-12
