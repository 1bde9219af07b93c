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


@pytest.fixture
def s3(monkeypatch):
    """moto's S3 server in this process (t/python/s3_server.py, which
    t/python-package.sh puts on the path), a bucket "pkg", and the
    environment the library reads pointing at it (inherited by the
    processes a test starts: a dask.distributed LocalCluster's workers)."""
    server_mod = pytest.importorskip(
        "s3_server", reason="moto[server] is not installed "
        "(scripts/setup-python-readers installs it)")
    boto3 = pytest.importorskip("boto3")
    server, port = server_mod.start(47300, 47399)
    if server is None:
        pytest.fail("no free port in 47300..47399 for moto's S3 server")
    endpoint = "http://127.0.0.1:%d" % port
    env = {"SHARDPIPE_S3_ENDPOINT": endpoint, "AWS_REGION": "us-east-1",
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
           "AWS_CONFIG_FILE": os.devnull}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    for k in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_ENDPOINT_URL",
              "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(k, raising=False)
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                 aws_access_key_id="testing",
                 aws_secret_access_key="testing").create_bucket(Bucket="pkg")
    yield endpoint
    server.shutdown()
