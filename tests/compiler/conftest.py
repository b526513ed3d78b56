"""Compiler tests run with the IR verifier after every pass."""

import pytest

from pullback.settings import config


@pytest.fixture(autouse=True)
def check_ir():
    with config.override(check_ir=True):
        yield
