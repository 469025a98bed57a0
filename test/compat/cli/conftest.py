"""Fixtures of the Kafka command-line tools suite; the broker address comes from
../conftest.py (WEIR_BOOTSTRAP)."""
import pytest

from kafka_tools import Tools


@pytest.fixture(scope="session")
def tools(bootstrap):
    return Tools(bootstrap)
