import numpy as np
import pytest

from landmarking.datasets import (
    load_faces,
    load_mnist,
    load_newsgroups,
    make_concentric_circles,
    make_sphere_orthant,
)
from landmarking.spaces import is_feasible


def test_circles_radii_and_determinism():
    X, labels = make_concentric_circles(600, radii=(1.0, 3.0), noise=0.0, random_state=0)
    r = np.linalg.norm(X, axis=1)
    np.testing.assert_allclose(r, np.where(labels == 0, 1.0, 3.0))
    assert np.sum(labels == 1) == 3 * np.sum(labels == 0)  # uniform density along both
    np.testing.assert_array_equal(X, make_concentric_circles(600, radii=(1.0, 3.0), noise=0.0,
                                                             random_state=0)[0])


def test_sphere_orthant_rows_are_feasible():
    X, labels = make_sphere_orthant(200, n_features=5, random_state=0)
    assert is_feasible(X, "sphere") and X.shape == (200, 5) and set(labels) <= {0, 1, 2}


def test_loaders_name_the_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="LANDMARKING_DATA"):
        load_mnist(tmp_path)
    with pytest.raises(ValueError, match="split must be"):
        load_mnist(tmp_path, split="validation")


def test_real_loaders(data_dir):
    X, y = load_mnist(data_dir, split="test")
    assert X.shape == (10000, 784) and X.dtype == np.float32 and 0 <= X.min() and X.max() <= 1
    # The published class counts of the MNIST test set, digit 0 to 9.
    np.testing.assert_array_equal(np.bincount(y),
                                  [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009])
    images, target = load_faces("yale", data_dir)
    assert images.shape == (165, 32, 32)
    np.testing.assert_array_equal(np.bincount(target), [11] * 15)  # 11 images of each
    docs, labels, names = load_newsgroups(data_dir, subset="test")
    assert len(docs) == len(labels) == 7532 and len(names) == 20
    # The "bydate" test split: 251 posts in talk.religion.misc, 399 in the largest.
    counts = np.bincount(labels)
    assert counts.sum() == 7532 and counts.min() == 251 and counts.max() == 399
