"""Runs last (files run in name order): the ratio test must have passed on
enough distinct minor versions.  conftest's sessionfinish hook enforces the
same rule when this test is deselected or the order is changed."""
import pytest

import conftest


def test_interpreter_coverage():
    if not conftest._ratio_selected:
        pytest.skip("the ratio test was not selected")
    missing = sorted(set(conftest._ratio_selected) - {
        i for ids in conftest._ratio_minors.values() for i in ids})
    assert len(conftest._ratio_minors) >= conftest.MIN_MINORS, \
        conftest._minor_check_message() + "; ratio test not passed on: %s" % missing
