"""``landmarking topics``: GP landmarks of a text corpus on the sphere of square-root
word histograms, printed as each landmark's most probable words."""

import argparse
import sys
import warnings

import numpy as np

from ..io import InputError, check_output, input_sha256, read_corpus, read_result, write_result
from ._common import (
    INTERRUPTED,
    check_device,
    estimator_class,
    estimator_params,
    parameters,
    say,
)
from ._runs import (
    check_more_requested,
    continues_in_place,
    fit_saving_progress,
    landmark_options,
    mark_written,
    may_replace_output,
    merge_previous,
)

# Called by :func:`landmarking.cli.main`: the command line, not these functions, is the
# public interface (nothing here is in the API reference).
__all__: list[str] = []


def run_topics(args: argparse.Namespace) -> int:
    """Run ``landmarking topics``; returns the exit status."""
    from ..text import sqrt_histograms, strip_headers, top_words

    if args.device is not None:
        check_device(args)
    if args.output:
        check_output(args.output, force=args.force or continues_in_place(args), fmt="npz")
    documents, _ = read_corpus(args.corpus, field=args.field)
    if args.strip_headers:
        documents = [strip_headers(doc) for doc in documents]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # dropped documents are reported below
        X, vocabulary, kept = sqrt_histograms(documents, args.vocabulary, dense=True)
    if len(kept) < len(documents):
        say(args, f"left out {len(documents) - len(kept)} documents with no vocabulary word")
    if X.shape[0] < args.n_landmarks:
        raise InputError(
            f"{args.corpus}: has {X.shape[0]} usable documents, fewer than the {args.n_landmarks} "
            f"topics requested; ask for at most {X.shape[0]} with -n, or give more documents."
        )
    cls = estimator_class("GPLandmarks")
    given = landmark_options(args, ("--space", "sphere"))
    fit_params = {}
    if getattr(args, "previous", None) is not None:
        saved = _read_previous(args, vocabulary)
        given = merge_previous(args, given, saved)
        fit_params["previous_landmarks"] = saved["landmarks"]
    estimator = cls(**estimator_params(cls, given, "gp"))

    def write(state=None, *, complete=False):
        landmarks = estimator.landmarks_ if state is None else state[0]
        _write_topics(args, estimator, landmarks, vocabulary, complete=complete)

    interrupted = fit_saving_progress(estimator, X, fit_params,
                                      write if args.output else None)
    if interrupted and getattr(estimator, "landmarks_", None) is None:
        raise interrupted
    landmarks = np.asarray(estimator.landmarks_)
    # On the sphere a landmark's squared entries sum to one: a word distribution.
    for k, landmark in enumerate(landmarks, start=1):
        print(f"topic {k:3d}: {' '.join(top_words(landmark, vocabulary, args.top))}")
    sys.stdout.flush()
    if args.output:
        write(complete=not interrupted)
        say(args, f"wrote {len(landmarks)} topic landmarks and the vocabulary to {args.output}")
    if interrupted:
        print("landmarking topics: interrupted; printed the topics finished so far.",
              file=sys.stderr)
        return INTERRUPTED
    return 0


def _read_previous(args, vocabulary):
    """The saved run that ``topics --continue`` extends, checked against this one."""
    saved = read_result(args.previous, required=["landmarks", "vocabulary", "parameters"])
    if saved.get("input_sha256") and saved["input_sha256"] != _corpus_sha256(args):
        raise InputError(
            f"{args.previous}: was learnt from another corpus than {args.corpus} (the sha256 "
            "differs); continue a run on the same CORPUS, or start a new run without --continue."
        )
    options = {"vocabulary_size": "--vocabulary", "field": "--field",
               "strip_headers": "--strip-headers"}
    for name, option in options.items():
        value = args.vocabulary if name == "vocabulary_size" else getattr(args, name)
        if name in saved["parameters"] and saved["parameters"][name] != value:
            raise InputError(
                f"{args.previous}: was learnt with {option} {saved['parameters'][name]}, not "
                f"{value}; pass the same {option}."
            )
    if not np.array_equal(saved["vocabulary"], np.asarray(vocabulary).astype(str)):
        raise InputError(
            f"{args.previous}: its vocabulary differs from this corpus's; continue a run on "
            "the same CORPUS with the same options."
        )
    check_more_requested(args, len(saved["landmarks"]), "topics")
    return saved


def _corpus_sha256(args):
    if getattr(args, "corpus_sha256", None) is None:
        args.corpus_sha256 = input_sha256(args.corpus, suffixes=(".txt",))
    return args.corpus_sha256


def _write_topics(args, estimator, landmarks, vocabulary, *, complete):
    params = parameters(estimator, method="gp", vocabulary_size=args.vocabulary,
                        field=args.field, strip_headers=args.strip_headers)
    params["n_landmarks"] = args.n_landmarks
    write_result(args.output, {"landmarks": np.asarray(landmarks),
                               "vocabulary": np.asarray(vocabulary),
                               "kernel_width": getattr(estimator, "kernel_width_", None),
                               "n_requested": np.asarray(args.n_landmarks),
                               "complete": np.asarray(complete)},
                 parameters=params, source=args.corpus, command=args.command_line,
                 fmt="npz", force=may_replace_output(args), source_sha256=_corpus_sha256(args))
    mark_written(args)
