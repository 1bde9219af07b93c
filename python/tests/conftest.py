"""Fixtures of the shardpipe package's tests.

SHARDPIPE_TEST_SEED fixes the random inputs (the seed is printed), as for
the C tests; SHARDPIPE (the shardpipe program) lets a few tests compare
with the command-line tool, and they skip without it."""

import os
import random

import numpy as np
import pytest


def pytest_report_header(config):
    return "shardpipe test seed: %d (SHARDPIPE_TEST_SEED)" % _seed()


def _seed():
    s = os.environ.get("SHARDPIPE_TEST_SEED")
    if not hasattr(_seed, "value"):
        _seed.value = int(s) if s else random.SystemRandom().randrange(1 << 31)
    return _seed.value


@pytest.fixture
def rng(request):
    """A generator seeded from the run's seed and the test's name, so a
    failing case replays alone."""
    seed = _seed()
    print("seed %d (SHARDPIPE_TEST_SEED=%d)" % (seed, seed))
    return np.random.default_rng([seed, *request.node.nodeid.encode()])


@pytest.fixture
def cli():
    sp = os.environ.get("SHARDPIPE")
    if not sp or not os.access(sp, os.X_OK):
        pytest.skip("SHARDPIPE does not name the shardpipe program")
    return sp
