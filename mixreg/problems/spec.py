"""What to generate, as one frozen object: :class:`ProblemSpec`.

A specification says everything that defines a random clustered regression problem (sizes,
``k``, cluster proportions, client-size law, covariances (random diagonal ones, or full ones
given as text such as ``"ar1:0.5"``), the theta* protocol and scale, the
noise, the storage type, anchor clients), validates it once, generates a :class:`Problem` from a
``numpy.random.Generator`` in one call, and round-trips exactly to a Monte Carlo cell: a trial
function receives the cell and rebuilds the same specification, so no parameter is spelled
twice and nothing is parsed from text.

The cell keys are the field names, except where an experiment's :class:`CellSchema` renames a
field (its results directories were written under those keys, and a trial's seed is a hash of
its cell, so renaming a key would change every number) or fixes a field for the whole
experiment (it is then not in the cell).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np

from .._typing import FloatArray
from ..validation import check_choice, check_dtype, check_int, check_real
from ._anchors import ANCHOR_MODES, add_anchors
from ._checks import check_rng
from ._covariance import cluster_covariances
from ._generate import make_labels, make_problem_from_parameters, make_theta_star, mixed_point_labels
from ._problem import THETA_PROTOCOLS, Problem
from ._sizes import SIZE_LAWS, diagonal_covariances, size_law

__all__ = ["ProblemSpec", "CellSchema", "cluster_proportions"]


def cluster_proportions(k: int, p_min: float | None) -> FloatArray:
    """Label probabilities: cluster 0 gets ``p_min``, the others share the rest equally.

    (Our one-parameter family of unbalanced clusters; Su, Xu and Yang do not give theirs.)
    """
    k = check_int("k", k, low=1)
    if k == 1:
        return np.ones(1)
    p_min = check_real("p_min", p_min)
    if not 0.0 < p_min <= 1.0 / k:
        raise ValueError(f"p_min must be in (0, 1/k] = (0, {1.0 / k:.4g}], got {p_min!r}")
    return np.concatenate([[p_min], np.full(k - 1, (1.0 - p_min) / (k - 1))])


@dataclass(frozen=True, kw_only=True)
class ProblemSpec:
    """A clustered mixed linear regression problem to draw (see :mod:`mixreg.problems`).

    Attributes
    ----------
    m : int >= 1
        Clients.
    k : int in [1, m]
        Clusters.
    d : int >= 1
        Dimension.
    sigma : float >= 0
        Noise standard deviation.
    scale : float >= 0
        theta*'s scale under ``protocol`` (:func:`make_theta_star`): the official code's ``r``,
        the paper's norm ``R``, or the exact minimum separation (``"gaussian"``).
    protocol : {"official", "paper", "gaussian"}
    n : int >= 1, optional
        Every client's sample count.  Exactly one of ``n`` and ``size_law`` is given.
    size_law : {"equal", "zipf", "pareto", "lognormal"}, optional
        Client sizes drawn i.i.d. from :func:`size_law` on ``[n_min, n_max]`` with mean
        ``size_mean``.
    size_mean : float, optional
    n_min, n_max : int
        Support of the size law (``n_max`` is required with ``size_law``).
    p_min : float in (0, 1/k], optional
        Labels i.i.d. from :func:`cluster_proportions` (cluster 0 with probability ``p_min``);
        balanced contiguous labels (the official code's) when omitted.
    cov_low, cov_high : float, 0 < cov_low <= cov_high
        Per-cluster diagonal covariances with spectrum log-uniform on ``[cov_low, cov_high]``
        (:func:`diagonal_covariances`); both 1 (default) is the identity, drawn nothing.
    covariance : str or array, optional
        Full feature covariances :math:`\\Sigma_l` (with ``cov_low = cov_high = 1`` only), drawn
        nothing: text a cell can hold, ``"ar1:RHO[,SCALE]"`` (:func:`ar1_covariance`) or
        ``"toeplitz:C0,C1,..."`` (:func:`toeplitz_covariance`, the lags beyond those given 0),
        one matrix for every cluster; or, in-process only (a cell cannot hold it:
        :meth:`to_cell` refuses), one ``(d, d)`` matrix for every cluster or ``(k, d, d)``
        matrices, each validated by :func:`check_covariance` and kept as a read-only copy.
        Omitted: ``cov_low`` and ``cov_high`` decide.  :attr:`covariance_matrices` gives the
        matrices.
    dtype : {"float64", "float32"}
        Storage type (data are drawn in float64 and cast).
    anchor_mode : {"random", "per_cluster"}, optional
        Anchor clients of Su-Xu-Yang's Phase 1 (:func:`add_anchors`), applied by
        :meth:`with_anchors`.
    n_anchors : int
        ``M_A`` for ``anchor_mode="random"`` (0 otherwise).
    anchor_points : int
        ``n_A``, the points an anchor holds at least.
    main_fraction : float in [0, 1], optional
        Clients that mix clusters (the IFCA thesis, section 4.1, its ``p``): the first
        :math:`\\lfloor p\\, n_i \\rfloor` rows of a client come from its main cluster and the
        rest from the mixture of all clusters (:func:`mixed_point_labels`; the mixture has the
        clusters' proportions); the true row labels are kept in ``Problem.point_labels``.
        Omitted: every row is from its client's cluster.

    Examples
    --------
    >>> spec = ProblemSpec(m=100, k=2, n=100, d=1000, sigma=0.1, scale=0.25)
    >>> pb = spec.generate(np.random.default_rng(0))
    >>> pb.X.shape, round(pb.separation, 1)
    ((10000, 1000), 5.6)
    >>> ProblemSpec.from_cell(spec.to_cell()) == spec
    True
    >>> ar1 = ProblemSpec(m=4, k=2, n=50, d=3, sigma=0.1, scale=1.0, covariance="ar1:0.5")
    >>> ar1.to_cell()["covariance"], ar1.covariance_matrices[1, 0].tolist()
    ('ar1:0.5', [1.0, 0.5, 0.25])
    """

    m: int
    k: int
    d: int
    sigma: float
    scale: float
    protocol: str = "official"
    n: int | None = None
    size_law: str | None = None
    size_mean: float | None = None
    n_min: int = 1
    n_max: int | None = None
    p_min: float | None = None
    cov_low: float = 1.0
    cov_high: float = 1.0
    covariance: str | np.ndarray | None = None
    dtype: str = "float64"
    anchor_mode: str | None = None
    n_anchors: int = 0
    anchor_points: int = 0
    main_fraction: float | None = None

    def __post_init__(self):
        for name in ("sigma", "scale", "size_mean", "p_min", "cov_low", "cov_high", "main_fraction"):
            value = getattr(self, name)  # an integer given for a real is that real: one spec, one cell, one seed
            if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
                object.__setattr__(self, name, float(value))
        for name in ("m", "k", "d", "n", "n_min", "n_max", "n_anchors", "anchor_points"):
            value = getattr(self, name)  # a NumPy integer is its Python int (a cell holds plain values)
            if isinstance(value, np.integer):
                object.__setattr__(self, name, int(value))
        check_int("m", self.m, low=1)
        check_int("k", self.k, low=1, high=self.m)
        check_int("d", self.d, low=1)
        check_real("sigma", self.sigma, low=0.0)
        check_real("scale", self.scale, low=0.0)
        if not np.isfinite(self.scale):
            raise ValueError(f"scale must be finite, got {self.scale!r}")
        check_choice("protocol", self.protocol, THETA_PROTOCOLS)
        if (self.n is None) == (self.size_law is None):
            raise ValueError("give exactly one of n (equal client sizes) and size_law (random sizes)")
        if self.n is not None:
            check_int("n", self.n, low=1)
        else:
            check_choice("size_law", self.size_law, SIZE_LAWS)
            if self.n_max is None or self.size_mean is None:
                raise ValueError(f"size_law={self.size_law!r} needs size_mean and n_max")
            n_min = check_int("n_min", self.n_min, low=1)
            n_max = check_int("n_max", self.n_max, low=n_min)
            check_real("size_mean", self.size_mean, low=float(n_min), high=float(n_max))
            self._size_law  # calibrates the law once; raises naming the unreachable mean
        if self.p_min is not None:
            cluster_proportions(self.k, self.p_min)
        low = check_real("cov_low", self.cov_low, low=0.0, low_inclusive=False)
        check_real("cov_high", self.cov_high, low=low)
        check_dtype("dtype", self.dtype)
        if self.anchor_mode is not None:
            check_choice("anchor_mode", self.anchor_mode, ANCHOR_MODES)
            check_int("anchor_points", self.anchor_points, low=2)
            if self.anchor_mode == "random":
                check_int("n_anchors", self.n_anchors, low=1, high=self.m)
        if self.main_fraction is not None:
            check_real("main_fraction", self.main_fraction, low=0.0, high=1.0)
        if self.covariance is not None:
            if self.cov_low != 1.0 or self.cov_high != 1.0:
                raise ValueError(f"give either covariance or cov_low/cov_high, not both: covariance="
                                 f"{_short(self.covariance)} with cov_low={self.cov_low!r}, cov_high={self.cov_high!r}")
            if isinstance(self.covariance, str):
                object.__setattr__(self, "covariance", str(self.covariance))  # np.str_ too: a cell holds plain values
            else:
                ndim = np.ndim(self.covariance)
                kept = np.array(self.covariance_matrices[0] if ndim == 2 else self.covariance_matrices)
                kept.setflags(write=False)
                object.__setattr__(self, "covariance", kept)
            self.covariance_matrices  # validates the matrices once

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in dataclasses.fields(self))

    def __hash__(self):
        return hash(tuple(_hashable(getattr(self, f.name)) for f in dataclasses.fields(self)))

    @cached_property
    def covariance_matrices(self) -> FloatArray | None:
        """The ``(k, d, d)`` float64 matrices :attr:`covariance` gives (read-only), or ``None``
        without it (the identity, or random diagonal matrices drawn by :meth:`generate`)."""
        if self.covariance is None:
            return None
        return cluster_covariances(self.covariance, self.k, self.d)

    @cached_property
    def _size_law(self):
        return size_law(self.size_law, n_min=self.n_min, n_max=self.n_max, mean=self.size_mean)

    @property
    def identity_covariance(self) -> bool:
        """``True`` when every cluster's features are N(0, I) (:attr:`covariance` omitted, and
        ``cov_low = cov_high = 1``)."""
        return self.covariance is None and self.cov_low == self.cov_high == 1.0

    @property
    def max_rows(self) -> int:
        """The most rows ``N`` a generated problem has, anchors included: ``m n``; under a size
        law, ``m`` times the law's mean plus six standard deviations of the sum of the ``m``
        sizes (exceeded with probability about 1e-9 where the sum is nearly normal), at most
        ``m n_max``; plus ``anchor_points`` rows per anchor (:meth:`with_anchors` tops an anchor
        up to at least that many; counted as new rows)."""
        if self.size_law is None:
            assert self.n is not None  # a fixed size without a size law (checked when made)
            rows = self.m * self.n
        else:
            law = self._size_law
            assert self.n_max is not None  # a size law has its bounds (checked when made)
            sd = math.sqrt(max(law.second_moment - law.mean ** 2, 0.0))
            rows = min(self.m * self.n_max, math.ceil(self.m * law.mean + 6.0 * sd * math.sqrt(self.m)))
        if self.anchor_mode is not None:
            rows += (self.k if self.anchor_mode == "per_cluster" else self.n_anchors) * self.anchor_points
        return int(rows)

    def memory_bytes(self, *, levels: int = 1) -> float:
        """Upper estimate of the peak bytes of drawing the problem and holding it, from the sizes
        alone (nothing is allocated): a trial's data before any algorithm runs.

        The draw holds ``X`` in float64 and a cluster's rows copied for the responses
        (``16 N d``), then ``X`` in :attr:`dtype` (``s N d``, ``s`` its size in bytes); with
        anchors, :meth:`with_anchors` copies ``X`` once more (``s N d``).  Per row: the
        responses of each level, the noise and the row labels (``8 (levels + 3) N``); per
        client: sizes, offsets, labels (``24 m``); the covariances ``k d`` when not the
        identity, and ``3 k d^2`` with :attr:`covariance` (the matrices, their Cholesky factors
        and the symmetry check's copy).  ``N`` is :attr:`max_rows`.

        Parameters
        ----------
        levels : int >= 1, default=1
            Problems drawn at once by :meth:`generate_levels` (they share ``X``).

        Returns
        -------
        float
            Bytes of the draw at its peak, an upper estimate.

        Examples
        --------
        >>> spec = ProblemSpec(m=100, k=2, n=100, d=1000, sigma=0.1, scale=0.25)
        >>> f"{spec.memory_bytes() / 1e6:.0f} MB"  # (16 + 8) N d with N d = 1e7
        '240 MB'
        """
        levels = check_int("levels", levels, low=1)
        N, d = self.max_rows, self.d
        size = np.dtype(self.dtype).itemsize
        copies = 16 + size + (size if self.anchor_mode is not None else 0)
        covariances = 0 if self.identity_covariance else 8 * self.k * d
        if self.covariance is not None:
            covariances = 24 * self.k * d * d
        return float(copies * N * d + 8 * (levels + 3) * N + 24 * self.m + covariances + 16 * self.k * d)

    def generate(self, rng: np.random.Generator) -> Problem:
        """Draw the problem, in the order theta*, labels, client sizes, the random diagonal
        covariances (only when ``cov_low``, ``cov_high`` are not both 1; :attr:`covariance` draws
        nothing), the mixed rows' clusters (only with ``main_fraction``), data.

        Parameters
        ----------
        rng : numpy.random.Generator

        Returns
        -------
        Problem
            Without anchors (see :meth:`with_anchors`).
        """
        return self._generate(rng, self.sigma)

    def _generate(self, rng, sigma, scales=None):
        """:meth:`generate` at noise level ``sigma`` (a float, or a tuple of levels), or at the
        separation scales ``scales`` (a tuple; ``sigma`` then a float)."""
        check_rng(rng)
        if scales is None:
            theta_star = make_theta_star(self.k, self.d, self.scale, protocol=self.protocol, rng=rng)
        else:  # every level's theta* from the same generator state: the draws use as many numbers
            state = rng.bit_generator.state
            theta_star = []
            for scale in scales:
                rng.bit_generator.state = state
                theta_star.append(make_theta_star(self.k, self.d, scale, protocol=self.protocol, rng=rng))
            theta_star = tuple(theta_star)
        proportions = None if self.p_min is None else cluster_proportions(self.k, self.p_min)
        labels = make_labels(self.m, self.k, proportions=proportions, rng=rng)
        sizes = self.n if self.size_law is None else self._size_law.sample(self.m, rng=rng)
        cov = self.covariance_matrices
        if cov is None and not self.identity_covariance:
            cov = diagonal_covariances(self.k, self.d, rng=rng, low=self.cov_low, high=self.cov_high)
        point_labels = None
        if self.main_fraction is not None:
            point_labels = mixed_point_labels(labels, np.broadcast_to(sizes, labels.shape), self.main_fraction,
                                              proportions=proportions, rng=rng)
        return make_problem_from_parameters(theta_star, labels, sizes, sigma, rng=rng, covariances=cov,
                                            dtype=self.dtype, protocol=self.protocol, point_labels=point_labels)

    def generate_levels(self, rng: np.random.Generator, sigmas: Sequence[float] | None = None, *,
                        scales: Sequence[float] | None = None) -> list[Problem]:
        """One draw at several noise levels, or at several separation scales: a list of problems,
        one per level, that share ``X``, the labels and the noise vector, in the order of
        :meth:`generate`.

        * ``sigmas``: ``y = X theta* + sigma * noise`` with one theta*; the problem at level
          ``s`` equals ``replace(self, sigma=s).generate(rng)`` from the same generator state,
          and the spec's own ``sigma`` is not used.  (The official IFCA code draws its data this
          way, once per seed for every noise level.)
        * ``scales``: theta* drawn at each scale from the same generator state (under the
          ``"official"`` protocol one Bernoulli pattern ``b`` and ``theta* = r b``, as the
          official code draws it once per seed for every r); the problem at scale ``r`` equals
          ``replace(self, scale=r).generate(rng)`` from the same generator state, and the spec's
          own ``scale`` is not used.

        Parameters
        ----------
        rng : numpy.random.Generator
        sigmas : sequence of float >= 0
        scales : sequence of float >= 0, keyword-only
            Exactly one of ``sigmas`` and ``scales``.

        Returns
        -------
        list of Problem
        """
        if (sigmas is None) == (scales is None):
            raise ValueError("give exactly one of sigmas and scales")
        if sigmas is not None:
            levels = tuple(float(check_real("sigmas", s, low=0.0)) for s in sigmas)
            if not levels:
                raise ValueError("sigmas must hold at least one noise level")
            return self._generate(rng, levels)
        assert scales is not None
        levels = tuple(float(check_real("scales", s, low=0.0)) for s in scales)
        if not levels:
            raise ValueError("scales must hold at least one separation scale")
        return self._generate(rng, self.sigma, levels)

    def with_anchors(self, problem: Problem, rng: np.random.Generator) -> tuple[Problem, np.ndarray]:
        """``(problem, anchors)``: the spec's anchor clients topped up (:func:`add_anchors`)."""
        if self.anchor_mode is None:
            raise ValueError("this ProblemSpec has no anchors (anchor_mode is None)")
        n_anchors = None if self.anchor_mode == "per_cluster" else self.n_anchors
        return add_anchors(problem, self.anchor_points, mode=self.anchor_mode, n_anchors=n_anchors, rng=rng)

    # ---------------------------------------------------------------------------- cells

    def to_cell(self, schema: CellSchema | None = None) -> dict[str, object]:
        """The spec as an engine cell: ``{key: value}`` of the fields the schema keeps.

        Parameters
        ----------
        schema : CellSchema, optional
            Default: every field, under its own name, ``None`` fields left out.

        Raises
        ------
        ValueError
            If a field the schema leaves out of the cell differs from the value the schema fixes
            (the cell could not say it).
        """
        schema = _check_schema(schema)
        if self.covariance is not None and not isinstance(self.covariance, str):
            raise ValueError("covariance given as matrices cannot be stored in a cell (a cell holds numbers and text): "
                             "give it as text such as 'ar1:0.5' or 'toeplitz:1,0.5', or generate in-process")
        if (self.covariance is not None and schema.keys and "covariance" not in schema.keys
                and "covariance" not in schema.fixed):
            raise ValueError(f"covariance={self.covariance!r} cannot be stored in this experiment's cells, "
                             f"whose schema has no key for it")
        values = dataclasses.asdict(self)
        for name, fixed in schema.fixed.items():
            if values[name] != fixed:
                raise ValueError(f"{name}={values[name]!r} cannot be stored in this experiment's cells, "
                                 f"which fix {name}={fixed!r}")
        keys = schema.keys or {name: name for name, value in values.items() if value is not None}
        return {key: values[name] for name, key in keys.items()}

    @classmethod
    def from_cell(cls, cell: Mapping[str, Any], schema: CellSchema | None = None) -> ProblemSpec:
        """The spec a cell made by :meth:`to_cell` with the same schema stands for (other keys
        of the cell, the method's parameters, are ignored)."""
        schema = _check_schema(schema)
        if not isinstance(cell, Mapping):
            raise TypeError(f"cell must be a dict (an engine cell), got {type(cell).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        keys = schema.keys or {name: name for name in names}
        values = {name: cell[key] for name, key in keys.items() if key in cell}
        required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
        missing = [keys.get(name, name) for name in required if name not in values and name not in schema.fixed]
        if missing:
            raise ValueError(f"cell must hold the key(s) {missing} of a ProblemSpec, got keys {sorted(cell)}")
        return cls(**schema.fixed, **values)


def _same(a, b):
    """Field equality, arrays (a covariance) compared by shape and values."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
                and bool(np.array_equal(a, b)))
    return a == b


def _hashable(value):
    return (value.shape, value.tobytes()) if isinstance(value, np.ndarray) else value


def _short(value):
    return repr(value) if isinstance(value, str) else f"<array of shape {np.shape(value)}>"


def _check_schema(schema):
    """``schema``, the default :class:`CellSchema` for None, or ``TypeError``."""
    if schema is None:
        return CellSchema.default()
    if not isinstance(schema, CellSchema):
        raise TypeError(f"schema must be a CellSchema, got {type(schema).__name__}")
    return schema


@dataclass(frozen=True)
class CellSchema:
    """How an experiment stores a :class:`ProblemSpec` in its cells.

    Attributes
    ----------
    keys : mapping of field name to cell key, optional
        The fields that vary between the experiment's cells, in column order, under their cell
        keys.  Empty: every non-``None`` field under its own name.
    fixed : mapping of field name to value
        Fields the experiment fixes (not in the cell).
    """

    keys: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    fixed: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self):
        names = {f.name for f in dataclasses.fields(ProblemSpec)}
        for what, mapping in (("keys", self.keys), ("fixed", self.fixed)):
            unknown = sorted(set(mapping) - names)
            if unknown:
                raise ValueError(f"CellSchema {what} names unknown ProblemSpec fields {unknown}")
        object.__setattr__(self, "keys", MappingProxyType(dict(self.keys)))
        object.__setattr__(self, "fixed", MappingProxyType(dict(self.fixed)))

    @classmethod
    def default(cls) -> CellSchema:
        return cls()
