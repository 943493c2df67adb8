"""Fig. 5 of the GP paper drawn like gp_mnist_classification.py's plot, from the full run's table.

Run by the plot directive of docs/results/gp.md, from the docs folder."""

import csv

import matplotlib.pyplot as plt

with open("figures/gp_mnist_classification_full.csv") as fh:
    rows = list(csv.DictReader(fh))
sizes = [int(r["landmarks"]) for r in rows]
fig, ax = plt.subplots(figsize=(6, 4))
for method in list(rows[0])[1:]:
    ax.plot(sizes, [float(r[method]) for r in rows], marker="o", label=method)
ax.set_xscale("log")
ax.set_xticks(sizes, [str(v) for v in sizes])
ax.minorticks_off()
ax.set_xlabel("number of landmarks")
ax.set_ylabel("test accuracy")
ax.set_title("MNIST, landmark features (full run)")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
