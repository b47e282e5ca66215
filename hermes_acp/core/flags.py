"""Re-armed events, in one place: ``Flag`` (a wake-up one waiter takes) and ``Changed`` (a pulse every waiter sees).

An ``anyio.Event`` is set once; code that needs the same signal again makes a fresh one. The two ways that is done
right:

- ``Flag``: ``set`` any number of times; ``wait`` returns once after them and re-arms it, so a producer that sets it
  many times wakes its one consumer once per pass (new output to show, a checkpoint due, a connection wanted).
  ``is_set``: a wake-up is pending.
- ``Changed``: ``notify`` wakes every task waiting at that moment; a task that waits after it waits for the next one.
  Check the condition, then ``wait`` with no ``await`` between, and nothing is missed (state changes and their
  ``notify`` happen on the same event loop).

It knows nothing of what is signalled.
"""

from __future__ import annotations

import anyio

__all__ = ["Changed", "Flag"]


class Flag:
    """A wake-up for one waiter (see the module docstring). ``pending``: start with one pending."""

    __slots__ = ("_event",)

    def __init__(self, *, pending: bool = False) -> None:
        self._event = anyio.Event()
        if pending:
            self._event.set()

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        """Until set (at once when it is), then clear it."""
        await self._event.wait()
        self._event = anyio.Event()


class Changed:
    """A pulse every waiter sees (see the module docstring)."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = anyio.Event()

    def notify(self) -> None:
        """Wake every task waiting now."""
        event, self._event = self._event, anyio.Event()
        event.set()

    async def wait(self) -> None:
        """Until the next ``notify``."""
        await self._event.wait()
