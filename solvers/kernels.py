"""Kernel functions and their specification.

A `Kernel` is plain data (name and parameters); `kernel_block(kernel, X, Z)` evaluates
K(X, Z) in vectorised form with BLAS, as bertini I.A writes the Gaussian kernel:
``||x||^2 - 2 X Z^T + ||z||^2`` inside the exponential. No n x n Python loop anywhere.

    linear:  k(x, z) = x . z
    rbf:     k(x, z) = exp(-gamma ||x - z||^2)
    poly:    k(x, z) = (gamma x . z + coef0) ** degree
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

KERNELS = ("linear", "rbf", "poly")


@dataclass(frozen=True)
class Kernel:
    """A kernel and its resolved parameters (gamma is always a number here)."""

    name: str = "linear"
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 0.0

    def __post_init__(self):
        if self.name not in KERNELS:
            raise ValueError(f"kernel={self.name!r} is not one of {list(KERNELS)}")
        if self.name != "linear":
            if not (np.isfinite(self.gamma) and self.gamma > 0):
                raise ValueError(f"gamma={self.gamma!r} must be a finite number > 0")
            if not np.isfinite(self.coef0):
                raise ValueError(f"coef0={self.coef0!r} must be finite")
        if self.name == "poly" and (int(self.degree) != self.degree or self.degree < 1):
            raise ValueError(f"degree={self.degree!r} must be an integer >= 1")

    @property
    def is_linear(self) -> bool:
        return self.name == "linear"

    def as_dict(self) -> dict:
        if self.name == "linear":
            return {"kernel": "linear"}
        d = {"kernel": self.name, "gamma": float(self.gamma)}
        if self.name == "poly":
            d.update(degree=int(self.degree), coef0=float(self.coef0))
        return d


def resolve_gamma(gamma, X) -> float:
    """`gamma` as a number: "scale" is 1 / (n_features * X.var()) and "auto" is
    1 / n_features, as in scikit-learn's SVC."""
    n_features = X.shape[1]
    if isinstance(gamma, str):
        if gamma == "scale":
            if sp.issparse(X):
                mean = X.mean()
                var = X.multiply(X).mean() - mean**2
            else:
                var = float(np.asarray(X).var())
            return 1.0 / (n_features * var) if var > 0 else 1.0
        if gamma == "auto":
            return 1.0 / n_features
        raise ValueError(f"gamma={gamma!r} must be 'scale', 'auto' or a number > 0")
    return float(gamma)


def row_norms_sq(X) -> np.ndarray:
    """||x_i||^2 for each row, dense or CSR, without densifying."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1)).ravel()
    X = np.asarray(X)
    return np.einsum("ij,ij->i", X, X)


def _dot(X, Z) -> np.ndarray:
    """X Z^T as a dense array (BLAS for dense, sparse product otherwise)."""
    if sp.issparse(X) or sp.issparse(Z):
        out = X @ Z.T
        return out.toarray() if sp.issparse(out) else np.asarray(out)
    return np.asarray(X) @ np.asarray(Z).T


def kernel_block(kernel: Kernel, X, Z, x_norms=None, z_norms=None) -> np.ndarray:
    """K(X, Z), shape (len(X), len(Z)), float64.

    `x_norms`/`z_norms` are the squared row norms when already known (the rbf kernel
    needs them; computing them once per solve, not once per block, is the point).
    """
    G = _dot(X, Z)
    if kernel.name == "linear":
        return G
    if kernel.name == "rbf":
        xn = row_norms_sq(X) if x_norms is None else x_norms
        zn = row_norms_sq(Z) if z_norms is None else z_norms
        # ||x - z||^2 = ||x||^2 - 2 x.z + ||z||^2; clip the tiny negatives rounding makes.
        G *= -2.0
        G += xn[:, None]
        G += zn[None, :]
        np.maximum(G, 0.0, out=G)
        G *= -kernel.gamma
        return np.exp(G, out=G)
    G *= kernel.gamma
    G += kernel.coef0
    return G ** int(kernel.degree)
