"""Helpers shared by the pytest suites under test/compat: names and polling."""
import secrets
import time


def unique(prefix):
    """A topic or group name unique to this run."""
    return f"compat-py-{prefix}-{secrets.token_hex(4)}"


def eventually(fn, timeout=30.0, interval=0.1):
    """Calls fn until it returns without raising, re-raising its last error after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except Exception:  # noqa: BLE001 - any failure is retried until the deadline
            if time.monotonic() >= deadline:
                raise
        time.sleep(interval)
