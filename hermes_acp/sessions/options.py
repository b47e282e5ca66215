"""``SessionOptions``: what one session is set to — its mode, model, thinking effort, switches and title — and the one
place that changes them.

The options live in the session's stored record (``record``: the mode and model in their columns, the thinking
effort and the switches in ``meta``, ``providers.effort`` and ``sessions.switches``), so a reload and a fork keep
them; each change is stored first, and the record kept is the store's answer. A child session follows its parent's
mode (``Lineage``) and refuses a client's change; the model is not switched while a model turn runs (``busy``).
Titles are set one at a time (a lock): an automatic one, written after the first turn (``write_title``: from the
prompt, or by ``agent.title_model``), is dropped when the session got a title meanwhile. The title model's request
is charged to the session's ``budget`` (no prompt's: it runs beside them) and stored with the title
(``TitleSet.usage``), so a reload counts it too; a spent session cap makes no request (the title is the prompt's).
One title job runs at a time.

It does not know the prompt queue, the audience, the turn wiring or ACP: whoever changed an option tells the editors.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from hermes_acp.config import Effort
from hermes_acp.core import ModeId, TitleSet, Usage, is_mode_id
from hermes_acp.core.modes import MODES
from hermes_acp.errors import InvalidParamsError, SessionBusyError, UnknownModeError
from hermes_acp.providers.catalog import CatalogModel, ModelCatalog
from hermes_acp.providers.effort import EFFORT_META_KEY, choose_effort, current_effort
from hermes_acp.storage.base import SessionRecord, utc_now
from hermes_acp.subagents.lineage import Lineage
from hermes_acp.turns.recorder import Recorder
from hermes_acp.turns.system_prompt import ClientSystemPrompt

from .metadata import normalise_title, stored_system_prompt
from .services import SessionServices
from .switches import SWITCHES, Switch, switch_value
from .titles import title_from_prompt, title_with_model

if TYPE_CHECKING:
    from hermes_acp.turns.budget import Budget

__all__ = ["SessionOptions"]


class SessionOptions:
    def __init__(
        self,
        record: SessionRecord,
        services: SessionServices,
        recorder: Recorder,
        lineage: Lineage,
        *,
        busy: Callable[[], bool],
        jobs: Callable[[Callable[[], Awaitable[None]], str], None],
        budget: Callable[[], Budget],
    ):
        self.record = record
        """The session's record as last stored."""
        self.client_system_prompt: ClientSystemPrompt | None = stored_system_prompt(record.meta)
        """The system prompt the client gave the session (stored with it), if any."""
        self._services = services
        self._recorder = recorder
        self._lineage = lineage
        self._busy = busy
        self._jobs = jobs
        self._budget = budget
        self._title_lock = anyio.Lock()
        self._titling = False
        """A title job is queued or running (a second prompt answered meanwhile starts no second one)."""

    @property
    def catalog(self) -> ModelCatalog:
        """The models the session may switch to (its connection's)."""
        return self._services.catalog

    @property
    def mode(self) -> ModeId:
        link = self._lineage.link
        if link is not None:
            return link.mode()
        mode = self.record.mode_id
        return mode if is_mode_id(mode) else "default"

    @property
    def model_id(self) -> str | None:
        return self.record.model_id

    @property
    def chosen_effort(self) -> str | None:
        """The thinking effort chosen for the session, if any (kept even while the model does not take it)."""
        chosen = self.record.meta.get(EFFORT_META_KEY)
        return chosen if isinstance(chosen, str) else None

    @property
    def effort(self) -> Effort | None:
        """The thinking effort the session's requests get (None: none is sent; see ``providers.effort``)."""
        return current_effort(self.current_model(), self.chosen_effort)

    def current_model(self) -> CatalogModel | None:
        """The session's model; the catalog's default when none is stored or the stored one left the catalog."""
        catalog = self._services.catalog
        model_id = self.model_id if self.model_id in catalog else catalog.default_id
        return catalog.get(model_id) if model_id is not None else None

    def configured_model(self, model_id: str) -> CatalogModel | None:
        catalog = self._services.catalog
        return catalog.get(model_id) if model_id in catalog else None

    def switches(self) -> list[tuple[Switch, bool]]:
        """The switches this session offers (``Switch.offered``), each with its value."""
        settings = self._services.settings
        return [(s, self.switch(s.id)) for s in SWITCHES if s.offered(settings)]

    def switch(self, switch_id: str) -> bool:
        """The value of one of ``switches.SWITCHES`` in this session."""
        switch = next(s for s in SWITCHES if s.id == switch_id)
        return switch_value(switch, self.record.meta, self._services.settings)

    async def set_mode(self, mode_id: str) -> None:
        self._lineage.refuse("mode changes")
        if not is_mode_id(mode_id):
            valid = ", ".join(m.id for m in MODES)
            raise UnknownModeError(f"unknown mode {mode_id!r}; valid modes: {valid}", field="modeId")
        self.record = await self._services.store.update_session(self.record.id, mode_id=mode_id)

    async def set_effort(self, value: str) -> None:
        """Choose the thinking effort (one of ``providers.effort.effort_choices`` for the current model); stored in
        the record's ``meta``, so a reload and a fork keep it. Takes effect from the next prompt."""
        self._lineage.refuse("option changes")
        chosen = choose_effort(self.current_model(), value)
        meta = {key: item for key, item in self.record.meta.items() if key != EFFORT_META_KEY}
        if chosen is not None:
            meta[EFFORT_META_KEY] = chosen
        self.record = await self._services.store.update_session(self.record.id, meta=meta)

    async def set_switch(self, switch_id: str, value: bool) -> None:
        """Turn a switch on or off; stored in the record's ``meta``. Takes effect from the next command or request
        (the sandbox of the next command follows the network switch)."""
        self._lineage.refuse("option changes")
        if all(s.id != switch_id for s in SWITCHES):
            raise InvalidParamsError(f"configId: unknown option {switch_id!r}", field="configId")
        meta = {**self.record.meta, switch_id: value}
        self.record = await self._services.store.update_session(self.record.id, meta=meta)

    async def set_model(self, model_id: str) -> None:
        self._lineage.refuse("model changes")
        self._services.catalog.get(model_id)
        if self._busy():
            raise SessionBusyError(
                f"session {self.record.id} is running a turn; switch models when it has finished (or cancel it first)"
            )
        self.record = await self._services.store.update_session(self.record.id, model_id=model_id)

    async def set_title(self, title: str, *, automatic: bool = False, spent: tuple[str, Usage] | None = None) -> str:
        """Set the title (``normalise_title``: the one rule for titles); the record first, then the event that
        tells the editors: once they have the update, ``session/list`` agrees. Returns the title as stored. An
        ``automatic`` one is dropped when the session got a title meanwhile (a client's, set while the model wrote
        this one): titles are set one at a time, so the check and the write cannot be split. ``spent``: the model
        and usage of the request that wrote it, stored with it (a dropped title's is not stored)."""
        title = normalise_title(title)
        async with self._title_lock:
            current = self._recorder.projection.title
            if automatic and current is not None:
                return current
            updated = await self._services.store.update_session(self.record.id, title=title)
            self.record = updated
            stored = updated.title or title
            model_id, usage = spent if spent is not None else (None, None)
            await self._recorder.record(TitleSet(title=stored, updated_at=utc_now(), model_id=model_id, usage=usage))
        return stored

    def answered(self) -> None:
        """A prompt was answered: a session a client opened that has no title yet gets one written, off the
        prompt's path (a job of the session's owner task)."""
        projection = self._recorder.projection
        if projection.title is None and self._lineage.link is None and projection.first_prompt and not self._titling:
            self._titling = True
            self._jobs(self.write_title, "title")

    async def write_title(self) -> None:
        """After the first turn, off the prompt's path: from the prompt text, or by ``agent.title_model`` while no
        session cap of the budget is spent (its request is charged to the session, no prompt's: later prompts may
        run meanwhile)."""
        try:
            await self._write_title()
        finally:
            self._titling = False

    async def _write_title(self) -> None:
        projection = self._recorder.projection
        first = projection.first_prompt
        if projection.title is not None or not first:
            return
        title: str | None = None
        spent: tuple[str, Usage] | None = None
        services = self._services
        title_model = services.settings.agent.title_model
        if title_model is not None and not (budget := self._budget()).session_exhausted:
            model = services.catalog.get(title_model)
            written = await title_with_model(services.providers.provider_for(model), model.model, first)
            if written is not None:
                title = written.title
                if written.usage is not None:
                    budget.charge(model.id, written.usage, prompt=False)  # no prompt's: it runs beside them
                    spent = (model.id, written.usage)
        title = title or title_from_prompt(first)
        if title:
            await self.set_title(title, automatic=True, spent=spent)
