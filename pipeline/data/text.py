"""Bag-of-words features for short texts, as duros_katzman describe them.

Duros & Katzman (Sec. 3) ignore punctuation and case, and represent a phrase by the multiset of
its words, either as *binary* features (the word occurs) or as *frequency* features (how often
it occurs). We add the usual tf-idf variant as an option. The counting is scikit-learn's
:class:`~sklearn.feature_extraction.text.CountVectorizer` /
:class:`~sklearn.feature_extraction.text.TfidfVectorizer`; this module only fixes the choices so
that every text dataset is featurised the same way and the choices are recorded.

Imports nothing from the pipeline.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["TOKEN_PATTERN", "WEIGHTINGS", "bag_of_words"]

#: Runs of letters, digits and underscores: punctuation separates words and is dropped; a
#: single-letter word ("a", "i") is kept, unlike scikit-learn's default pattern.
TOKEN_PATTERN = r"(?u)\b\w+\b"

#: ``binary``: 1 if the word occurs; ``frequency``: its count in the text; ``tfidf``: counts
#: weighted by smoothed idf, rows scaled to unit L2 norm (scikit-learn's defaults).
WEIGHTINGS = ("binary", "frequency", "tfidf")


def bag_of_words(
    texts: Sequence[str],
    *,
    weighting: str = "binary",
    min_df: int = 1,
    max_features: int | None = None,
) -> tuple[sp.csr_matrix, list[str], list[str]]:
    """Featurise texts as a bag of words.

    Parameters
    ----------
    texts : sequence of str
    weighting : {"binary", "frequency", "tfidf"}
        See :data:`WEIGHTINGS`.
    min_df : int
        Keep words that occur in at least this many texts.
    max_features : int, optional
        Keep only the most frequent words (by corpus count).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_texts, n_words)
        float64; column j is ``vocabulary[j]``.
    vocabulary : list of str
        The words, in column order (sorted alphabetically, as scikit-learn numbers them).
    preprocessing : list of str
        What was done, for the dataset's metadata.

    Raises
    ------
    ValueError
        On an unknown weighting or ``min_df < 1``.
    """
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {', '.join(WEIGHTINGS)}, got {weighting!r}")
    if int(min_df) < 1:
        raise ValueError(f"min_df must be >= 1, got {min_df}")
    common = dict(
        lowercase=True,
        token_pattern=TOKEN_PATTERN,
        min_df=int(min_df),
        max_features=max_features,
        dtype=np.float64,
    )
    if weighting == "tfidf":
        vectorizer = TfidfVectorizer(**common)
    else:
        vectorizer = CountVectorizer(binary=weighting == "binary", **common)
    X = sp.csr_matrix(vectorizer.fit_transform(list(texts)), dtype=np.float64)
    vocabulary = [str(w) for w in vectorizer.get_feature_names_out()]
    preprocessing = [
        "lowercased; words are runs of letters and digits, punctuation dropped "
        f"(token pattern {TOKEN_PATTERN})",
        {
            "binary": "binary bag of words: 1 if the word occurs in the text",
            "frequency": "bag of words with frequencies: the word's count in the text",
            "tfidf": "tf-idf: counts times smoothed idf ln((1 + n) / (1 + df)) + 1, rows "
            "scaled to unit L2 norm",
        }[weighting],
    ]
    if min_df > 1 or max_features:
        preprocessing.append(
            f"vocabulary limited to words in >= {min_df} texts"
            + (f", the {max_features} most frequent" if max_features else "")
        )
    return X, vocabulary, preprocessing
