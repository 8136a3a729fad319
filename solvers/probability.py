"""Class probabilities from decision values: Platt scaling and pairwise coupling, as LIBSVM.

- `fit_sigmoid`: P(y = +1 | f) = 1 / (1 + exp(A f + B)), (A, B) minimising the cross-entropy
  against Platt's smoothed targets t+ = (N+ + 1) / (N+ + 2), t- = 1 / (N- + 2) (Platt 1999),
  by the Newton method with backtracking of Lin, Lin and Weng, "A note on Platt's probabilistic
  outputs for support vector machines", Machine Learning 68 (2007), Algorithm 1: the objective
  written so that no exp overflows (their eq. 7), a Hessian kept definite by sigma = 1e-12 on
  its diagonal, steps halved until the sufficient decrease 1e-4 (LIBSVM's ``sigmoid_train``).
- `pairwise_coupling`: class probabilities p from the pairwise estimates r_ij = P(i | i or j)
  by Wu, Lin and Weng, "Probability estimates for multi-class classification by pairwise
  coupling", JMLR 5 (2004), method 2 (min_p sum_i sum_{j != i} (r_ji p_i - r_ij p_j)^2 over the
  simplex), solved by their fixed-point iteration (LIBSVM's ``multiclass_probability``).

The decision values the sigmoids are fitted on come from an internal cross-validation (the
estimator's), not from the training fit, whose values on its own rows are biased (Platt 1999).
"""
from __future__ import annotations

import math

import numpy as np


def _objective(f, t, A, B):
    """sum_i t_i (A f_i + B) + log(1 + exp(-(A f_i + B))), written without overflow (Lin et al.
    eq. 7): for z = A f + B >= 0 as given, for z < 0 as (t_i - 1) z + log(1 + exp(z))."""
    z = f * A + B
    return float(np.sum(np.where(z >= 0, t * z + np.log1p(np.exp(-np.abs(z))), (t - 1.0) * z + np.log1p(np.exp(-np.abs(z))))))


def fit_sigmoid(f: np.ndarray, positive: np.ndarray, max_iter: int = 100) -> tuple[float, float]:
    """(A, B) of Platt's sigmoid on decision values f with labels positive (bool), by Lin, Lin
    and Weng 2007, Algorithm 1 (module docstring)."""
    f = np.asarray(f, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    n1 = int(positive.sum())
    n0 = positive.size - n1
    t = np.where(positive, (n1 + 1.0) / (n1 + 2.0), 1.0 / (n0 + 2.0))
    A, B = 0.0, math.log((n0 + 1.0) / (n1 + 1.0))
    fval = _objective(f, t, A, B)
    sigma, eps, min_step = 1e-12, 1e-5, 1e-10
    for _ in range(max_iter):
        z = f * A + B
        # p = 1 / (1 + exp(z)) and q = 1 - p, each from the side where exp cannot overflow.
        e = np.exp(-np.abs(z))
        p = np.where(z >= 0, e / (1.0 + e), 1.0 / (1.0 + e))
        q = 1.0 - p
        d2 = p * q
        h11 = sigma + float(f * f @ d2)
        h22 = sigma + float(d2.sum())
        h21 = float(f @ d2)
        d1 = t - p
        g1 = float(f @ d1)
        g2 = float(d1.sum())
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            nA, nB = A + step * dA, B + step * dB
            nval = _objective(f, t, nA, nB)
            if nval < fval + 1e-4 * step * gd:
                A, B, fval = nA, nB, nval
                break
            step /= 2.0
        if step < min_step:
            break          # the line search failed: (A, B) is as good as it gets
    return A, B


def sigmoid_predict(f: np.ndarray, A: float, B: float) -> np.ndarray:
    """P(+1 | f) = 1 / (1 + exp(A f + B)), computed without overflow."""
    z = np.asarray(f, dtype=np.float64) * A + B
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, e / (1.0 + e), 1.0 / (1.0 + e))


def pairwise_coupling(r: np.ndarray, max_iter: int | None = None) -> np.ndarray:
    """Class probabilities (n, K) from pairwise ones r (n, K, K), r[:, i, j] = P(i | i or j)
    and r[:, j, i] = 1 - r[:, i, j]: Wu, Lin and Weng 2004, method 2 (module docstring), the
    fixed point of LIBSVM's multiclass_probability, for all rows at once."""
    n, K, _ = r.shape
    Q = -r.transpose(0, 2, 1) * r                     # Q_tj = -r_jt r_tj
    diag = np.einsum("njt,njt->nt", r, r) - np.einsum("ntt,ntt->nt", r, r)   # sum_{j != t} r_jt^2
    idx = np.arange(K)
    Q[:, idx, idx] = diag
    p = np.full((n, K), 1.0 / K)
    eps = 0.005 / K
    for _ in range(max_iter or max(100, K)):
        Qp = np.einsum("ntj,nj->nt", Q, p)
        pQp = np.einsum("nt,nt->n", p, Qp)
        if np.max(np.abs(Qp - pQp[:, None])) < eps:
            break
        for t in range(K):
            Qtt = Q[:, t, t]
            diff = (-Qp[:, t] + pQp) / Qtt
            p[:, t] += diff
            pQp = (pQp + diff * (diff * Qtt + 2.0 * Qp[:, t])) / (1.0 + diff) / (1.0 + diff)
            Qp = (Qp + diff[:, None] * Q[:, t, :]) / (1.0 + diff)[:, None]
            p /= (1.0 + diff)[:, None]
    return p
