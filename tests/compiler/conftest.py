"""Compiler tests run with the IR verifier after every pass."""

import pytest
from pullback.transforms import pipeline


@pytest.fixture(autouse=True)
def check_ir():
    pipeline.CHECK_IR[0] = True
    yield
    pipeline.CHECK_IR[0] = False
