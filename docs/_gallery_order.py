"""The order of the gallery: landmarks first, then embeddings, then scale.

Named in conf.py as a dotted string so that Sphinx can pickle its configuration.
"""

ORDER = [
    "plot_two_circles.py",
    "plot_swiss_roll.py",
    "plot_digit_landmarks.py",
    "plot_face_landmarks.py",
    "plot_newsgroups_topics.py",
    "plot_landmark_features.py",
    "plot_lll_vs_exact.py",
    "plot_out_of_sample.py",
    "plot_sculpting_steps.py",
    "plot_intrinsic_dimension.py",
    "plot_dask_scale_out.py",
]


class ExampleOrder:
    """Sort key: the position in ORDER; examples not listed come last, by name."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        return (ORDER.index(filename), "") if filename in ORDER else (len(ORDER), filename)

    def __repr__(self):
        return "ExampleOrder"
