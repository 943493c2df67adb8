"""Fig. 2 of the LLL paper drawn like lll_mnist.py's plot, from the full run's table.

Run by the plot directive of docs/results/lll.md, from the docs folder."""

import csv

import matplotlib.pyplot as plt

with open("figures/lll_mnist_full.csv") as fh:
    rows = list(csv.DictReader(fh))
L = [int(r["L"]) for r in rows]
fig, ax = plt.subplots(figsize=(6, 4))
for column in ("LLL error", "LE(Z)", "LE(Nystroem)"):
    ax.plot(L, [float(r[column]) for r in rows], marker="o", label=column.replace(" error", ""))
floor = [(size, float(r["floor (span of Z)"])) for size, r in zip(L, rows, strict=True)
         if r["floor (span of Z)"]]
ax.plot(*zip(*floor, strict=True), "k--s", label="floor: best in span(Z)")
ax.set_xscale("log")
ax.set_xticks(L, [str(v) for v in L])
ax.minorticks_off()
ax.set_xlabel("number of landmarks L")
ax.set_ylabel("Procrustes error to exact LE")
ax.set_title("MNIST, 60,000 digits, d = 50")
ax.grid(alpha=0.3)
ax.legend()
fig.tight_layout()
