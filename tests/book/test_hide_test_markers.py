"""The build drops nbval's marker lines from the code it shows, and nothing else."""

import json

from verifiable_grpo.book.hide_test_markers import strip_markers


def test_marker_lines_go_and_the_rest_of_the_notebook_stays():
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "source": ["# NBVAL_IGNORE_OUTPUT\n", "widget()\n"],
                "outputs": [],
            },
            {"cell_type": "code", "source": "#NBVAL_SKIP\nx = 1  # NBVAL_ in a comment stays\n"},
            {"cell_type": "markdown", "source": ["# NBVAL_IGNORE_OUTPUT is explained here\n"]},
        ],
        "metadata": {"kernelspec": {"name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    stripped = json.loads(strip_markers(json.dumps(notebook)))
    assert [c["source"] for c in stripped["cells"]] == [
        "widget()\n",
        "x = 1  # NBVAL_ in a comment stays\n",
        ["# NBVAL_IGNORE_OUTPUT is explained here\n"],
    ]
    assert stripped["metadata"] == notebook["metadata"]
