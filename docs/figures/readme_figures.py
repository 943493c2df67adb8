"""Draw the README's pictures into docs/figures/readme/.

The picture at the top (GP landmarks on an S-shaped sheet, and the sheet unrolled by
Locally Linear Landmarks through those landmarks) is drawn here; the picture of each
method is the one its README example saves: every ``python`` block of the README is
run in a scratch folder, as ``tests/test_readme.py`` runs it, and the PNGs it writes
are copied here, so that the README shows what its code makes. Run from anywhere,
with the environment of ``make install``:

    MPLBACKEND=Agg .venv/bin/python docs/figures/readme_figures.py
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "readme"


def readme_blocks(text):
    """The README's ``python`` code blocks, in order."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def run_examples():
    """Run each README example in a scratch folder; copy the PNGs it writes to OUT."""
    env = dict(os.environ, MPLBACKEND="Agg")
    for code in readme_blocks((ROOT / "README.md").read_text(encoding="utf-8")):
        with tempfile.TemporaryDirectory() as folder:
            subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, check=True)
            for png in Path(folder).glob("*.png"):
                shutil.copy(png, OUT / png.name)
                print(f"wrote {OUT / png.name}")


def draw_top():
    """GP landmarks on an S-shaped sheet, and where they fall on the sheet unrolled."""
    import matplotlib.pyplot as plt
    from sklearn.datasets import make_s_curve

    from landmarking import GPLandmarks, LocallyLinearLandmarks

    X, t = make_s_curve(3000, random_state=0)
    X[:, 1] *= 4                      # a sheet about as wide as it is long
    gp = GPLandmarks(n_landmarks=40, random_state=0).fit(X)
    lll = LocallyLinearLandmarks(n_components=2, n_landmarks=300, random_state=0)
    Y = lll.fit_transform(X)
    T = gp.landmarks_
    T2 = lll.transform(T)             # the landmarks placed by the out-of-sample map

    fig = plt.figure(figsize=(10, 4.2))
    ax = fig.add_subplot(1, 2, 1, projection="3d")
    ax.scatter(*X.T, c=t, s=2, cmap="viridis", alpha=0.5)
    ax.scatter(*T.T, c="red", s=28, edgecolors="black", linewidths=0.5, depthshade=False)
    ax.view_init(elev=8, azim=-75)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_zticks([])
    ax.set_title("40 GP landmarks on the data's manifold")
    ax2 = fig.add_subplot(1, 2, 2)
    ax2.scatter(*Y.T, c=t, s=2, cmap="viridis")
    ax2.scatter(*T2.T, c="red", s=28, edgecolors="black", linewidths=0.5)
    ax2.set_xticks([])
    ax2.set_yticks([])
    ax2.set_title("the sheet unrolled by LLL, the landmarks on it")
    fig.tight_layout()
    fig.savefig(OUT / "top.png", dpi=90)
    print(f"wrote {OUT / 'top.png'}")


if __name__ == "__main__":
    OUT.mkdir(exist_ok=True)
    draw_top()
    run_examples()
