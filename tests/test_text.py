"""Tests of the text representation (issue 3)."""

import re
from collections import Counter

import numpy as np
import pytest
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from landmarking.text import WORD_PATTERN, sqrt_histograms, strip_headers, top_words

DOCS = [
    "The cat sat on the mat with another cat.",
    "Dogs chase cats; the dog barks at 3 cats!",
    "1234 5678",  # no word of two letters: dropped
    "A mat, a dog, a cat and a hat.",
    "the and of",  # only stop words: dropped
    "Hats and mats and bats.",
]


def _manual_counts(docs):
    tokens = [[t for t in re.findall(WORD_PATTERN, d.lower()) if t not in ENGLISH_STOP_WORDS]
              for d in docs]
    return tokens, Counter(t for doc in tokens for t in doc)


def test_square_root_histograms_match_a_manual_count():
    with pytest.warns(UserWarning, match=r"dropped 2 of 6 documents.*indices 2, 4"):
        X, vocab, kept = sqrt_histograms(DOCS, n_words=1000)
    tokens, total = _manual_counts(DOCS)
    assert sorted(vocab.tolist()) == sorted(total)
    np.testing.assert_array_equal(kept, [0, 1, 3, 5])
    X = X.toarray()
    for row, d in zip(X, kept, strict=True):
        counts = Counter(tokens[d])
        expected = np.array([np.sqrt(counts[w] / len(tokens[d])) for w in vocab])
        np.testing.assert_allclose(row, expected)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0)
    assert np.all(X >= 0)


def test_vocabulary_is_the_most_frequent_words():
    rng = np.random.default_rng(0)
    words = [f"w{chr(97 + i)}{chr(97 + j)}" for i in range(6) for j in range(6)]
    probs = rng.dirichlet(np.ones(len(words)) * 0.3)
    docs = [" ".join(rng.choice(words, size=40, p=probs)) for _ in range(60)]
    _, total = _manual_counts(docs)
    X, vocab, kept = sqrt_histograms(docs, n_words=10, dense=True)
    counts = sorted(total.values(), reverse=True)
    assert len(vocab) == 10 and isinstance(X, np.ndarray) and X.shape[1] == 10
    assert min(total[w] for w in vocab) >= counts[10]  # no left-out word is more frequent
    np.testing.assert_allclose(np.linalg.norm(X[np.any(X > 0, axis=1)], axis=1), 1.0)


def test_top_words_reads_the_largest_squared_entries():
    vocab = np.array(["alpha", "beta", "gamma", "delta"])
    t = np.array([0.2, -0.8, 0.5, 0.2])
    assert top_words(t, vocab, n=3) == ["beta", "gamma", "alpha"]
    assert top_words(t, vocab, n=10) == ["beta", "gamma", "alpha", "delta"]
    with pytest.raises(ValueError, match="landmark has 4 entries but vocabulary has 3"):
        top_words(t, vocab[:3])


def test_errors_name_the_problem():
    with pytest.raises(TypeError, match="not one string"):
        sqrt_histograms("just one document")
    with pytest.raises(TypeError, match="first at index 1, a bytes"):
        sqrt_histograms(["fine text here", b"bytes here"])
    with pytest.raises(ValueError, match="no document contains a vocabulary word"):
        sqrt_histograms(["the and of", "12 34"])
    with pytest.raises(ValueError, match="docs is empty"):
        sqrt_histograms([])
    with pytest.raises(ValueError, match="n_words must be >= 1"):
        sqrt_histograms(DOCS, n_words=0)


def test_strip_headers():
    post = "From: x@y.z\nSubject: cars\n\nI like cars.\n\nBye"
    assert strip_headers(post) == "I like cars.\n\nBye"
    assert strip_headers("no header at all") == "no header at all"


def test_newsgroups_representation(data_dir):
    from landmarking.datasets.real import load_newsgroups

    docs, labels, names = load_newsgroups(data_dir)
    docs = [strip_headers(d) for d in docs[:3000]]
    with pytest.warns(UserWarning, match="dropped"):
        X, vocab, kept = sqrt_histograms(docs, n_words=1545)
    assert X.shape == (len(kept), 1545)
    assert len(kept) > 0.97 * len(docs)
    np.testing.assert_allclose(np.sqrt(X.multiply(X).sum(axis=1)).A.ravel(), 1.0)
    assert "god" in vocab and "the" not in vocab


def test_clean_post_removes_quotes_and_signature():
    from landmarking.text import clean_post

    post = ("From: bob@x.edu\nSubject: Re: engines\n\n"
            "In article <12@y.com> alice@y.com writes:\n> Old quoted line\n| another quote\n"
            "My own answer about engines.\nSecond line.\n--\nBob, bob@x.edu\n")
    assert clean_post(post) == "My own answer about engines.\nSecond line."
    assert clean_post("Subject: x\n\nplain body") == "plain body"
