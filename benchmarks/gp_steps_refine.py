"""GP landmarks: ``n_steps="auto"`` and joint refinement against the fixed 1000 steps.

Issue 12. For each seed, on each data set:

- ``GPLandmarks(n_steps=1000)`` and ``GPLandmarks(n_steps="auto")`` with the largest
  size; landmarks are sequential, so their first k are the k-landmark fits;
- one refinement sweep (:func:`landmarking.gp.refine_gp_landmarks`) of the
  fixed-step landmarks at each size, with ``--refine-steps`` steps per landmark
  (default "auto": the same stopping rule; the step schedule continues after the
  sequential pass).

Printed per size (means over the seeds): steps per landmark, seconds, test
accuracy, and for the refinement the full objective before and after on a held-out
sample: log det(Phi^T Phi / n), the joint objective the sweeps ascend (the sum of
the logs of the sequential posterior variances), and the total posterior variance
sum_k f_k (each landmark given the ones before it).

Data: MNIST (``--n-train`` training images, pixels / 255; lambda chosen on images
50,000-59,999; the official 10,000 test images; the held-out sample is the
validation images) and GTZAN (1000 clips x 57 features, standardised with the
training clips' mean and deviation; a seeded stratified 70/30 split, lambda by
5-fold cross-validation on the training clips; the held-out sample is the test
clips).

Usage::

    python benchmarks/gp_steps_refine.py                       # quick
    python benchmarks/gp_steps_refine.py --full                # 3 seeds, 50 and 100
"""

import os
import time

import numpy as np
from _common import (
    argument_parser,
    machine_line,
    mnist_splits,
    parse,
    print_table,
    validated_accuracy,
)

from landmarking import GPLandmarks
from landmarking.datasets import load_gtzan
from landmarking.evaluation import cross_validated_accuracy
from landmarking.gp import refine_gp_landmarks
from landmarking.kernels import gaussian_features


def _arguments():
    parser = argument_parser(__doc__)
    parser.add_argument("--n-train", type=int, default=None,
                        help="MNIST training images (default 20,000 with --full)")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds")
    parser.add_argument("--refine-steps", default="auto",
                        help="steps per landmark in the refinement sweep (auto or an int)")
    parser.add_argument("--sets", nargs="+", default=["mnist", "gtzan"])
    return parser


def mnist(n_train):
    train, val, test = mnist_splits(n_train)
    return dict(train=train, val=val, test=test, holdout=val[0])


def gtzan(seed):
    from sklearn.model_selection import train_test_split

    X, y, _ = load_gtzan()
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y,
                                              random_state=seed)
    mean, std = X_tr.mean(axis=0), X_tr.std(axis=0)
    X_tr, X_te = (X_tr - mean) / std, (X_te - mean) / std
    return dict(train=(X_tr, y_tr), val=None, test=(X_te, y_te), holdout=X_te)


def accuracy(data, landmarks, eta, seed):
    """Test accuracy of the logistic regression on the landmark features: lambda
    chosen on the validation split (MNIST), else by 5-fold cross-validation."""
    if data["val"] is not None:
        return validated_accuracy(landmarks, eta, (data["train"], data["val"], data["test"]))[0]
    (X_tr, y_tr), (X_te, y_te) = data["train"], data["test"]
    F_tr = gaussian_features(X_tr, landmarks.astype(X_tr.dtype), eta)
    F_te = gaussian_features(X_te, landmarks.astype(X_te.dtype), eta)
    return cross_validated_accuracy(F_tr, y_tr, F_test=F_te, y_test=y_te,
                                    random_state=seed).test_accuracy


def full_objective(X, landmarks, eta):
    """(log det(Phi^T Phi / n), sum_k f_k) on a held-out sample X."""
    Phi = gaussian_features(X, landmarks.astype(X.dtype), eta).astype(np.float64)
    gram = Phi.T @ Phi / len(X) + 1e-8 * np.eye(len(landmarks))
    diag = np.diag(np.linalg.cholesky(gram)) ** 2  # f_k given the landmarks before k
    return float(np.sum(np.log(diag))), float(diag.sum())


def run_set(name, args, seeds, sizes, refine_steps):
    records = {}
    for seed in seeds:
        data = mnist(args.n_train) if name == "mnist" else gtzan(seed)
        X = data["train"][0]
        fits = {}
        for label, n_steps in (("1000 steps", 1000), ("auto", "auto")):
            start = time.perf_counter()
            gp = GPLandmarks(n_landmarks=max(sizes), n_steps=n_steps, block_size=1,
                             random_state=seed).fit(X)
            fits[label] = gp
            print(f"{name} seed {seed} {label}: {time.perf_counter() - start:.1f} s, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
        fixed = fits["1000 steps"]
        eta = fixed.kernel_width_
        for k in sizes:
            for label, gp in fits.items():
                rec = records.setdefault((k, label), [])
                rec.append(dict(steps=gp.n_steps_[:k].mean(),
                                seconds=gp.landmark_seconds_[:k].sum(),
                                acc=accuracy(data, gp.landmarks_[:k], eta, seed),
                                obj=full_objective(data["holdout"], gp.landmarks_[:k], eta)))
            start = time.perf_counter()
            refined, _, steps, accepted = refine_gp_landmarks(
                X, fixed.landmarks_[:k], kernel_width=eta, n_sweeps=1, n_steps=refine_steps,
                seed=fixed.seed_)
            seconds = time.perf_counter() - start
            records.setdefault((k, "1000 steps + refine"), []).append(dict(
                steps=steps.mean(), seconds=seconds, acc=accuracy(data, refined, eta, seed),
                obj=full_objective(data["holdout"], refined, eta), accepted=accepted.mean()))
            print(f"{name} seed {seed} k={k}: refine {seconds:.1f} s, accepted "
                  f"{accepted.mean():.2f}", flush=True)
    rows = []
    for (k, label), rec in sorted(records.items(), key=lambda item: item[0][0]):
        rows.append((k, label, float(np.mean([r["steps"] for r in rec])),
                     float(np.mean([r["seconds"] for r in rec])),
                     float(np.mean([r["acc"] for r in rec])),
                     float(np.std([r["acc"] for r in rec])),
                     float(np.mean([r["obj"][0] for r in rec])),
                     float(np.mean([r["obj"][1] for r in rec])),
                     ("" if "accepted" not in rec[0]
                      else f"{np.mean([r['accepted'] for r in rec]):.2f}")))
    print(f"\n{name}: {len(seeds)} seed(s); seconds: sequential fit of the first k "
          f"landmarks, or the refinement sweep alone; {machine_line()}")
    print_table(["landmarks", "method", "steps/landmark", "seconds", "test acc", "acc sd",
                 "held-out log det", "held-out sum f", "accepted"], rows)


def main():
    args = parse(_arguments())
    if args.n_train is None:
        args.n_train = 20000 if args.full else 5000
    n_seeds = args.seeds or (3 if args.full else 1)
    sizes = (50, 100) if args.full else (10, 20)
    refine_steps = args.refine_steps if args.refine_steps == "auto" else int(args.refine_steps)
    seeds = [args.seed + i for i in range(n_seeds)]
    for name in args.sets:
        run_set(name, args, seeds, sizes, refine_steps)


if __name__ == "__main__":
    main()
