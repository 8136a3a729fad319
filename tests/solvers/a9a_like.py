"""An a9a-like problem made from a seed: the shape of LIBSVM's a9a (Adult, 32,561 x 123) with its
structure: 14 categorical attributes one-hot encoded (binary 0/1 features, exactly 14 nonzeros per
row, many duplicate rows), skewed category frequencies, and labels from a noisy linear rule (about
15% of the labels disagree with the rule, as a linear SVM errs on a9a), so the hinge problem is
far from separable and, at large C, highly degenerate: the case where dual coordinate descent
crawls (issue #10).

On sys.path through pytest's `pythonpath` setting; the README's certify benchmark also runs
``python tests/solvers/a9a_like.py``.
"""
import numpy as np
import scipy.sparse as sp

# Category counts of the 14 attributes (sum 123, as a9a's binarised Adult features).
GROUPS = (5, 8, 16, 7, 14, 6, 5, 2, 5, 5, 5, 41, 2, 2)


def a9a_like(n=32_561, seed=0, noise=1.0):
    """(X CSR n x 123 with 0/1 values, y in {-1, +1})."""
    rng = np.random.default_rng(seed)
    cols = []
    offset = 0
    for k in GROUPS:
        # Zipf-like frequencies in a random order: a few common categories, a long tail.
        p = rng.permutation(1.0 / np.arange(1, k + 1) ** 1.2)
        cols.append(offset + rng.choice(k, size=n, p=p / p.sum()))
        offset += k
    indices = np.sort(np.stack(cols, axis=1), axis=1).astype(np.int32).ravel()
    indptr = np.arange(0, len(GROUPS) * n + 1, len(GROUPS), dtype=np.int32)
    X = sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n, offset))
    w = rng.normal(size=offset)
    score = X @ w
    score -= np.quantile(score, 0.76)          # a9a: 24% positive
    y = np.where(score + noise * rng.logistic(size=n) > 0, 1.0, -1.0)
    return X, y
