"""Clustered mixed linear regression problems.

Model (IFCA, Ghosh et al. 2020, Sec. 5.1; Su, Xu and Yang 2022, "model" slide): ``m`` clients,
``k`` clusters, client ``i`` has a hidden label ``z_i`` and ``n_i`` samples

.. math::

    y_{ij} = \\langle x_{ij}, \\theta^*_{z_i} \\rangle + \\zeta_{ij},
    \\qquad x_{ij} \\sim N(0, \\Sigma_{z_i}),\\ \\zeta_{ij} \\sim N(0, \\sigma^2).

The data of all clients are stored stacked: ``X`` has shape ``(N, d)`` with ``N = sum_i n_i``
and client ``i`` owns rows ``offsets[i]:offsets[i + 1]``.  Never a list of per-client arrays.

Three protocols for the true parameters ``theta_star`` are provided, because the IFCA paper text
and the official IFCA code disagree (see docs/decisions.md, the theta* row):

``"official"``
    Each coordinate is 0 or ``scale`` with probability 1/2 (official IFCA code,
    ``generate_synthetic_dataset.py``).  ``scale`` is the per-coordinate ``r`` of the code's grids;
    the separation is about ``r * sqrt(d / 2)``.
``"paper"``
    Bernoulli(1/2) coordinates, then each vector rescaled to Euclidean norm ``scale`` (the IFCA
    paper text, Sec. 6.1: "rescale their l2 norm to R").  An all-zero draw is redrawn.
``"gaussian"``
    Gaussian directions, the whole set rescaled so that the minimum pairwise separation is exactly
    ``scale``.

Clients that mix clusters (the IFCA thesis, chapter 4): with ``ProblemSpec(main_fraction=p)`` a
fraction ``p`` of each client's rows comes from its main cluster ``z_i`` and the rest from the
mixture of all clusters; each row's true cluster is kept in ``Problem.point_labels`` (and
``Problem.row_labels`` gives the rows' clusters of any problem).

Full feature covariances :math:`\\Sigma_l` (AR(1), Toeplitz, or your own matrices, validated
symmetric positive definite): ``ProblemSpec(covariance="ar1:0.5")`` (text, which a sweep cell
holds and a sweep varies over a grid) or ``ProblemSpec(covariance=matrix)`` (in-process), see
:func:`ar1_covariance`, :func:`toeplitz_covariance`, :func:`check_covariance`.

Every problem reports its realised minimum separation ``separation`` (Delta), the realised cluster
proportions, ``p_min`` and ``snr = Delta^2 / sigma^2`` (IFCA's rho).

A :class:`Problem` validates its fields when it is built (by the generators here, or by hand
through :meth:`Problem.from_arrays`).  A legal but degenerate problem (two equal rows of
``theta_star``, a cluster without clients, a separation that overflows) is built with a
:class:`DegenerateProblemWarning`, and :attr:`Problem.degenerate` names the reason so that an
experiment can count such trials.
"""

from ._anchors import ANCHOR_MODES, add_anchors
from ._checks import DegenerateProblemWarning, check_rng
from ._covariance import COVARIANCE_KINDS, ar1_covariance, check_covariance, covariance_from_text, toeplitz_covariance
from ._generate import (
    exact_counts,
    exact_labels,
    make_labels,
    make_problem,
    make_problem_from_parameters,
    make_theta_star,
    mixed_point_labels,
)
from ._problem import THETA_PROTOCOLS, Problem, min_separation
from ._sizes import SIZE_LAWS, SizeLaw, client_sizes, diagonal_covariances, size_law
from .spec import CellSchema, ProblemSpec, cluster_proportions

__all__ = [
    "Problem",
    "DegenerateProblemWarning",
    "check_rng",
    "make_problem",
    "make_theta_star",
    "mixed_point_labels",
    "make_labels",
    "exact_labels",
    "exact_counts",
    "make_problem_from_parameters",
    "THETA_PROTOCOLS",
    "min_separation",
    "SIZE_LAWS",
    "SizeLaw",
    "size_law",
    "client_sizes",
    "diagonal_covariances",
    "ar1_covariance",
    "toeplitz_covariance",
    "check_covariance",
    "covariance_from_text",
    "COVARIANCE_KINDS",
    "ANCHOR_MODES",
    "add_anchors",
    "ProblemSpec",
    "CellSchema",
    "cluster_proportions",
]
