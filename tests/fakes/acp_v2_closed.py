"""ACP v2 frames checked against the closed lists of what v2 defines, beside the (open) schema.

Every union of the v2 schema ends in an "other" variant, for forward compatibility: any ``sessionUpdate``, content
``type``, ``state`` or ``stopReason`` string validates. So a v1 frame on a v2 connection passes schema validation
(``tool_call``, ``plan``, ``current_mode_update``, a ``{"type": "terminal"}`` of a client terminal is fine, but a
v1 diff in an "other" content wrapper is not caught) and so does a typo. The lists here are read from the schema's
own named variants (each union's ``const`` values, "other" excluded), never from the server's code, and every
discriminator a frame of ours carries is checked against its list: update kinds, content and tool-call content
types, diff operations and patch formats, states and stop reasons, tool statuses and kinds, plan types and entry
statuses, command and command-input types, config option types, auth method types, permission subjects and option
kinds, compaction statuses, session statuses. A ``_``-prefixed value is an extension and passes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["closed_problems"]


def closed_problems(method: str | None, definition: str, instance: Any, defs: dict[str, Any]) -> list[str]:
    """What in ``instance`` (a frame's params or result, described by ``definition``; ``method`` the frame's or
    the one it answers) names no variant of v2 (``defs``: the unstable v2 schema's ``$defs``, a superset)."""
    found = _Walk(defs)
    if not isinstance(instance, dict):
        return []
    if method == "session/update" and definition.endswith("Notification"):
        found.update(instance.get("update"))
    elif method == "session/request_permission" and definition.endswith("Request"):
        found.permission(instance)
    elif definition.endswith("Response"):
        found.result(method, instance)
    return found.problems


_NAMED: dict[tuple[int, str, str | None], frozenset[str]] = {}


def _named(defs: dict[str, Any], union: str, field: str | None) -> frozenset[str]:
    """The ``const`` values of ``union``'s variants (of their ``field`` when given): every variant but "other"."""
    key = (id(defs), union, field)
    if key not in _NAMED:
        variants = defs[union].get("anyOf") or defs[union].get("oneOf") or []
        values = [
            v.get("const") if field is None else v.get("properties", {}).get(field, {}).get("const") for v in variants
        ]
        found = frozenset(value for value in values if isinstance(value, str))
        assert found, f"{union}.{field}: no named variants in the schema"
        _NAMED[key] = found
    return _NAMED[key]


class _Walk:
    def __init__(self, defs: dict[str, Any]):
        self.defs = defs
        self.problems: list[str] = []

    def check(self, where: str, value: Any, union: str, field: str | None = None) -> None:
        if value is None or (isinstance(value, str) and value.startswith("_")):
            return
        allowed = _named(self.defs, union, field)
        if value not in allowed:
            self.problems.append(f"{where}: {value!r} is no {union} v2 defines ({', '.join(sorted(allowed))})")

    def update(self, update: Any) -> None:
        if not isinstance(update, dict):
            return
        kind = update.get("sessionUpdate")
        self.check("update.sessionUpdate", kind, "SessionUpdate", "sessionUpdate")
        match kind:
            case "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" | "session_message_chunk":
                self.block("update.content", update.get("content"))
            case "user_message" | "agent_message" | "agent_thought" | "session_message":
                for index, block in enumerate(update.get("content") or []):
                    self.block(f"update.content[{index}]", block)
            case "tool_call_update":
                self.tool_call("update", update)
            case "tool_call_content_chunk":
                self.tool_content("update.content", update.get("content"))
            case "state_update":
                self.state("update", update)
            case "subagent_update":
                if isinstance(update.get("state"), dict):
                    self.state("update.state", update["state"])
            case "plan_update":
                self.plan(update.get("plan"))
            case "available_commands_update":
                self.commands("update.availableCommands", update.get("availableCommands"))
            case "config_option_update":
                self.options("update.configOptions", update.get("configOptions"))
            case "compaction_update":
                self.check("update.status", update.get("status"), "CompactionStatus")
                for index, block in enumerate(update.get("summary") or []):
                    self.block(f"update.summary[{index}]", block)
            case "compaction_summary_chunk":
                self.block("update.content", update.get("content"))
            case "notice":
                self.check("update.severity", update.get("severity"), "NoticeSeverity")

    def block(self, where: str, block: Any) -> None:
        if isinstance(block, dict):
            self.check(f"{where}.type", block.get("type"), "ContentBlock", "type")

    def tool_call(self, where: str, call: dict[str, Any]) -> None:
        self.check(f"{where}.status", call.get("status"), "ToolCallStatus")
        self.check(f"{where}.kind", call.get("kind"), "ToolKind")
        for index, item in enumerate(call.get("content") or []):
            self.tool_content(f"{where}.content[{index}]", item)

    def tool_content(self, where: str, item: Any) -> None:
        if not isinstance(item, dict):
            return
        kind = item.get("type")
        self.check(f"{where}.type", kind, "ToolCallContent", "type")
        if kind == "content":
            self.block(f"{where}.content", item.get("content"))
        elif kind == "diff":
            for index, change in enumerate(item.get("changes") or []):
                if isinstance(change, dict):
                    self.check(
                        f"{where}.changes[{index}].operation", change.get("operation"), "DiffChange", "operation"
                    )
            if isinstance(item.get("patch"), dict):
                self.check(f"{where}.patch.format", item["patch"].get("format"), "DiffPatchFormat")

    def state(self, where: str, state: dict[str, Any]) -> None:
        self.check(f"{where}.state", state.get("state"), "StateUpdate", "state")
        if state.get("state") == "idle":
            self.check(f"{where}.stopReason", state.get("stopReason"), "IdleStateUpdate", "stopReason")

    def plan(self, plan: Any) -> None:
        if not isinstance(plan, dict):
            return
        self.check("update.plan.type", plan.get("type"), "PlanUpdateContent", "type")
        for index, entry in enumerate(plan.get("entries") or []):
            if isinstance(entry, dict):
                self.check(f"update.plan.entries[{index}].status", entry.get("status"), "PlanEntryStatus")
                self.check(f"update.plan.entries[{index}].priority", entry.get("priority"), "PlanEntryPriority")

    def commands(self, where: str, commands: Any) -> None:
        for index, command in enumerate(commands or []):
            if isinstance(command, dict):
                self.check(f"{where}[{index}].type", command.get("type"), "AvailableCommand", "type")
                if isinstance(command.get("input"), dict):
                    self.check(
                        f"{where}[{index}].input.type", command["input"].get("type"), "AvailableCommandInput", "type"
                    )

    def options(self, where: str, options: Any) -> None:
        for index, option in enumerate(options or []):
            if isinstance(option, dict):
                self.check(f"{where}[{index}].type", option.get("type"), "SessionConfigOption", "type")

    def permission(self, params: dict[str, Any]) -> None:
        subject = params.get("subject")
        if isinstance(subject, dict):
            self.check("subject.type", subject.get("type"), "RequestPermissionSubject", "type")
            if isinstance(subject.get("toolCall"), dict):
                self.tool_call("subject.toolCall", subject["toolCall"])
        for index, option in enumerate(params.get("options") or []):
            if isinstance(option, dict):
                self.check(f"options[{index}].kind", option.get("kind"), "PermissionOptionKind")

    def result(self, method: str | None, result: dict[str, Any]) -> None:
        for index, auth in enumerate(result.get("authMethods") or []):
            if isinstance(auth, dict):
                self.check(f"authMethods[{index}].type", auth.get("type"), "AuthMethod", "type")
        self.options("configOptions", result.get("configOptions"))
        self.commands("availableCommands", result.get("availableCommands"))
        if method == "session/status":
            self.check("status", result.get("status"), "SessionStatus")
            if isinstance(result.get("state"), dict):
                self.state("state", result["state"])
