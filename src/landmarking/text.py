"""Documents as points on the sphere: square roots of normalised word histograms.

Liang & Paisley (2015, eq. 11) represent document d by
x_d(j) = sqrt(n_dj / n_d), the square root of the share of the d-th document's
vocabulary words that are word j. Every such vector is nonnegative with unit
norm, so it lies on the sphere-orthant where ||x - t||^2 = 2 - 2 x.t is (twice
the square of) the Hellinger distance. A landmark t learned there reads as a topic:
its squared entries sum to 1, and the largest are the topic's "most probable"
words.

The vocabulary is the ``n_words`` most frequent words after removing English stop
words (scikit-learn's ``CountVectorizer``). A document with none of those words
has no histogram; it is dropped, and the indices of the kept documents are
returned (with a warning naming the dropped ones).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.feature_extraction.text import CountVectorizer

from ._validation import check_positive_int

__all__ = ["sqrt_histograms", "top_words", "strip_headers", "strip_quotes_and_signature",
           "clean_post", "WORD_PATTERN"]

#: Tokens: runs of two or more letters (numbers, ids and e-mail fragments are
#: not words of a topic).
WORD_PATTERN = r"(?u)\b[^\W\d_][^\W\d_]+\b"


def sqrt_histograms(
    docs: Iterable[str],
    n_words: int = 1545,
    *,
    stop_words: str | list[str] | None = "english",
    token_pattern: str = WORD_PATTERN,
    dense: bool = False,
) -> tuple[sp.csr_matrix | np.ndarray, np.ndarray, np.ndarray]:
    """Square roots of normalised word histograms over the most frequent words.

    Parameters
    ----------
    docs : iterable of str
        The documents.
    n_words : int, default=1545
        Vocabulary size V (the paper's 20 Newsgroups setting): the V words with
        the highest total count after stop words are removed.
    stop_words : "english", list of str or None, default="english"
        Passed to ``CountVectorizer``.
    token_pattern : str, default=WORD_PATTERN
        Regular expression of a token (runs of >= 2 letters).
    dense : bool, default=False
        Return a dense ndarray instead of a CSR matrix.

    Returns
    -------
    X : scipy.sparse.csr_matrix or ndarray of shape (n_kept, n_vocabulary)
        float64 rows with nonnegative entries and unit Euclidean norm.
    vocabulary : ndarray of str, shape (n_vocabulary,)
        The word of each column.
    kept_index : ndarray of int, shape (n_kept,)
        Position in ``docs`` of each row of X; documents with no vocabulary word
        are left out (a ``UserWarning`` says which).

    Examples
    --------
    >>> X, vocab, kept = sqrt_histograms(["apples and pears", "pears pears", "the"], 10)
    >>> vocab.tolist(), kept.tolist()
    (['apples', 'pears'], [0, 1])
    >>> X.toarray().round(3)
    array([[0.707, 0.707],
           [0.   , 1.   ]])
    """
    n_words = check_positive_int(n_words, "n_words")
    if isinstance(docs, str):
        raise TypeError("docs must be a list of documents (strings), not one string; "
                        "wrap it in a list.")
    docs = list(docs)
    if not docs:
        raise ValueError("docs is empty; pass at least one document.")
    bad = [i for i, d in enumerate(docs) if not isinstance(d, str)]
    if bad:
        raise TypeError(f"every document must be a str; {len(bad)} are not (first at index "
                        f"{bad[0]}, a {type(docs[bad[0]]).__name__}); decode them first.")
    vectorizer = CountVectorizer(stop_words=stop_words, token_pattern=token_pattern,
                                 max_features=n_words)
    try:
        counts = vectorizer.fit_transform(docs)
    except ValueError as exc:  # scikit-learn: "empty vocabulary"
        raise ValueError(
            "no document contains a vocabulary word (after stop words); pass real text "
            "or a different stop_words/token_pattern."
        ) from exc
    vocabulary = vectorizer.get_feature_names_out()
    counts = counts.tocsr().astype(np.float64)
    totals = np.asarray(counts.sum(axis=1)).ravel()
    kept_index = np.flatnonzero(totals > 0)
    dropped = np.flatnonzero(totals == 0)
    if dropped.size:
        shown = ", ".join(str(i) for i in dropped[:10]) + (", ..." if dropped.size > 10 else "")
        warnings.warn(
            f"dropped {dropped.size} of {len(docs)} documents with no vocabulary word "
            f"(indices {shown}); kept_index maps rows back to documents.",
            UserWarning, stacklevel=2)
    counts = counts[kept_index]
    X = sp.diags(1.0 / totals[kept_index]) @ counts
    X = X.tocsr()
    X.data = np.sqrt(X.data)
    if dense:
        X = X.toarray()
    return X, vocabulary, kept_index


def top_words(landmark: ArrayLike, vocabulary: Sequence[str], n: int = 5) -> list[str]:
    """The ``n`` most probable words of a landmark on the sphere.

    A landmark t with unit norm defines the word distribution t_j^2; the top words
    are those of the largest squared entries (ties in vocabulary order).

    Parameters
    ----------
    landmark : array-like of shape (n_vocabulary,)
    vocabulary : sequence of str, same length
    n : int, default=5

    Returns
    -------
    list of str

    Examples
    --------
    >>> top_words([0.1, -0.9, 0.4], ["a", "b", "c"], n=2)
    ['b', 'c']
    """
    n = check_positive_int(n, "n")
    landmark = np.asarray(landmark.toarray() if hasattr(landmark, "toarray") else landmark,
                          dtype=np.float64).ravel()
    vocabulary = np.asarray(vocabulary)
    if landmark.shape[0] != vocabulary.shape[0]:
        raise ValueError(
            f"landmark has {landmark.shape[0]} entries but vocabulary has "
            f"{vocabulary.shape[0]} words; pass the vocabulary returned by sqrt_histograms."
        )
    order = np.argsort(-landmark**2, kind="stable")[:n]
    return [str(w) for w in vocabulary[order]]


_HEADER_END = re.compile(r"\r?\n\r?\n")


def strip_headers(doc: str) -> str:
    """Drop an e-mail/news header block (everything up to the first blank line).

    20 Newsgroups posts start with headers (From:, Subject:, Organization:,
    ...), whose words would otherwise dominate the histograms. A document
    without a blank line is returned unchanged.

    Examples
    --------
    >>> strip_headers("From: a@b\\nSubject: hi\\n\\nBody text")
    'Body text'
    """
    match = _HEADER_END.search(doc)
    return doc[match.end():] if match else doc


# Lines that quote another post or introduce a quote ("In article <...> X writes:").
_QUOTE_LINE = re.compile(r"(writes in|writes:|wrote:|says:|said:|^In article|^Quoted from|^\||^>)")


def strip_quotes_and_signature(doc: str) -> str:
    r"""Drop quoted lines (``>``, ``|``, "... writes:") and a trailing signature.

    A signature is what follows the last line that starts with ``--``, when that
    leaves some text before it. Without this, words of quoting and e-mail
    addresses ("writes", "article", "edu", "com") dominate every topic.

    Examples
    --------
    >>> strip_quotes_and_signature("In article <1@x.edu> bob writes:\n> old\nnew text\n--\nBob")
    'new text'
    """
    lines = [line for line in doc.split("\n") if not _QUOTE_LINE.search(line)]
    text = "\n".join(lines)
    cut = text.rfind("\n--")
    if cut > 0:
        text = text[:cut]
    return text.strip()


def clean_post(doc: str) -> str:
    """A news post's own words: :func:`strip_headers`, then
    :func:`strip_quotes_and_signature`."""
    return strip_quotes_and_signature(strip_headers(doc))
