"""
Face landmarks as images
========================

The Olivetti faces (400 images of 40 people, 64x64) from the real-data folder
``LANDMARKING_DATA``. Sixteen GP landmarks in the nonnegative orthant next to
sixteen faces drawn at random: the landmarks are sharp faces of different people
and poses, not averages. When the data folder is absent the example says so and
draws nothing else.
"""

import matplotlib.pyplot as plt

from landmarking import GPLandmarks, RandomLandmarks
from landmarking.datasets import data_available, data_dir, load_faces
from landmarking.plotting import plot_image_grid

if not data_available("faces_olivetti_64x64.npz"):
    note = f"{data_dir() / 'faces_olivetti_64x64.npz'} is absent: set LANDMARKING_DATA."
    print(note)
    fig, ax = plt.subplots(figsize=(6, 1))
    ax.text(0.5, 0.5, note, ha="center", va="center", wrap=True)
    ax.axis("off")
else:
    images, person = load_faces("olivetti")
    X = images.reshape(len(images), -1) / 255.0
    gp = GPLandmarks(n_landmarks=16, space="nonnegative", n_steps=300,
                     random_state=0).fit(X)
    rand = RandomLandmarks(n_landmarks=16, random_state=0).fit(X)
    print(f"{len(X)} faces of {len(set(person))} people, {X.shape[1]} pixels each")
    plot_image_grid(gp.landmarks_, images.shape[1:], n_cols=8,
                    title="GP landmarks, in order of selection")
    plot_image_grid(rand.landmarks_, images.shape[1:], n_cols=8,
                    title="random faces, for comparison")
plt.show()
