"""Exact checks of the seed baselines' defining steps, each written to catch a mutant of
``paper_checks/mutants_baselines.py`` that the reference-loop tests of the baselines would also
see but state less directly.

* PACFL (Vahidian et al., Algorithm 1, line 10): HC cut at the threshold beta, in radians, so the
  number of clusters is an output; on noise-free clients whose joint data span hyperplanes, the
  proximity of Eq. 3 (``measure="sum"``, ``p = d``) is the angle between the hyperplanes'
  normals, known in closed form, and the count of clusters at each beta follows from it.
* One-shot clustering (Ghosh et al., Algorithm 1 of the arXiv text, step 2): the server's labels
  are k-means, with ``n_init`` restarts, of the clients' local least squares, client ``i``'s label
  that of its own local model.
"""

import numpy as np
import pytest

from mixreg.algorithms.oneshot import oneshot
from mixreg.algorithms.pacfl import pacfl
from mixreg.clustering import kmeans
from mixreg.problems import make_problem, make_problem_from_parameters

# Three clusters of regression vectors in R^2 and the angles between the normals (theta, -1) of
# their joint hyperplanes {(x, <x, theta>)} of R^3: arctan(1/2), arctan(3), and pi/4 between the
# last two (cos = 2.5 / sqrt(1.25 * 10) = 1 / sqrt(2)).
_THETA = np.array([[0.0, 0.0], [0.5, 0.0], [3.0, 0.0]])
_A01, _A02, _A12 = np.arctan(0.5), np.arctan(3.0), np.pi / 4


def _hyperplane_clients(seed=0):
    labels = np.repeat(np.arange(3), 4)
    return make_problem_from_parameters(_THETA, labels, np.full(12, 10), 0.0, rng=np.random.default_rng(seed))


@pytest.mark.parametrize(
    "linkage, beta, clusters",
    [
        # single linkage: Z = 1 + the number of the three angles above beta among the tree's two
        # edges (arctan(1/2) and pi/4)
        ("single", 0.5 * _A01, 3),
        ("single", 0.5 * (_A01 + _A12), 2),
        ("single", 0.5 * (_A12 + _A02), 1),
        # average linkage: after merging clusters 0 and 1 (arctan(1/2)), cluster 2 is at the mean
        # of arctan(3) and pi/4 from them
        ("average", 0.5 * (_A01 + _A12), 2),
        ("average", 0.5 * (_A02 + _A12) + 0.01, 1),
    ],
)
def test_pacfl_threshold_is_in_radians_and_makes_the_number_of_clusters(linkage, beta, clusters):
    """The driver cuts HC at beta radians: the clusters found are those the closed-form angles
    give (a threshold read in degrees, 57 times larger, would merge everything)."""
    pb = _hyperplane_clients()
    res = pacfl(pb, np.zeros((1, 1, 2)), 0.5, n_rounds=1, p=2, measure="sum", linkage=linkage, threshold=beta)
    assert res.n_clusters_found == clusters
    labels = res.assignments[0]
    truth = pb.labels
    # the clusters found are unions of the true clusters (no client split from its own)
    assert all(len(set(labels[truth == l])) == 1 for l in range(3))


def test_pacfl_closed_form_angles_are_the_proximities():
    """The geometry the test above relies on: Eq. 3's proximity between clients of two clusters
    is the angle between their normals (to 1e-6: the arccos of numbers near 1)."""
    pb = _hyperplane_clients()
    res = pacfl(pb, np.zeros((1, 1, 2)), 0.5, n_rounds=1, p=2, measure="sum", threshold=0.1)
    between = np.array([[0.0, _A01, _A02], [_A01, 0.0, _A12], [_A02, _A12, 0.0]])
    np.testing.assert_allclose(res.proximity, between[pb.labels][:, pb.labels], atol=1e-6)


@pytest.mark.parametrize("n_init", [1, 10])
def test_oneshot_labels_are_kmeans_of_the_clients_own_local_models(n_init):
    """Step 2: label ``i`` is k-means' label of client ``i``'s local model, the same k-means (same
    generator, same ``n_init``) run here on the local least squares computed here."""
    pb = make_problem(m=30, k=3, n=12, d=4, sigma=2.0, scale=1.0, protocol="gaussian", rng=np.random.default_rng(4))
    res = oneshot(pb, np.zeros((3, 4)), 0.1, n_rounds=1, rng=np.random.default_rng(9), n_init=n_init)
    local = np.stack([np.linalg.lstsq(*pb.client(i), rcond=None)[0] for i in range(pb.m)])
    np.testing.assert_allclose(res.local_models, local, rtol=1e-8, atol=1e-10)
    ref = kmeans(local, 3, n_init=n_init, rng=np.random.default_rng(9))
    np.testing.assert_array_equal(res.assignments[0], ref.labels)
    assert res.kmeans_inertia == pytest.approx(ref.inertia, rel=1e-9)
