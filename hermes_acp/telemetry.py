"""Logging: structlog JSON lines on stderr and in ``$HERMES_ACP_HOME/logs/``, secrets redacted.

stdout is the protocol channel, so nothing here ever writes to it. ``configure_logging`` must run before anything
logs; it also routes the stdlib loggers (``mcp``, ``httpx``, our own protocol layer's) through the same
JSON formatter. Known secret values (API keys read from the environment) are registered with ``register_secret``
and replaced wherever they appear. This module configures logging; it knows nothing about sessions or protocols.
"""

from __future__ import annotations

import logging
import logging.handlers
import re
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import structlog

from hermes_acp import anchored

__all__ = ["configure_logging", "get_logger", "private_opener", "redact", "register_secret"]

_SECRET_KEYS = re.compile(r"(api[_-]?key|authorization|x-api-key|token|secret|password|cookie)", re.IGNORECASE)
_SECRET_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\b(sk-[A-Za-z0-9_-]{6})[A-Za-z0-9_-]{8,}"),
)
_known_secrets: set[str] = set()
_LOG_FILE_BYTES = 5 * 1024 * 1024
_LOG_FILE_COUNT = 3
REDACTED = "***"


def register_secret(value: str | None) -> None:
    """Remember a secret value (an API key) so it is masked in every log line from now on."""
    if value and len(value) >= 6:
        _known_secrets.add(value)


def redact(value: Any, key: str | None = None) -> Any:
    """Mask secrets in ``value``: whole values under secret-looking keys, known secrets and token patterns."""
    if key is not None and _SECRET_KEYS.search(key) and value not in (None, "", False):
        return REDACTED
    if isinstance(value, str):
        for secret in _known_secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        for pattern in _SECRET_PATTERNS:
            value = pattern.sub(lambda m: m.group(1) + REDACTED, value)
        return value
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def _redact_processor(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    return {k: redact(v, None if k == "event" else k) for k, v in event_dict.items()}


def configure_logging(logs_dir: Path | None, level: str = "info", *, stderr_level: str = "warning") -> None:
    """Send structlog and stdlib logging, as JSON, to stderr and (when given) a rotating file in ``logs_dir``.

    The file keeps everything at ``level`` and above; stderr only ``stderr_level`` and above (some editors show
    every stderr line as an error)."""
    names = logging.getLevelNamesMapping()
    file_level = names.get(level.upper(), logging.INFO)
    console_level = names.get(stderr_level.upper(), logging.WARNING)
    numeric = min(file_level, console_level)
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            _redact_processor,
            structlog.processors.JSONRenderer(),
        ],
    )
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(console_level)
    handlers: list[logging.Handler] = [console]
    if logs_dir is not None:
        try:
            log_file = _PrivateRotatingFile(
                logs_dir / "hermes-acp.log",
                maxBytes=_LOG_FILE_BYTES,
                backupCount=_LOG_FILE_COUNT,
                encoding="utf-8",
            )
            log_file.setLevel(file_level)
            handlers.append(log_file)
        except OSError as exc:
            sys.stderr.write(f"hermes-acp: cannot write logs to {logs_dir}: {exc}\n")
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.setLevel(numeric)
    logging.getLogger("mcp").setLevel(max(numeric, logging.INFO))
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(numeric, logging.WARNING))
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        cache_logger_on_first_use=True,
    )


class _PrivateRotatingFile(logging.handlers.RotatingFileHandler):
    """The rotating log file, created ``0600`` in a folder created ``0700`` whatever the umask (its lines may quote
    what the user and the model said), opened without following a link."""

    def _open(self) -> Any:
        return open(self.baseFilename, self.mode, encoding=self.encoding, errors=self.errors, opener=private_opener)


def private_opener(path: str, flags: int) -> int:
    """An ``opener`` for ``open`` that creates the file ``0600`` (its folder ``0700``) and never follows a link."""
    file = Path(path)
    return anchored.open_fd(file.parent, file, flags, folders=anchored.PRIVATE_FOLDER)


def get_logger(name: str) -> Any:
    """A structlog logger bound to ``name`` (call after ``configure_logging``; lazily bound before it)."""
    return structlog.get_logger(name)
