"""``Approval``: what a tool call needs before it runs, and what its approval saw, as one value keyed by the call id.

A tool's ``approval()`` returns an ``Approval[Out]``: the question for the policy (``request``, an
``ApprovalRequest``; None when the call needs no approval) and, for the file tools, the ``changes`` it will make,
each a ``PlannedChange`` holding the ``FileSnapshot`` the diff was computed from (path, hash, the old content itself)
and the new text the user was shown, with the result the tool reports when the call goes as approved
(``planned``). The approval flow grants it (``granted``: how) or refuses the call; ``run`` receives the granted
value and works from it, so nothing a later step depends on hides in the parsed input. The turn loop stores each
change's ``record()`` (a ``FileChange``) with ``ToolCallRunning``, before the tool writes. Modelled on pydantic-ai's
deferred tools, where an approval is a value keyed by the tool call id.

Plain data: nothing here reads, writes or decides.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Generic, Literal, TypeVar

from hermes_acp.core import FileChange

from .context import ApprovalRequest

__all__ = ["Approval", "FileSnapshot", "Grant", "PlannedChange", "sha256"]

Out = TypeVar("Out")
Grant = Literal["not_needed", "policy", "allow_once", "allow_always"]
"""How a call was cleared: it asked nothing, the policy allowed it, or the user did (once, or always)."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class FileSnapshot:
    """A file as a change found it: its path, the hash of its bytes, and the content itself (the reference a later
    restore copies from). ``data`` None: the file did not exist."""

    path: Path
    data: bytes | None
    text: str | None
    """The content as the diff shows it (undecodable bytes as U+FFFD); None with ``data``."""
    digest: str | None
    """SHA-256 of ``data``."""

    @classmethod
    def of(cls, path: Path, data: bytes | None, text: str | None = None) -> FileSnapshot:
        if data is None:
            return cls(path, None, None, None)
        shown = text if text is not None else data.decode("utf-8", errors="replace")
        return cls(path, data, shown, sha256(data))

    @property
    def exists(self) -> bool:
        return self.data is not None


@dataclass(frozen=True, slots=True)
class PlannedChange:
    """A change to one file computed for approval: the snapshot it starts from and the text it writes (with its
    UTF-8 bytes, which are what the file will hold)."""

    before: FileSnapshot
    after: str
    after_data: bytes
    real: Path | None = None
    """The path with its links resolved, as the policy judged it: where the local disk writes (never resolved
    again, so a folder swapped for a link after the approval is refused, not followed). None: the path itself."""

    @property
    def changes_anything(self) -> bool:
        return self.before.data != self.after_data

    def record(self) -> FileChange:
        """The change as the log keeps it (the old content verbatim; text when it is UTF-8, else base64)."""
        data = self.before.data
        before: str | None = None
        encoding: Literal["utf-8", "base64"] = "utf-8"
        if data is not None:
            try:
                before = data.decode("utf-8")
            except UnicodeDecodeError:
                before, encoding = base64.b64encode(data).decode("ascii"), "base64"
        return FileChange(
            path=str(self.before.path),
            before=before,
            before_encoding=encoding,
            before_sha256=self.before.digest,
            after_sha256=sha256(self.after_data),
            real_path=None if self.real in (None, self.before.path) else str(self.real),
        )


@dataclass(frozen=True, slots=True)
class Approval(Generic[Out]):
    """What one call needs before it runs (``request``), what it will change (``changes``) and report (``planned``),
    and, once the approval flow cleared it, how (``granted``). Keyed by ``tool_call_id``: a tool runs only with its own
    call's grant."""

    tool_call_id: str
    request: ApprovalRequest | None = None
    """The question for the policy; None: the call needs no approval."""
    changes: tuple[PlannedChange, ...] = ()
    planned: Out | None = None
    """The tool's result when the call goes as approved, computed with the changes (``edit_file``: its counts)."""
    granted: Grant | None = None
    """None until the approval flow clears the call."""

    def grant(self, how: Grant) -> Approval[Out]:
        return replace(self, granted=how)

    def records(self) -> list[FileChange]:
        """The file changes to store before the call runs (a change that writes what the file holds is none)."""
        return [change.record() for change in self.changes if change.changes_anything]
