"""Session checks shared by the pytest suites under test/compat (python/ and cli/)."""
import os

import pytest


def pytest_sessionstart(session):
    if not os.environ.get("WEIR_BOOTSTRAP", "").strip():
        raise pytest.UsageError(
            "WEIR_BOOTSTRAP is not set: these tests drive a live broker; "
            "run them through test/compat/run (see test/compat/README.md)")


@pytest.fixture(scope="session")
def bootstrap():
    return os.environ["WEIR_BOOTSTRAP"].strip()
