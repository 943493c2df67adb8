"""
Topics from 20 Newsgroups
=========================

A document becomes the square root of its word histogram (the GP paper's eq. 11):
a point on the unit sphere in the nonnegative orthant. GP landmarks learned with
``space="sphere"`` are then points of that sphere too, and each one reads as a
topic: its squared entries are a word distribution. Here 2,000 training posts,
with headers, quotes and signatures stripped, and eight topics. Needs
``20newsgroups_bydate.json.xz`` in ``LANDMARKING_DATA``.
"""

import matplotlib.pyplot as plt
import numpy as np

from landmarking import GPLandmarks
from landmarking.datasets import data_available, data_dir, load_newsgroups
from landmarking.text import clean_post, sqrt_histograms

if not data_available("20newsgroups_bydate.json.xz"):
    note = f"{data_dir() / '20newsgroups_bydate.json.xz'} is absent: set LANDMARKING_DATA."
    print(note)
    fig, ax = plt.subplots(figsize=(6, 1))
    ax.text(0.5, 0.5, note, ha="center", va="center", wrap=True)
    ax.axis("off")
else:
    posts, _, _ = load_newsgroups(subset="train")
    rng = np.random.default_rng(0)
    keep = rng.choice(len(posts), 2000, replace=False)
    X, vocabulary, _ = sqrt_histograms([clean_post(posts[i]) for i in keep], n_words=1545)
    X = X.toarray()  # GPLandmarks learns from dense arrays
    gp = GPLandmarks(n_landmarks=8, space="sphere", n_steps=200, random_state=0).fit(X)

    fig, axes = plt.subplots(2, 4, figsize=(12, 5.5))
    for k, (ax, topic) in enumerate(zip(axes.ravel(), gp.landmarks_, strict=True), start=1):
        weights = np.asarray(topic).ravel() ** 2
        top = np.argsort(weights)[::-1][:6]
        ax.barh(range(6)[::-1], weights[top], color="tab:blue")
        ax.set_yticks(range(6)[::-1], [vocabulary[j] for j in top])
        ax.set_title(f"topic {k}")
        ax.set_xticks([])
        print(f"topic {k}: " + " ".join(vocabulary[j] for j in top))
    fig.suptitle(f"GP landmarks on {X.shape[0]} posts, {X.shape[1]} words: "
                 "the most probable words of each")
    fig.tight_layout()
plt.show()
