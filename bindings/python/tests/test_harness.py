"""The test harness's own promise: every process it started is stopped, also when a start fails."""

import sys

import pytest
from conftest import free_port, start_all, start_service


def test_services_started_before_one_that_fails_are_stopped(tmp_path):
    started = []

    def listening():
        port = free_port()
        service = start_service(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"], port, tmp_path / "up.log"
        )
        started.append(service)
        return service

    def failing():
        return start_service([sys.executable, "-c", "raise SystemExit(3)"], free_port(), tmp_path / "down.log")

    with pytest.raises(AssertionError, match="exited"):
        start_all(listening, failing)
    assert len(started) == 1
    assert started[0].proc.poll() is not None, "the service started first is still running"
