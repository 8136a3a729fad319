"""The synthetic datasets: generators with parameters, built offline into the store.

``toy_blobs`` (Roethel & Brynda's toy set, Sec. 4.1) and ``rcv1_like`` (a stand-in for RCV1 CCAT
that scales to its full size, streamed in row blocks). Each returns what a builder returns
(:mod:`pipeline.data.datasets`, "The builder contract"): the data, or for a streaming builder its row
blocks, with the ``source``, ``license``, ``citation``, ``preprocessing`` and ``extra`` of the
store entry.

Split from datasets.py along its seam: generators, package files (:mod:`pipeline.data.package_data`)
and the user's files (:mod:`pipeline.data.userfiles`) each have their own module.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.special import ndtr

GENERATED_LICENSE = "CC0-1.0"


def toy_blobs(n_samples: int, separation: float, std: float, seed: int):
    """Two isotropic Gaussian blobs in R^2 with labels -1 and +1.

    Centres at -/+ (separation / 2) * (1, 1) / sqrt(2): ``separation`` is the Euclidean
    distance between them. The Bayes accuracy is Phi(separation / (2 std)); the default
    separation 3 and std 1 give 93.3%, close to the 93.5% test accuracy Roethel & Brynda
    report on their toy set (their Table 1). Rows are shuffled so that plain k-fold splits
    see both classes.
    """
    if n_samples < 2:
        raise ValueError(f"dataset 'toy_blobs': n_samples must be >= 2, got {n_samples}")
    if separation < 0 or std <= 0:
        raise ValueError(
            f"dataset 'toy_blobs': need separation >= 0 and std > 0, got {separation}, {std}"
        )
    rng = np.random.default_rng(seed)
    n_neg = n_samples // 2
    y = np.r_[-np.ones(n_neg), np.ones(n_samples - n_neg)]
    centre = np.full(2, separation / 2 / math.sqrt(2))
    X = rng.normal(scale=std, size=(n_samples, 2)) + y[:, None] * centre
    order = rng.permutation(n_samples)
    params = {"n_samples": n_samples, "separation": separation, "std": std, "seed": seed}
    meta = {
        "source": {"generator": "toy_blobs", "params": params},
        "license": GENERATED_LICENSE,
        "citation": (
            "Synthetic; after the toy set of A. Roethel and M. Brynda, 'Dual Coordinate Descent "
            "Method for Linear SVM' (2021), Sec. 4.1"
        ),
        "preprocessing": [],
        "extra": {
            "centers": [(-centre).tolist(), centre.tolist()],
            "bayes_accuracy": float(ndtr(separation / (2 * std))),
        },
    }
    return X[order], y[order], meta


def rcv1_like(
    n_samples: int,
    n_features: int,
    mean_nnz: float,
    nnz_sigma: float,
    zipf_exponent: float,
    zipf_offset: float,
    n_informative: int,
    positive_fraction: float,
    margin: float,
    noise: float,
    seed: int,
    chunk_size: int,
):
    """RCV1-like sparse text: Zipf words, ltc tf-idf, unit rows, labels from a sparse truth.

    Generative model, following the RCV1 preprocessing of Lewis et al. (2004, Sec. 4.3):

    1. Word j (0-based rank) has probability p_j proportional to (j + 1 + zipf_offset)^-s with
       s = ``zipf_exponent`` (a Zipf-Mandelbrot law; the column index is the rank).
    2. Row i gets a target number of distinct terms L_i ~ lognormal with mean ``mean_nnz``
       and log-scale ``nnz_sigma``. The number of tokens T_i is chosen so that the expected
       number of distinct words among T_i draws, sum_j 1 - (1 - p_j)^T_i, equals L_i; the
       T_i tokens are then drawn from p. So ``mean_nnz`` is the mean stored entries per row
       (density = mean_nnz / n_features; RCV1 CCAT: 76 / 47,236 = 0.16%).
    3. Weights are "ltc": (1 + ln tf) * ln(N / df) with df counted over the generated
       corpus, then each row is scaled to unit L2 norm. A word present in every row has idf 0
       and drops out, as a stop word would.
    4. A ground truth w* has ``n_informative`` nonzeros with random signs and magnitudes in
       [0.5, 1.5), on words drawn from the 10 * n_informative most frequent ones (so most
       rows contain some). The score s_i = x_i . w* is thresholded at its
       (1 - ``positive_fraction``) quantile; rows tied with the threshold (typically those
       without informative words) get a fair coin.
    5. ``margin`` > 0 generates n_samples / (1 - margin) rows and keeps the n_samples farthest
       from the threshold (in their original order), opening a gap around the boundary; the
       cut is made per class, so the kept rows keep ``positive_fraction``.
    6. Each label is flipped with probability ``noise``.

    Returns ``(blocks, n_features, meta_kwargs)``: ``blocks`` is a generator of row blocks
    of at most ``chunk_size`` generated rows. Nothing is held but one block and a few
    per-row numbers (token counts, scores, labels: 8 bytes each): document frequencies,
    scores and the threshold come from two earlier passes that regenerate the same blocks
    from the same seeds, and the final pass produces the rows as they are written. At the
    full RCV1 size this trades three generations for memory bounded by ``chunk_size``.

    Every random quantity comes from its own stream of ``SeedSequence(seed)``, and the token
    stream is consumed in row order, so the output does not depend on ``chunk_size``. Nothing
    loops per row in Python.
    """
    name = "dataset 'rcv1_like'"
    checks = [
        (n_samples >= 2, "n_samples must be >= 2"),
        (n_features >= 2, "n_features must be >= 2"),
        (1 <= mean_nnz <= n_features / 2, "mean_nnz must be in [1, n_features / 2]"),
        (nnz_sigma >= 0, "nnz_sigma must be >= 0"),
        (zipf_exponent > 0 and zipf_offset >= 0, "need zipf_exponent > 0, zipf_offset >= 0"),
        (1 <= n_informative <= n_features, "n_informative must be in [1, n_features]"),
        (0 < positive_fraction < 1, "positive_fraction must be in (0, 1)"),
        (0 <= margin < 1, "margin must be in [0, 1)"),
        (0 <= noise <= 0.5, "noise must be in [0, 0.5]"),
        (chunk_size >= 1, "chunk_size must be >= 1"),
    ]
    for ok, problem in checks:
        if not ok:
            raise ValueError(f"{name}: {problem}")
    lengths_ss, tokens_ss, truth_ss, labels_ss = np.random.SeedSequence(seed).spawn(4)

    # 1. vocabulary
    ranks = np.arange(1, n_features + 1, dtype=np.float64)
    p = (ranks + zipf_offset) ** -zipf_exponent
    p /= p.sum()
    cdf = np.cumsum(p)

    # 2. row lengths -> token counts, via the expected-distinct-words curve on a grid of T
    #    (a loop over grid points, not rows).
    n_gen = n_samples if margin == 0 else math.ceil(n_samples / (1 - margin))
    sigma = nnz_sigma
    mu = math.log(mean_nnz) - sigma**2 / 2  # so that E[L] = mean_nnz
    lengths = np.random.default_rng(lengths_ss).lognormal(mu, sigma, size=n_gen)
    t_grid = np.unique(np.round(np.geomspace(1, 1e3 * n_features, 600)))
    log1m_p = np.log1p(-p)
    distinct = np.array([n_features - np.exp(t * log1m_p).sum() for t in t_grid])
    lengths = np.clip(lengths, 1.0, distinct[-1])
    n_tokens = np.maximum(1, np.round(np.interp(lengths, distinct, t_grid))).astype(np.int64)
    del lengths

    def counts():
        """Term-frequency blocks, regenerated identically on every call."""
        tokens_rng = np.random.default_rng(tokens_ss)
        for start in range(0, n_gen, chunk_size):
            block_tokens = n_tokens[start : start + chunk_size]
            words = np.searchsorted(cdf, tokens_rng.random(int(block_tokens.sum())), side="right")
            np.minimum(words, n_features - 1, out=words)  # cdf[-1] may round just below 1
            rows = np.repeat(np.arange(block_tokens.size), block_tokens)
            block = sp.csr_matrix(
                (np.ones(words.size), (rows, words)), shape=(block_tokens.size, n_features)
            )
            block.sum_duplicates()  # term frequencies, sorted indices
            yield start, block

    # 3. ltc weighting needs df over the whole corpus: a first pass counts it.
    df = np.zeros(n_features, dtype=np.int64)
    for _, block in counts():
        df += np.bincount(block.indices, minlength=n_features)
    idf = np.log(n_gen / np.maximum(df, 1))

    def weighted(block):
        block.data = (1.0 + np.log(block.data)) * idf[block.indices]
        block.eliminate_zeros()
        row_of = np.repeat(np.arange(block.shape[0]), np.diff(block.indptr))
        norms = np.sqrt(np.bincount(row_of, weights=block.data**2, minlength=block.shape[0]))
        norms[norms == 0] = 1.0  # a row of only idf-0 words is empty now; nothing to scale
        block.data /= norms[row_of]
        return block

    # 4. ground truth; a second pass scores every row.
    truth_rng = np.random.default_rng(truth_ss)
    pool = min(n_features, 10 * n_informative)
    informative = np.sort(truth_rng.choice(pool, size=n_informative, replace=False))
    weights = truth_rng.choice([-1.0, 1.0], n_informative) * truth_rng.uniform(
        0.5, 1.5, n_informative
    )
    w_star = np.zeros(n_features)
    w_star[informative] = weights
    score = np.empty(n_gen)
    for start, block in counts():
        score[start : start + block.shape[0]] = weighted(block) @ w_star
    threshold = float(np.quantile(score, 1 - positive_fraction))
    labels_rng = np.random.default_rng(labels_ss)
    coin = labels_rng.random(n_gen) < 0.5
    flip = labels_rng.random(n_gen) < noise
    y = np.where(score > threshold, 1.0, -1.0)
    tied = score == threshold
    y[tied] = np.where(coin[tied], 1.0, -1.0)

    # 5. margin: keep the rows farthest from the boundary
    keep = np.ones(n_gen, dtype=bool)
    gap = 0.0
    if n_gen > n_samples:
        # Per class, so that the kept rows keep positive_fraction: the score distribution
        # is skewed, and one common cut would keep far more of one side.
        keep[:] = False
        n_pos = min(int(round(positive_fraction * n_samples)), int((y > 0).sum()))
        gaps = []
        for side, n_side in ((1.0, n_pos), (-1.0, n_samples - n_pos)):
            rows = np.flatnonzero(y == side)
            order = rows[np.argsort(-np.abs(score[rows] - threshold), kind="stable")]
            keep[order[:n_side]] = True
            if n_side:
                gaps.append(float(np.abs(score[order[n_side - 1]] - threshold)))
        gap = min(gaps)
    flip &= keep

    # 6. label noise
    y[flip] = -y[flip]
    del score, coin, tied

    def blocks():
        # The third pass: the rows themselves, produced as the writer consumes them.
        for start, block in counts():
            stop = start + block.shape[0]
            mask = keep[start:stop]
            yield weighted(block)[mask], y[start:stop][mask]

    params = {
        "n_samples": n_samples,
        "n_features": n_features,
        "mean_nnz": mean_nnz,
        "nnz_sigma": nnz_sigma,
        "zipf_exponent": zipf_exponent,
        "zipf_offset": zipf_offset,
        "n_informative": n_informative,
        "positive_fraction": positive_fraction,
        "margin": margin,
        "noise": noise,
        "seed": seed,
    }
    meta = {
        "source": {"generator": "rcv1_like", "params": params},
        "license": GENERATED_LICENSE,
        "citation": (
            "Synthetic imitation of RCV1: D. D. Lewis, Y. Yang, T. G. Rose and F. Li, 'RCV1: A "
            "New Benchmark Collection for Text Categorization Research', JMLR 5:361-397, 2004"
        ),
        "preprocessing": [
            "term counts weighted (1 + ln tf) * ln(N / df), df over the generated corpus",
            "words present in every row dropped (idf 0)",
            "rows scaled to unit L2 norm",
        ],
        "extra": {
            "ground_truth": {
                "indices": informative,
                "weights": weights,
                "threshold": threshold,
                "margin_gap": gap,
                "flipped_labels": int(flip.sum()),
            },
        },
    }
    return blocks(), n_features, meta
