"""The `retrograd` command line (`retrograd train | sample | graph | check`); `main` runs it.

    main.py     the dispatcher: parses, runs a subcommand, turns errors into exit statuses
    train.py    `retrograd train`: the training run (data, model and loss come from a task)
    digits.py   the digits task (MLP or CNN on scikit-learn's 8x8 digits)
    runfiles.py the run folder's files (names, whole-file writes, the graph) every task writes
    names.py    the names task (character-level language models, retrograd.models.names)
    sample.py   `retrograd sample`: names made up by a saved names run
    graph.py    `retrograd graph`: an expression's graph with values and gradients
    check.py    `retrograd check`: every op in the table against finite differences
    options.py  the parser and checked argument types;  errors.py  UsageError, CommandFailed

Nothing outside this package imports from it.
"""

from .main import main

__all__ = ["main"]
