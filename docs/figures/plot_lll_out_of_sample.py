"""Fig. 5 of the LLL paper drawn like lll_out_of_sample.py's plot, from its printed grid.

Run by the plot directive of docs/results/lll.md, from the docs folder."""

import csv

import matplotlib.pyplot as plt
import numpy as np

with open("figures/lll_out_of_sample.csv") as fh:
    rows = list(csv.DictReader(fh))
kws = sorted({int(r["K_W"]) for r in rows})
sigmas = sorted({float(r["sigma"]) for r in rows})
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
for ax, key in zip(axes, ["test error", "out-of-sample error"], strict=True):
    grid = np.array([[next(float(r[key]) for r in rows
                           if int(r["K_W"]) == k and float(r["sigma"]) == s)
                      for s in sigmas] for k in kws])
    im = ax.imshow(grid, cmap="viridis", origin="lower", vmin=0.05, vmax=0.085)
    ax.set(xticks=range(len(sigmas)), xticklabels=[f"{s:g}" for s in sigmas],
           yticks=range(len(kws)), yticklabels=kws, xlabel="sigma", ylabel="K_W",
           title=f"1-NN {key} (%)")
    for (i, j), v in np.ndenumerate(grid):
        ax.text(j, i, f"{100 * v:.1f}", ha="center", va="center", color="w", fontsize=8)
fig.colorbar(im, ax=axes, fraction=0.03)
