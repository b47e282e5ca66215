"""Secrets never reach a log line."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import structlog

from hermes_acp.telemetry import configure_logging, redact, register_secret


def test_redacts_secret_keys_known_values_and_token_patterns() -> None:
    register_secret("super-secret-value-123")
    assert redact("x", "api_key") == "***"
    assert redact({"headers": {"Authorization": "Bearer abcdefghijkl"}}) == {"headers": {"Authorization": "***"}}
    assert redact("key is super-secret-value-123 here") == "key is *** here"
    assert redact("Bearer abcdefghijklmnop") == "Bearer ***"
    assert "sk-proj-123456789abcdef" not in redact("use sk-proj-123456789abcdef now")


def test_log_lines_are_json_on_stderr_with_secrets_masked(capsys: pytest.CaptureFixture[str]) -> None:
    register_secret("sk-test-0123456789")
    configure_logging(None, "info", stderr_level="info")
    try:
        structlog.get_logger("t").info("calling provider", api_key="sk-test-0123456789", note="sk-test-0123456789")
        logging.getLogger("mcp").warning("sdk said sk-test-0123456789")
        captured = capsys.readouterr()
    finally:
        configure_logging(None, "warning")
    assert captured.out == ""
    lines = [json.loads(line) for line in captured.err.strip().splitlines()]
    assert lines[0]["api_key"] == "***"
    assert lines[0]["note"] == "***"
    assert "sk-test-0123456789" not in captured.err
    assert lines[1]["logger"] == "mcp"


def test_stderr_shows_warnings_and_the_file_keeps_info(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    configure_logging(tmp_path, "info")
    try:
        structlog.get_logger("t").info("routine detail")
        structlog.get_logger("t").warning("something to see")
        captured = capsys.readouterr()
    finally:
        configure_logging(None, "warning")
    shown = [json.loads(line)["event"] for line in captured.err.strip().splitlines()]
    kept = [json.loads(line)["event"] for line in (tmp_path / "hermes-acp.log").read_text().splitlines()]
    assert shown == ["something to see"], "some editors show every stderr line as an error"
    assert kept == ["routine detail", "something to see"]
