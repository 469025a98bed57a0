"""Fixtures of the Python client suites (confluent-kafka and kafka-python).
The broker address comes from ../conftest.py (WEIR_BOOTSTRAP)."""
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from compat_helpers import unique
from dataset import wait_leaders


@pytest.fixture(scope="session")
def admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap})


@pytest.fixture
def make_topic(admin):
    """Creates topics (replication factor 1) that are deleted after the test."""
    created = []

    def make(prefix, partitions, config=None):
        name = unique(prefix)
        fs = admin.create_topics([NewTopic(name, partitions, 1, config=config or {})])
        fs[name].result(30)
        created.append(name)
        wait_leaders(admin, name, partitions)
        return name

    yield make
    if created:
        for f in admin.delete_topics(created).values():
            try:
                f.result(15)
            except Exception:  # noqa: BLE001 - cleanup of a topic a test already deleted
                pass
