"""Kept only for ``gp_newsgroups_topics.py``, which another branch rewrites: when it
is ported to :mod:`_common` (``argument_parser``/``parse``, ``newsgroups_sqrt_frequencies``,
``purity``), delete this file. Nothing else imports it.
"""

from _common import argument_parser, machine_line, parse, print_table, pyplot

__all__ = ["machine_line", "parse_args", "print_table", "pyplot"]


def parse_args(description, argv=None, extra=None):
    """--full, --out, --seed (plus ``extra(parser)``'s), as :func:`_common.parse`."""
    parser = argument_parser(description)
    if extra is not None:
        extra(parser)
    return parse(parser, argv)
