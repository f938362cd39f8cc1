"""PACFL: clustered FL by the principal angles between the clients' data subspaces.

Vahidian, Morafah, Wang, Kungurtsev, Chen, Shah, Lin, "Efficient Distribution Similarity
Identification in Clustered Federated Learning via Principal Angles Between Client Data
Subspaces", AAAI 2023 (arXiv:2209.10526).  Algorithm 1 (PACFL), Eqs. 2 and 3 (the proximity
matrix), Algorithm 2 (PME, proximity matrix extension) and the supplement's paragraphs on
truncated SVD, hierarchical clustering and Algorithm 3 (newcomers), for mixed linear regression:

1. **signature** (Alg. 1, line 8, once): client ``i`` sends the ``p`` leading left singular
   vectors :math:`U_p^i \\in \\mathbb{R}^{D \\times p}` of its data matrix
   :math:`\\mathbf{D}_i \\in \\mathbb{R}^{D \\times n_i}`, whose columns are its samples, or
   only its :math:`r_i = \\min(p, \\operatorname{rank} \\mathbf{D}_i) < p` vectors when its data
   span fewer directions (:func:`client_signatures`);
2. **proximity** (line 10): the server forms :math:`A_{ij} = \\Theta_1(U_p^i, U_p^j)`, the
   smallest principal angle (Eq. 2), or the sum of the principal angles (Eq. 3)
   (:func:`principal_angles`, :func:`proximity_matrix`);
3. **clustering** (line 11): agglomerative hierarchical clustering of ``A`` cut at the
   threshold :math:`\\beta` (or into a given number of groups), :math:`\\{C_1, \\dots, C_Z\\} =
   HC(A, \\beta)` (:func:`pacfl_clusters`, over :func:`mixreg.clustering.agglomerative`);
4. **training** (lines 12-25): FedAvg within each cluster,
   :math:`\\theta_{z,t+1} = \\sum_{i \\in C_z} \\frac{n_i}{N_z} G_i^s(\\theta_{z,t})` (the shared
   trainer :func:`mixreg.algorithms._fixed_labels.train_on_labels`);
5. **newcomers** (lines 13-17, Alg. 2 and 3): a new client sends its signature, the server
   extends ``A`` by its rows and columns (:func:`pme`) and re-runs HC with the same threshold
   (:func:`assign_new_clients`).

Choices where the paper is silent or does not fit mixed regression (each is a parameter):

* **The data matrix** (``matrix``).  The paper's :math:`\\mathbf{D}_k` holds "the input
  features" (images).  In mixed linear regression the features have the same law
  :math:`N(0, \\Sigma)` in every cluster, so the subspaces of the :math:`X_i` alone
  (``matrix="x"``) carry no cluster information unless the clusters' covariances differ: PACFL
  then clusters at chance.  Our default ``matrix="joint"`` uses the :math:`(d+1) \\times n_i`
  matrix whose columns are :math:`(x_{ij}, y_{ij})`.  Its population second moment is
  :math:`\\begin{pmatrix} \\Sigma & \\Sigma\\theta^* \\\\ \\theta^{*\\top}\\Sigma &
  \\theta^{*\\top}\\Sigma\\theta^* + \\sigma^2 \\end{pmatrix}`; for :math:`\\Sigma = I` its
  leading eigenvector is :math:`\\propto (\\theta^*, \\lambda_1 - 1)`, with
  :math:`\\lambda_1 - 1 \\approx \\lVert\\theta^*\\rVert^2` when :math:`\\sigma` is small, a
  direction that differs between clusters; ``d - 1`` eigenvalues equal 1 (a degenerate
  eigenspace, no information) and the last, about :math:`\\sigma^2 / (1 +
  \\lVert\\theta^*\\rVert^2)`, belongs to the regression direction :math:`(\\theta^*, -1)`.
  So the leading ``p`` vectors (``p <= d``) hold the cluster in their first vector, and with
  ``p = d = D - 1`` they span exactly the orthogonal complement of the client's smallest
  singular direction, :math:`\\propto (\\hat\\theta_i, -1)` with :math:`\\hat\\theta_i` its
  local total least squares (close to ordinary least squares when :math:`\\sigma` is small);
  the principal angles between two such hyperplanes are all 0 but one, the angle between their
  normals, so Eq. 3 with ``p = d`` clusters the clients' local regression directions (one-shot
  clustering in disguise) and Eq. 2 sees nothing.  Measured with this module (``m = 40``,
  ``k = 2``, ``sigma = 0.1``, ``protocol="gaussian"``, HC average linkage into 2 groups, mean
  over 8 seeds of the misclustered fraction): with equal covariances ``matrix="x"``
  misclusters 0.42-0.48 (chance); the joint matrix with Eq. 2 and ``p = 1, 2, 3`` recovers
  every client at separation 4 (``d = 8..20``, ``n_i = 50``) but misclusters 0.23-0.47 at
  separation 1, where Eq. 3 with ``p = d`` still recovers every client.  Averaged over
  ``d = 5, 10, 20``, separations 1, 2, 4 and ``n_i = 20, 50``, Eq. 2 misclusters 0.30
  (``p = 1``), 0.21 (2), 0.13 (3), 0.26 (4): the paper's ``p = 3`` is the best small ``p``.
* **p** (``p``): default 3, the paper's value (supplement, p = 3 for Tables 1, 2, 6).
* **Clients with fewer than p points** (``small_clients``).  The paper assumes
  :math:`p \\ll \\operatorname{rank}(\\mathbf{D}_k)` and says nothing of a client whose data
  span fewer than ``p`` directions (:math:`n_i < p`, or rank-deficient data).  Ours, by default
  (``"reduce"``): such a client sends its :math:`r_i = \\min(p, \\operatorname{rank}
  \\mathbf{D}_i) \\le n_i` leading vectors, which span all of its data, and the proximity of
  subspaces of dimensions :math:`r_i, r_j` uses their :math:`\\min(r_i, r_j)` principal angles:
  Eq. 2 their smallest, Eq. 3 their sum (a subspace inside the other is at distance 0; the
  distance of Ye and Lim [3]_ between subspaces of different dimensions also uses these angles
  only).  Padding the missing angles with :math:`\\pi/2` instead would put every small client
  far from every other under Eq. 3; sending ``p`` vectors with zero singular values would send
  arbitrary directions orthogonal to the data.  ``"refuse"`` raises
  :class:`mixreg.algorithms.ProblemRefused` unless every client sends ``p`` vectors (before this
  option only :math:`n_i < p` was refused, and a client of :math:`n_i \\ge p` degenerate samples
  sent arbitrary directions orthogonal to its data; every result where all clients' data span
  ``p`` directions is unchanged, bit for bit).  A client whose data are all zero (rank 0) has nothing to send: refused either way.
  Accepted is not well clustered: one or two points say little of the leading direction Eq. 2
  compares, and in ``experiments.compare``'s quick preset (``n_i = 2``, ``d = 10``, 8 trials)
  PACFL misclusters 0.42 of the clients (``pacfl_x``: 0.47; chance 0.5).  With
  :math:`\\sigma = 0`, ``p = d`` and Eq. 3, a small client lies in its cluster's hyperplane, at
  distance 0 from its cluster's full clients (tested).
* **No centring** (the paper and its code take the SVD of the raw data matrix).
* **Angles** in radians (the public code uses degrees, so its thresholds are 180/pi times ours).
* **Eq. 3** is implemented as the sum of the *true* principal angles,
  :math:`\\sum_r \\arccos \\sigma_r(U_p^{i\\top} U_p^j)`, which depends only on the two
  subspaces.  The paper's formula :math:`\\mathrm{tr}(\\arccos(U_p^{i\\top} U_p^j))` read
  literally (and the public code, which also takes Eq. 2 as the smallest *entrywise*
  :math:`\\arccos` of :math:`U_p^{i\\top} U_p^j`) depends on the bases and on the signs of the
  singular vectors: two bases of one subspace can get a nonzero "distance".
* **Linkage** (``linkage``): the supplement names single linkage as an example, the public
  code's scripts use its "average" (the mean of the two merged rows, i.e. SciPy's ``weighted``,
  WPGMA).  We offer single, average (UPGMA) and complete linkage of the shared
  :func:`mixreg.clustering.agglomerative`, default ``"average"``.
* **The number of clusters**: a threshold :math:`\\beta` (the paper) or a count
  ``n_clusters``; the registry entries use ``n_clusters = k``.
* **Training**: all clients every round (sampling rate ``R = 1``), ``s`` full-batch local
  gradient steps instead of SGD epochs, data weights :math:`n_i / N_z` (Alg. 1, line 24).

Cost: the signatures are one batched SVD per distinct client size (:math:`O(N D^2)` flops),
the proximity matrix :math:`m^2` SVDs of ``p x p`` matrices (a client's unsent vectors are zero
columns), HC :math:`O(m^2)` (SciPy), and a FedAvg round two products of ``2 B N d`` flops.

References
----------
.. [1] S. Vahidian, M. Morafah, W. Wang, V. Kungurtsev, C. Chen, M. Shah, B. Lin, "Efficient
   Distribution Similarity Identification in Clustered Federated Learning via Principal Angles
   Between Client Data Subspaces", AAAI 2023; public code github.com/MMorafah/PACFL.
.. [2] A. Bjorck, G. H. Golub, "Numerical methods for computing angles between linear
   subspaces", Math. Comp. 27, 1973.
.. [3] K. Ye, L.-H. Lim, "Schubert varieties and distances between subspaces of different
   dimensions", SIAM J. Matrix Anal. Appl. 37(3), 2016.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._typing import ArrayLike, HistoryRequest, ScheduleLike
from ..problems import Problem
from .. import kernels
from ..validation import check_array, check_choice, check_int, check_real
from ..clustering import LINKAGES, AgglomerativeResult, agglomerative, number_groups
from ..local_solvers import size_groups
from ._driver import (
    BLOWUP,
    DriverResult,
    ProblemRefused,
    check_blowup,
    check_history,
    check_problem,
    check_run,
    common_fields,
)
from ._fixed_labels import HISTORY, train_on_labels
from ._registry import Algorithm, Unmet, _bind
from ._server import ServerStep, check_schedule, check_server_step

__all__ = [
    "PACFLResult",
    "NewClientAssignment",
    "pacfl",
    "client_signatures",
    "principal_angles",
    "proximity_matrix",
    "pacfl_clusters",
    "pme",
    "assign_new_clients",
    "MATRICES",
    "MEASURES",
    "SMALL_CLIENTS",
]

#: The client data matrices: ``"joint"`` columns :math:`(x_{ij}, y_{ij})`, ``"x"`` columns :math:`x_{ij}`.
MATRICES = ("joint", "x")
#: The proximity measures: Eq. 2 (smallest principal angle), Eq. 3 (sum of the principal angles).
MEASURES = ("smallest", "sum")
#: Clients whose data span fewer than ``p`` directions: ``"reduce"`` (send those, ours), ``"refuse"``.
SMALL_CLIENTS = ("reduce", "refuse")

# Largest number of float64 entries of one block of the (rows, b, p, q) Gram matrices (32 MiB).
_GRAM_BLOCK = 1 << 22
# Largest deviation of U^T U from the identity accepted as orthonormal columns.
_ORTHONORMAL_TOL = 1e-6


@dataclass(frozen=True, kw_only=True)
class PACFLResult(DriverResult):
    """Outcome of a batched PACFL run: the common fields of :class:`mixreg.algorithms.DriverResult`
    and the clustering.

    ``assignments`` are the HC labels (the same for every replica: the clustering is done once);
    ``train_loss`` is :math:`\\frac{1}{2N} \\sum_i \\lVert y_i - X_i \\theta_{\\hat z_i} \\rVert^2`,
    every point scored by its client's cluster.

    Attributes
    ----------
    proximity : ndarray of shape (m, m), float64
        The proximity matrix ``A`` (Eq. 2 or 3), in radians.
    n_clusters_found : int
        ``Z``, the number of clusters HC formed.
    threshold : float
        The cut height of HC: the given :math:`\\beta`, or with ``n_clusters`` the midpoint of the
        last merge made and the first not made (what ``assign_new_clients`` re-uses).
    linkage : str
    matrix : str
        ``"joint"`` or ``"x"``.
    measure : str
        ``"smallest"`` (Eq. 2) or ``"sum"`` (Eq. 3).
    p : int
        Singular vectors per client.
    small_clients : str
        ``"reduce"`` or ``"refuse"`` (``client_signatures``).
    ranks : ndarray of shape (m,), int64
        :math:`r_i`, the vectors client ``i`` sent: ``p``, or :math:`\\operatorname{rank}
        \\mathbf{D}_i < p` (at most :math:`n_i`) for a client whose data span fewer directions.
    """

    proximity: np.ndarray
    n_clusters_found: int
    threshold: float
    linkage: str
    matrix: str
    measure: str
    p: int
    small_clients: str
    ranks: np.ndarray


@dataclass(frozen=True, kw_only=True)
class NewClientAssignment:
    """Outcome of :func:`assign_new_clients` (Algorithm 1, lines 13-17; Algorithm 3).

    Attributes
    ----------
    labels : ndarray of shape (B_new,), int64
        Cluster of every new client: an old cluster's label, or ``Z, Z + 1, ...`` for the new
        clusters formed only by new clients (numbered by their lowest new member).
    proximity : ndarray of shape (M + B_new, M + B_new)
        The extended proximity matrix (:func:`pme`).
    signatures : ndarray of shape (M + B_new, D, p)
        The extended signatures (zero columns: vectors a client did not send).
    n_clusters : int
        Clusters after the assignment (old and new).
    old_partition_kept : bool
        HC on the extended matrix grouped the old clients exactly as before.  When ``False``
        (a new client bridged old clusters), the old clients still keep their labels and the
        new clients follow the rule of :func:`assign_new_clients`.
    """

    labels: np.ndarray
    proximity: np.ndarray
    signatures: np.ndarray
    n_clusters: int
    old_partition_kept: bool


# --------------------------------------------------------------------------------------------
# Signatures, principal angles, proximity
# --------------------------------------------------------------------------------------------


def client_signatures(problem: Problem, p: int, *, matrix: str = "joint", small_clients: str = "reduce") -> np.ndarray:
    """The ``p`` leading left singular vectors of every client's data matrix (Alg. 1, line 8).

    .. math::

        \\mathbf{D}_i = U \\Sigma V^\\top, \\qquad U_p^i = U[:, :r_i], \\qquad
        r_i = \\min(p, \\operatorname{rank} \\mathbf{D}_i), \\qquad
        \\mathbf{D}_i = \\begin{pmatrix} x_{i1} & \\cdots & x_{in_i} \\\\
        y_{i1} & \\cdots & y_{in_i} \\end{pmatrix} \\ (\\text{joint}) \\quad \\text{or} \\quad
        X_i^\\top \\ (\\text{x}),

    the truncated SVD of the supplement, of the raw (not centred) data, in float64.  Signs are
    fixed so that the largest entry in absolute value of every vector is positive (ours; the
    principal angles do not depend on it).

    :math:`\\mathbf{D}_i` is ``D x n_i``, so its rank is at most :math:`\\min(D, n_i)` and, as
    ``p < D``, :math:`r_i = p` unless :math:`n_i < p` or the data are degenerate (repeated or
    collinear samples); the rank counts the singular values above :math:`\\sigma_1 \\max(D,
    n_i)\\,\\epsilon` (:func:`numpy.linalg.matrix_rank`'s rule).  With ``small_clients="reduce"``
    a client of :math:`r_i < p` sends only its :math:`r_i` vectors, which span all of its data
    (ours, module docstring); the paper assumes :math:`p \\ll \\operatorname{rank}
    \\mathbf{D}_i`.

    Parameters
    ----------
    problem : Problem
    p : int
        Vectors per client, in ``[1, D - 1]`` with ``D = d + 1`` (joint) or ``d`` (x) (``p = D``
        spans the whole space: every angle is 0).
    matrix : {"joint", "x"}
        ``"joint"`` (default, ours): columns :math:`(x_{ij}, y_{ij})`; ``"x"``: the features
        alone, the paper's choice for images, blind to the clusters of mixed regression when
        they share a covariance (module docstring).
    small_clients : {"reduce", "refuse"}
        A client whose data span fewer than ``p`` directions sends those (``"reduce"``, default,
        ours), or the problem is refused (``"refuse"``).

    Returns
    -------
    signatures : ndarray of shape (m, D, p), float64
        Client ``i``'s :math:`r_i` orthonormal columns, in decreasing order of singular value,
        then ``p - r_i`` zero columns (vectors not sent).

    Raises
    ------
    mixreg.algorithms.ProblemRefused
        A client's data are all zero (rank 0); with ``small_clients="refuse"``, ``p`` above the
        smallest client size, or a client's data of rank below ``p``.

    Examples
    --------
    >>> from mixreg.problems import make_problem_from_parameters
    >>> pb = make_problem_from_parameters(np.eye(2, 3), np.array([0, 1, 0]), np.array([30, 30, 1]), 0.1,
    ...                                   rng=np.random.default_rng(0))
    >>> U = client_signatures(pb, 2)
    >>> U.shape, bool(np.allclose(U[0].T @ U[0], np.eye(2)))
    ((3, 4, 2), True)
    >>> (U != 0).any(axis=1).tolist()[2]  # the client of one point sends one vector
    [True, False]
    """
    check_problem(problem)
    check_choice("matrix", matrix, MATRICES)
    check_choice("small_clients", small_clients, SMALL_CLIENTS)
    D = problem.d + 1 if matrix == "joint" else problem.d
    if D == 1:
        raise ValueError("matrix='x' with d=1: the only subspace is the whole line and every angle is 0; "
                         "use matrix='joint'")
    p = check_int("p", p, low=1, high=D - 1)
    smallest = int(problem.sizes.min())
    if small_clients == "refuse" and p > smallest:
        raise ProblemRefused(f"p must be at most the smallest client size min n_i = {smallest} (a client's data "
                             f"matrix has rank at most n_i), got p={p}; small_clients='reduce' lets such a client "
                             f"send fewer vectors")
    columns = problem.X.astype(np.float64)
    if matrix == "joint":
        columns = np.column_stack([columns, problem.y.astype(np.float64)])
    U = np.zeros((problem.m, D, p))
    ranks = np.empty(problem.m, dtype=np.int64)
    for n, clients, rows in size_groups(problem.offsets):
        data = np.swapaxes(columns[rows], 1, 2)  # (c, D, n): the samples are the columns
        u, s, _ = np.linalg.svd(data, full_matrices=False)  # u (c, D, min(D, n)), s descending
        ranks[clients] = (s > s[:, :1] * (max(D, n) * np.finfo(np.float64).eps)).sum(axis=1)
        U[clients, :, :min(p, n)] = u[:, :, :p]
    if ranks.min() == 0:
        raise ProblemRefused(f"client {int(ranks.argmin())}'s data matrix is zero: it spans no direction to send")
    if small_clients == "refuse" and ranks.min() < p:
        raise ProblemRefused(f"client {int(ranks.argmin())}'s data matrix has rank {int(ranks.min())} < p={p} "
                             f"(degenerate samples); small_clients='reduce' lets it send fewer vectors")
    U = np.where(np.arange(p) < ranks[:, None, None], U, 0.0)  # unsent vectors are zero columns
    largest = np.take_along_axis(U, np.abs(U).argmax(axis=1)[:, None, :], axis=1)
    U *= np.where(largest < 0, -1.0, 1.0)
    return U


def principal_angles(U_i: ArrayLike, U_j: ArrayLike) -> np.ndarray:
    """Principal angles between the column spaces of ``U_i`` and ``U_j`` (Eq. 1).

    .. math::

        \\Theta_r(U_i, U_j) = \\arccos \\sigma_r(U_i^\\top U_j), \\qquad
        0 \\le \\Theta_1 \\le \\dots \\le \\Theta_{\\min(p, q)} \\le \\pi/2,

    with :math:`\\sigma_1 \\ge \\sigma_2 \\ge \\dots` the singular values of
    :math:`U_i^\\top U_j`, clipped to ``[0, 1]`` (Bjorck and Golub [2]_).  These are the angles
    of Eq. 1 (the minimum over unit vectors of the two subspaces, then recursively on the
    orthogonal complements); they depend on the subspaces only, not on the bases.  Absolute
    accuracy is about :math:`10^{-8}` for angles near 0 (the arccos of a number near 1), which is
    far below any clustering threshold.

    Trailing zero columns are vectors a client did not send (:func:`client_signatures`): a
    signature of :math:`r` nonzero columns spans an :math:`r`-dimensional subspace, and two
    subspaces of dimensions :math:`r_i, r_j` have :math:`\\min(r_i, r_j)` principal angles; the
    entries past them are NaN.

    Parameters
    ----------
    U_i : array of shape (..., D, p)
        Orthonormal columns (checked to ``1e-6``), then zero columns, at least one nonzero;
        leading axes broadcast against ``U_j``'s.
    U_j : array of shape (..., D, q)

    Returns
    -------
    angles : ndarray of shape (..., min(p, q)), float64
        In radians, ascending; NaN past the :math:`\\min(r_i, r_j)` defined angles.

    See Also
    --------
    scipy.linalg.subspace_angles : the same angles (descending), more accurate near 0.

    Examples
    --------
    >>> e = np.eye(3)
    >>> principal_angles(e[:, :2], e[:, 1:]).round(6).tolist()  # share e_1, e_0 is orthogonal to e_2
    [0.0, 1.570796]
    >>> principal_angles(e[:, :2], e[:, 1:] * [1.0, 0.0]).round(6).tolist()  # the line e_1 sent alone
    [0.0, nan]
    """
    U_i, r_i = _check_orthonormal("U_i", U_i)
    U_j, r_j = _check_orthonormal("U_j", U_j)
    if U_i.shape[-2] != U_j.shape[-2]:
        raise ValueError(f"U_i and U_j must have the same number of rows D, got {U_i.shape} and {U_j.shape}")
    return _principal_angles(U_i, U_j, r_i, r_j)


def proximity_matrix(signatures: ArrayLike, measure: str = "smallest") -> np.ndarray:
    """The proximity matrix ``A`` of the clients' signatures (Eq. 2 or Eq. 3).

    .. math::

        A_{ij} = \\Theta_1(U_p^i, U_p^j) \\ (\\text{Eq. 2, "smallest"}), \\qquad
        A_{ij} = \\sum_{l=1}^{\\min(r_i, r_j)} \\Theta_l(U_p^i, U_p^j) \\ (\\text{Eq. 3, "sum"}),

    with :math:`\\Theta_l` the true principal angles (:func:`principal_angles`) and :math:`r_i`
    the vectors client ``i`` sent (``p``, or fewer for a client whose data span fewer
    directions: :func:`client_signatures`).  Subspaces of dimensions :math:`r_i, r_j` have
    :math:`\\min(r_i, r_j)` principal angles: Eq. 2 takes the smallest of them, Eq. 3 sums them
    (ours where :math:`r_i` or :math:`r_j < p`, module docstring; with :math:`r_i = r_j = p`
    the paper's sum of ``p`` angles).

    Eq. 3 is printed in the paper as :math:`\\mathrm{tr}(\\arccos(U_p^{i\\top} U_p^j))`, the
    entrywise arccos of the Gram matrix summed along its diagonal (the angles between the *r*-th
    vectors of the two bases), and the public code computes Eq. 2 as the smallest entrywise
    arccos; both depend on the chosen bases and on the signs of the singular vectors (two bases
    of one subspace get a nonzero "distance").  We use the sum of the true angles, which the
    paper's footnote describes ("the summation over the principal angles"); it is basis-free.

    Parameters
    ----------
    signatures : array of shape (m, D, p)
        Orthonormal columns, then zero columns for the vectors a client did not send
        (:func:`client_signatures`).
    measure : {"smallest", "sum"}

    Returns
    -------
    A : ndarray of shape (m, m), float64
        Symmetric, zero diagonal, in radians.

    Examples
    --------
    >>> c, s = np.cos(0.3), np.sin(0.3)
    >>> U = np.array([[[1.0], [0.0]], [[c], [s]], [[0.0], [1.0]]])  # three lines in the plane
    >>> proximity_matrix(U).round(4).tolist()
    [[0.0, 0.3, 1.5708], [0.3, 0.0, 1.2708], [1.5708, 1.2708, 0.0]]
    """
    U, ranks = _check_orthonormal("signatures", signatures, ndim=3)
    check_choice("measure", measure, MEASURES)
    A = np.triu(_cross_proximity(U, ranks, U, ranks, measure, upper=True), 1)
    return A + A.T


def pacfl_clusters(proximity: np.ndarray, *, n_clusters: int | None = None, threshold: float | None = None,
                   linkage: str = "average") -> AgglomerativeResult:
    """Hierarchical clustering of the proximity matrix, :math:`\\{C_1, \\dots, C_Z\\} = HC(A, \\beta)`
    (Alg. 1, line 11; supplement, "Hierarchical Clustering").

    .. math::

        \\text{merge the two closest groups while } \\min_{G \\ne H} D(G, H) \\le \\beta, \\qquad
        D(G, H) = \\min_{i \\in G, j \\in H} A_{ij} \\ (\\text{single}), \\
        \\operatorname{mean} A_{ij} \\ (\\text{average}), \\ \\max A_{ij} \\ (\\text{complete}).

    A thin naming of :func:`mixreg.clustering.agglomerative` on the precomputed matrix.  With a
    threshold the number of clusters ``Z`` is an output; with ``n_clusters`` it is given.

    Parameters
    ----------
    proximity : array of shape (m, m)
        Symmetric, non-negative (:func:`proximity_matrix`).
    n_clusters : int in [1, m], optional
    threshold : float >= 0, optional
        :math:`\\beta`, in radians.  Exactly one of ``n_clusters`` and ``threshold``.
    linkage : {"single", "average", "complete"}
        Default ``"average"`` (ours; module docstring).

    Returns
    -------
    mixreg.clustering.AgglomerativeResult
        ``labels`` (m,) numbered by their lowest client, ``n_groups`` (``Z``), the cut height
        ``threshold`` and the ``linkage``.

    Examples
    --------
    >>> A = np.array([[0, .1, 1, 1], [.1, 0, 1, 1], [1, 1, 0, .2], [1, 1, .2, 0]])
    >>> res = pacfl_clusters(A, threshold=0.5)
    >>> res.labels.tolist(), res.n_groups
    ([0, 0, 1, 1], 2)
    """
    return agglomerative(distances=proximity, n_clusters=n_clusters, threshold=threshold, linkage=linkage)


def pme(proximity: np.ndarray, signatures: np.ndarray, new_signatures: np.ndarray,
        measure: str = "smallest") -> tuple[np.ndarray, np.ndarray]:
    """Proximity matrix extension (Algorithm 2): add the rows and columns of new clients.

    .. math::

        A_{ext} = \\begin{pmatrix} A_{old} & A_{on} \\\\ A_{on}^\\top & A_{nn} \\end{pmatrix},
        \\qquad U_{ext} = [U_{old}, U_{new}],

    with :math:`A_{on}` (old x new) and :math:`A_{nn}` (new x new) computed by Eq. 2 or 3
    (:func:`proximity_matrix`'s measure).  The box writes only the new-by-new block
    :math:`A_{ext}[M:M+B, M:M+B]`; the old-by-new blocks are needed as well and are computed
    here.  ``A_old`` is copied as given (not recomputed).

    Parameters
    ----------
    proximity : array of shape (M, M)
        :math:`A_{old}`.
    signatures : array of shape (M, D, p)
        :math:`U_{old}`.
    new_signatures : array of shape (B, D, p)
        :math:`U_{new}` (same ``D`` and ``p``; a new client that sent fewer vectors has zero
        columns, :func:`client_signatures`).
    measure : {"smallest", "sum"}
        The measure ``A_old`` was computed with.

    Returns
    -------
    proximity : ndarray of shape (M + B, M + B)
    signatures : ndarray of shape (M + B, D, p)

    Examples
    --------
    >>> U = np.eye(3)[None, :, :1].repeat(2, axis=0)  # two clients on the line e_0
    >>> new = np.eye(3)[None, :, 1:2]                  # a newcomer on e_1
    >>> A, U2 = pme(proximity_matrix(U), U, new)
    >>> A.round(4).tolist(), U2.shape
    ([[0.0, 0.0, 1.5708], [0.0, 0.0, 1.5708], [1.5708, 1.5708, 0.0]], (3, 3, 1))
    """
    U_old, r_old = _check_orthonormal("signatures", signatures, ndim=3)
    U_new, r_new = _check_orthonormal("new_signatures", new_signatures, ndim=3)
    M = U_old.shape[0]
    A_old = check_array("proximity", proximity, shape=(M, M), dtype=np.float64)
    if U_new.shape[1:] != U_old.shape[1:]:
        raise ValueError(f"new_signatures must have shape (B, D, p) = (B, {U_old.shape[1]}, {U_old.shape[2]}) "
                         f"like signatures, got {U_new.shape}")
    check_choice("measure", measure, MEASURES)
    B = U_new.shape[0]
    A = np.zeros((M + B, M + B))
    A[:M, :M] = A_old
    A[:M, M:] = _cross_proximity(U_old, r_old, U_new, r_new, measure)
    A[M:, :M] = A[:M, M:].T
    new_block = np.triu(_cross_proximity(U_new, r_new, U_new, r_new, measure, upper=True), 1)
    A[M:, M:] = new_block + new_block.T
    return A, np.concatenate([U_old, U_new])


def assign_new_clients(proximity: np.ndarray, signatures: np.ndarray, labels: ArrayLike, new_signatures: np.ndarray, *,
                       threshold: float, linkage: str = "average", measure: str = "smallest") -> NewClientAssignment:
    """Cluster ids of new clients, the old clients keeping theirs (Alg. 1, lines 13-17; Alg. 3).

    The server extends the proximity matrix (:func:`pme`) and re-runs HC at the same threshold
    with the same linkage.  The paper states that "the cluster ID of the new clients are
    determined without changing the cluster ID of the old clients", which HC does not guarantee:
    a newcomer close to two old clusters can join them.  Our rule (the old clients' labels are
    never changed):

    * a new client whose HC group holds no old client forms a new cluster with the other new
      clients of its group; new clusters are numbered ``Z, Z + 1, ...`` in the order of their
      lowest new member (``Z`` old clusters);
    * a new client whose HC group holds old clients joins, among the old clusters met in its
      group, the one nearest to it under the linkage,

      .. math::

          \\hat z = \\arg\\min_{c} D(\\{\\text{new}\\}, C_c), \\qquad
          D = \\min / \\operatorname{mean} / \\max_{i \\in C_c} A_{\\text{new}, i}
          \\ (\\text{single / average / complete}),

      ties to the lowest label (:func:`mixreg.kernels.argmin_skip_nan`).

    When HC keeps the old partition (``old_partition_kept``) and the old labels are numbered by
    their lowest member (as :func:`pacfl_clusters` returns them), this is exactly HC's own
    labelling of the extended matrix (old clients first).

    Parameters
    ----------
    proximity : array of shape (M, M)
        The old proximity matrix.
    signatures : array of shape (M, D, p)
        The old signatures.
    labels : int array of shape (M,)
        The old clients' clusters in ``[0, Z)`` (:func:`pacfl_clusters`' ``labels``, or a row of
        :attr:`PACFLResult.assignments`).
    new_signatures : array of shape (B, D, p)
    threshold : float >= 0
        :math:`\\beta`: the old clustering's cut height (``AgglomerativeResult.threshold`` or
        :attr:`PACFLResult.threshold`, which for a run with ``n_clusters`` is the midpoint of the
        last merge made and the first not made).
    linkage : {"single", "average", "complete"}
        The old clustering's linkage.
    measure : {"smallest", "sum"}
        The measure ``proximity`` was computed with.

    Returns
    -------
    NewClientAssignment

    Examples
    --------
    >>> lines = lambda phi: np.stack([np.cos(phi), np.sin(phi)], axis=1)[:, :, None]
    >>> U = lines(np.array([0.0, 0.1, 1.0, 1.1]))            # two old clusters of lines
    >>> A = proximity_matrix(U)
    >>> old = pacfl_clusters(A, threshold=0.3)
    >>> res = assign_new_clients(A, U, old.labels, lines(np.array([1.05, 2.5])), threshold=0.3)
    >>> res.labels.tolist(), res.n_clusters, res.old_partition_kept
    ([1, 2], 3, True)
    """
    A, U = pme(proximity, signatures, new_signatures, measure)
    M = U.shape[0] - np.shape(new_signatures)[0]
    old = check_array("labels", labels, shape=(M,))
    if old.dtype.kind not in "iu" or old.min() < 0:
        raise ValueError(f"labels must be non-negative integers (the old clients' clusters), got {old.tolist()}")
    check_choice("linkage", linkage, LINKAGES)
    hc = agglomerative(distances=A, threshold=threshold, linkage=linkage)
    groups = hc.labels
    Z = int(old.max()) + 1
    kept = bool(np.array_equal(number_groups(groups[:M]), number_groups(old)))

    # the linkage distance of every new client to every old cluster, (B, Z) (nan: empty label)
    reduce = getattr(np, {"single": "min", "average": "mean", "complete": "max"}[linkage])
    to_cluster = np.full((A.shape[0] - M, Z), np.nan)
    for c in np.unique(old):
        to_cluster[:, c] = reduce(A[M:, :M][:, old == c], axis=1)
    new_labels = np.empty(A.shape[0] - M, dtype=np.int64)
    fresh: dict[int, int] = {}  # HC group without old clients -> its new label
    for j, g in enumerate(groups[M:]):
        met = np.unique(old[groups[:M] == g])
        if met.size == 0:
            new_labels[j] = fresh.setdefault(g, Z + len(fresh))
        else:
            candidates = np.full(Z, np.nan)
            candidates[met] = to_cluster[j, met]
            new_labels[j] = kernels.argmin_skip_nan(candidates)
    return NewClientAssignment(labels=new_labels, proximity=A, signatures=U, n_clusters=Z + len(fresh),
                               old_partition_kept=kept)


def _check_orthonormal(name, U, ndim=None):
    """``U`` (..., D, p) as float64 and its ranks (...,), the number of nonzero columns, or
    ``ValueError`` unless its columns are orthonormal, then zero (vectors not sent), at least one
    nonzero."""
    U = check_array(name, U, ndim=ndim, dtype=np.float64)
    if U.ndim < 2 or U.shape[-1] < 1 or U.shape[-2] < U.shape[-1]:
        raise ValueError(f"{name} must have shape (..., D, p) with 1 <= p <= D, got {U.shape}")
    sent = U.any(axis=-2)
    ranks = sent.sum(axis=-1)
    if (ranks < 1).any() or (sent != (np.arange(U.shape[-1]) < ranks[..., None])).any():
        raise ValueError(f"{name}: the zero columns (vectors not sent) of a signature must come last, after at "
                         f"least one nonzero column")
    gram = np.swapaxes(U, -1, -2) @ U
    if np.abs(gram - np.eye(U.shape[-1]) * sent[..., None, :]).max(initial=0.0) > _ORTHONORMAL_TOL:
        raise ValueError(f"{name} must have orthonormal columns (U^T U = I to {_ORTHONORMAL_TOL:g}), "
                         f"then zero columns")
    return U, ranks


def _principal_angles(U_i, U_j, r_i, r_j):
    """Principal angles (..., min(p, q)), ascending: arccos of the clipped singular values, the
    first min(r_i, r_j) of them (zero columns add zero singular values, sorted last); NaN after."""
    s = np.linalg.svd(np.swapaxes(U_i, -1, -2) @ U_j, compute_uv=False)  # descending
    angles = np.arccos(np.clip(s, 0.0, 1.0))
    return np.where(np.arange(angles.shape[-1]) < np.minimum(r_i, r_j)[..., None], angles, np.nan)


def _cross_proximity(U, r_U, V, r_V, measure, *, upper=False):
    """Eq. 2 or 3 between every signature of ``U`` (a, D, p) of ranks ``r_U`` (a,) and of ``V``
    (b, D, q) of ranks ``r_V`` (b,): (a, b), over the min(r_i, r_j) angles of each pair.

    The (rows, b, p, q) Gram matrices are formed in blocks of rows to bound memory.  With
    ``upper=True`` (``V`` is ``U``) a block of rows ``lo:hi`` is only compared with the columns
    ``lo:``; the entries left of them are 0.
    """
    a, b = U.shape[0], V.shape[0]
    out = np.zeros((a, b))
    rows = max(1, _GRAM_BLOCK // max(1, b * U.shape[2] * V.shape[2]))
    for lo in range(0, a, rows):
        first = lo if upper else 0
        angles = _principal_angles(U[lo:lo + rows, None], V[None, first:], r_U[lo:lo + rows, None],
                                   r_V[None, first:])  # (rows, b - first, min(p, q))
        out[lo:lo + rows, first:] = angles[..., 0] if measure == "smallest" else np.nansum(angles, axis=-1)
    return out


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def pacfl(problem: Problem, init: ArrayLike, step_size: float | ArrayLike, *, n_rounds: int,
          rng: np.random.Generator | None = None, tol: float | None = None, history: HistoryRequest = False,
          blowup: float | None = BLOWUP, p: int = 3, matrix: str = "joint", measure: str = "smallest", linkage: str = "average",
          n_clusters: int | None = None, threshold: float | None = None, local_steps: int = 1, small_clients: str = "reduce",
          server_step: ServerStep | None = None, schedule: ScheduleLike | None = None) -> PACFLResult:
    r"""Run ``B`` replicas of PACFL (Algorithm 1 of Vahidian et al.) on one problem.

    .. math::

        U_p^i &= \text{the } r_i = \min(p, \operatorname{rank} \mathbf{D}_i) \text{ leading left
            singular vectors of } \mathbf{D}_i \quad (\text{every client, once}), \\
        A_{ij} &= \Theta_1(U_p^i, U_p^j) \ (\text{Eq. 2}) \quad \text{or} \quad
            \textstyle\sum_r \Theta_r(U_p^i, U_p^j) \ (\text{Eq. 3}), \\
        \{C_1, \dots, C_Z\} &= HC(A, \beta) \quad (\text{the server, once}), \\
        \theta_{z,t+1} &= \sum_{i \in C_z} \frac{n_i}{N_z}\, G_i^s(\theta_{z,t}),
            \qquad N_z = \sum_{i \in C_z} n_i,

    with :math:`G_i(\theta) = \theta - \frac{\eta}{n_i} X_i^\top (X_i\theta - y_i)` one local
    gradient step (FedAvg(s) within each cluster, Alg. 1 lines 21-24, all clients every round).

    Parameters
    ----------
    problem : Problem
    init : array of shape (B, k, d) or (k, d)
        Cluster ``z`` starts from ``init[b, z]`` (clusters numbered by their lowest client, as
        ``pacfl_clusters`` returns them).  With a single model (``k = 1``) every cluster
        starts from it, the paper's line 12 (:math:`\theta_{g,z}^0 = \theta_g^0`), and the result
        has ``Z`` models.  With ``k >= Z``, models ``Z..k-1`` hold no client and keep their start.
        ``1 < k < Z`` is an error (pass ``Z`` models, or one).
    step_size : float or array of shape (B,)
        :math:`\eta` of each replica, > 0.  With ``s = 1`` a round is a gradient step on
        :math:`\frac{1}{2N_z}\lVert X_{C_z}\theta - y_{C_z}\rVert^2`, stable for
        :math:`\eta < 2 N_z / \lambda_{max}(X_{C_z}^\top X_{C_z})` (about 2 for unit-variance
        features and :math:`N_z \gg d`).
    n_rounds : int >= 1
        FedAvg rounds.
    rng : ignored
        PACFL draws nothing (the clustering is deterministic and done once for all replicas).
    tol : float >= 0, optional
        Stop FedAvg once every live replica moved by at most ``tol`` in a round.
    history : bool, "all" or sequence of str
        Record :class:`mixreg.algorithms.History` of the FedAvg phase: ``True``, the matched max
        distance, iterates, misclustering of the HC labels and the objective of ``train_loss``;
        ``"all"`` or names among :data:`mixreg.algorithms.HISTORY_FIELDS`: those (the identities
        of every round are the HC labels, fixed before the rounds; the client losses are each
        client's squared residuals under its rows' labels, summing over the clients to :math:`2N`
        times the objective).
    blowup : float > 1 or None
        Divergence factor of :class:`mixreg.algorithms.Replicas` (default
        :data:`mixreg.algorithms.DEFAULT_BLOWUP`); ``None``: only non-finite values count.
    p : int >= 1
        Singular vectors per client (``client_signatures``).  Default 3, the paper's value
        (supplement: ``p = 3`` for its Tables 1, 2 and 6), also the best small ``p`` measured with
        Eq. 2 on the joint matrix (module docstring).  With Eq. 3, ``p = d`` clusters the
        clients' local regression directions and recovers the clusters at lower SNR.
    matrix : {"joint", "x"}
        The client data matrix (``client_signatures``); default ``"joint"`` (ours).
    measure : {"smallest", "sum"}
        Eq. 2 (default) or Eq. 3 with the true principal angles (``proximity_matrix``).
    linkage : {"single", "average", "complete"}
        HC linkage, default ``"average"`` (module docstring).
    n_clusters : int in [1, m], optional
        Cut HC into this many groups.  With neither ``n_clusters`` nor ``threshold``,
        ``n_clusters = k``, the number of models in ``init``.
    threshold : float >= 0, optional
        :math:`\beta` in radians: cut HC at this height (``Z`` is then an output).
    local_steps : int >= 1
        ``s`` of FedAvg(s).
    small_clients : {"reduce", "refuse"}
        A client whose data span fewer than ``p`` directions (:math:`n_i < p`, or degenerate
        data) sends those :math:`r_i < p` vectors and its proximities use the :math:`\min(r_i,
        r_j)` principal angles (``"reduce"``, default, ours; ``client_signatures``,
        ``proximity_matrix``), or the problem is refused (``"refuse"``).
    server_step : mixreg.algorithms.ServerStep, optional
        What the server does with each FedAvg round's average within the clusters
        (:meth:`~mixreg.algorithms.ServerStep.average`); default the plain step, which takes it.
    schedule : mixreg.algorithms.Schedule or callable, optional
        Step-size schedule of the FedAvg rounds: round ``t``'s local steps use
        :math:`\eta\, s(t)` (:class:`~mixreg.algorithms.Schedule`).  Default constant.

    Returns
    -------
    PACFLResult

    Raises
    ------
    ValueError
        Besides bad arguments, when HC formed ``Z`` clusters and ``init`` has ``1 < k < Z``
        models; the message gives ``Z``.
    mixreg.algorithms.ProblemRefused
        A client's data are all zero; with ``small_clients="refuse"``, a client that cannot send
        ``p`` vectors (the message names ``p`` and the smallest client size).

    Notes
    -----
    Communication of an average client: it uploads its signature once (``D r_i`` floats, ``D = d
    + 1`` for the joint matrix, :math:`r_i = p` unless it has fewer directions) and per FedAvg
    round its cluster id and its local model (``d + 1``), and downloads its cluster's model
    (``d``) per round.

    A replica whose models or objective stop being finite is frozen at its last finite models
    and flagged (``diverged``), as in every driver of :mod:`mixreg.algorithms`.

    Examples
    --------
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=20, k=2, n=50, d=5, sigma=0.1, scale=2.0, protocol="gaussian",
    ...                   rng=np.random.default_rng(0))
    >>> res = pacfl(pb, np.zeros((2, 5)), 1.0, n_rounds=50)
    >>> res.assignments[0].tolist() == pb.labels.tolist(), res.n_clusters_found
    (True, 2)
    >>> bool(np.abs(res.theta[0] - pb.theta_star).max() < 0.1)
    True
    """
    t0 = time.perf_counter()
    # validate
    theta, eta, T, tol = check_run(problem, init, step_size, n_rounds, tol)
    B, k, d = theta.shape
    s = check_int("local_steps", local_steps, low=1)
    check_choice("matrix", matrix, MATRICES)
    check_choice("measure", measure, MEASURES)
    check_choice("linkage", linkage, LINKAGES)
    check_choice("small_clients", small_clients, SMALL_CLIENTS)
    server_step = check_server_step(server_step)
    schedule = check_schedule(schedule)
    fields = check_history(history, HISTORY)
    blowup = check_blowup(blowup)
    if n_clusters is not None and threshold is not None:
        raise ValueError("give at most one of n_clusters and threshold")
    if threshold is not None:
        threshold = check_real("threshold", threshold, low=0.0)
    else:
        n_clusters = check_int("n_clusters", k if n_clusters is None else n_clusters, low=1, high=problem.m)

    # lines 8-11, once for all replicas: signatures, proximity matrix, HC
    signatures = client_signatures(problem, p, matrix=matrix, small_clients=small_clients)
    A = proximity_matrix(signatures, measure)
    clustering = pacfl_clusters(A, n_clusters=n_clusters, threshold=threshold, linkage=linkage)
    labels, Z = clustering.labels, clustering.n_groups
    if k == 1 and Z > 1:
        theta = np.array(np.broadcast_to(theta, (B, Z, d)))  # line 12: every cluster from theta_g^0
    elif k < Z:
        raise ValueError(f"HC formed Z={Z} clusters but init has k={k} models; pass init with {Z} models "
                         f"(one per cluster) or a single model that every cluster starts from")

    # lines 12-25: FedAvg within each cluster
    trained = train_on_labels(problem, np.repeat(labels, problem.sizes), theta, eta, local_steps=s, n_rounds=T,
                              tol=tol, history=fields, blowup=blowup, client_labels=labels,
                              server_step=server_step, schedule=schedule)
    return PACFLResult(
        theta=trained.theta,
        assignments=np.array(np.broadcast_to(labels, (B, problem.m)), dtype=np.int64),
        train_loss=trained.train_loss,
        **common_fields(trained.replicas, eta, t0, trained.history),
        proximity=A,
        n_clusters_found=Z,
        threshold=clustering.threshold,
        linkage=linkage,
        matrix=matrix,
        measure=measure,
        p=int(signatures.shape[2]),
        small_clients=small_clients,
        ranks=signatures.any(axis=1).sum(axis=1),
    )


# --------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------


def _communication(matrix):
    """Upload ``D r_i`` once (the signature, averaged over the clients: ``r_i = p`` unless client
    ``i`` sent fewer vectors) plus ``d`` per round (the server assigned the cluster, so a client
    sends only its model); download ``d`` per round."""

    def communication(problem, result, replica):
        D = problem.d + 1 if matrix == "joint" else problem.d
        return float(D * result.ranks.mean() + problem.d * result.n_rounds), float(problem.d * result.n_rounds)

    return communication


def _precondition(matrix, p):
    """The registry's precondition: ``p`` vectors need a space of dimension ``D > p`` (``D = d + 1``
    for the joint matrix, ``d`` for the features alone), see :func:`client_signatures`."""
    extra = 1 if matrix == "joint" else 0

    def precondition(*, d, k, n_min):
        if d + extra - 1 >= p:
            return None
        return Unmet("d", d, f"d >= {p - extra + 1} for p = {p} signature vectors")

    return precondition


def registrations() -> list[Algorithm]:
    """The registry entries: PACFL on the joint (x, y) matrix and on the features alone."""
    common = dict(measure="smallest", linkage="average", p=3, small_clients="reduce")
    return [
        Algorithm(
            name="pacfl",
            run=_bind(pacfl, uses_rng=False, matrix="joint", **common),
            uses_rng=False,
            options={"matrix": "joint", **common},
            communication=_communication("joint"),
            precondition=_precondition("joint", common["p"]),
            source=("Vahidian et al. 2023 (AAAI), Algorithm 1 with Eq. 2 and HC cut into k clusters; "
                    "signatures of the joint (x, y) data matrix; clients of n_i < p send n_i vectors (ours)"),
            sends=("once: its p leading left singular vectors of the (d+1) x n_i matrix of its (x, y) samples "
                   "(min(p, rank) <= n_i of them if fewer); "
                   "then per round one d-vector local model, receiving its cluster's model (the server formed the "
                   "clusters)"),
        ),
        Algorithm(
            name="pacfl_x",
            run=_bind(pacfl, uses_rng=False, matrix="x", **common),
            uses_rng=False,
            options={"matrix": "x", **common},
            communication=_communication("x"),
            precondition=_precondition("x", common["p"]),
            source=("Vahidian et al. 2023 (AAAI), Algorithm 1 with Eq. 2 and HC cut into k clusters; "
                    "signatures of the features alone (the paper's data matrix); clients of n_i < p send n_i "
                    "vectors (ours)"),
            sends=("once: its p leading left singular vectors of its d x n_i feature matrix X_i^T (min(p, rank) "
                   "<= n_i of them if fewer); "
                   "then per round one d-vector local model, receiving its cluster's model (the server formed the "
                   "clusters)"),
        ),
    ]
