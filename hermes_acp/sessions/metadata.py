"""Session metadata editors set: the title a client (or ``/title``) gives, and the system prompt stored with a session.

``normalise_title`` is the one rule for a title a person sets (``session/set_title``, ``/title``): the one sanitizer,
whitespace (newlines included) collapsed to single spaces, at most ``MAX_SET_TITLE_CHARS`` characters; empty after
that is an invalid-params error. A title set so is never replaced by an automatic one afterwards (the session's
title job checks the projection again once its model answered). The client's system prompt lives in the record's
``meta`` under ``SYSTEM_PROMPT_META_KEY`` (``ClientSystemPrompt.as_meta``), so a reload, a resume and a fork build
the same prompt byte for byte. No ACP here.
"""

from __future__ import annotations

from typing import Any

from hermes_acp.core.sanitize import clean_text
from hermes_acp.errors import InvalidParamsError
from hermes_acp.turns.system_prompt import ClientSystemPrompt

__all__ = [
    "MAX_SET_TITLE_CHARS",
    "SYSTEM_PROMPT_META_KEY",
    "normalise_title",
    "stored_system_prompt",
    "with_system_prompt",
]

MAX_SET_TITLE_CHARS = 200
SYSTEM_PROMPT_META_KEY = "system_prompt"


def normalise_title(raw: str, *, field: str = "title") -> str:
    """The title as it is stored and shown; ``InvalidParamsError`` when nothing is left of it."""
    title = " ".join(clean_text(raw).split())
    if len(title) > MAX_SET_TITLE_CHARS:
        title = title[: MAX_SET_TITLE_CHARS - 1].rstrip() + "…"
    if not title:
        raise InvalidParamsError(f"{field}: empty once whitespace is removed; a title needs some text", field=field)
    return title


def stored_system_prompt(meta: dict[str, Any]) -> ClientSystemPrompt | None:
    return ClientSystemPrompt.from_meta(meta.get(SYSTEM_PROMPT_META_KEY))


def with_system_prompt(meta: dict[str, Any], prompt: ClientSystemPrompt | None) -> dict[str, Any]:
    """``meta`` with ``prompt`` stored (None: left as it is)."""
    if prompt is None:
        return meta
    return {**meta, SYSTEM_PROMPT_META_KEY: prompt.as_meta()}
