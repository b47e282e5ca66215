"""Model-facing names of MCP tools: sanitised, clamped with a hash, unique and deterministic."""

from __future__ import annotations

import itertools
import re

from hermes_acp.mcp_client import MAX_NAME_LENGTH, ToolKey, assign_names
from hermes_acp.mcp_client.naming import HASH_LENGTH

SAFE = re.compile(r"^[A-Za-z0-9_]{1,64}$")


def test_names_are_prefixed_and_sanitised() -> None:
    keys = [ToolKey(0, "git-hub.com", "search issues/v2"), ToolKey(0, "fs", "read_file")]
    names = assign_names(keys)
    assert names[keys[0]] == "mcp__git_hub_com__search_issues_v2"
    assert names[keys[1]] == "mcp__fs__read_file"


def test_long_names_are_clamped_with_a_hash_that_keeps_them_apart() -> None:
    long_tool = "a_very_long_tool_name_that_goes_on_and_on_and_on_forever"
    keys = [ToolKey(0, "server", long_tool + "_one"), ToolKey(0, "server", long_tool + "_two")]
    names = assign_names(keys)
    first, second = names[keys[0]], names[keys[1]]
    assert len(first) == len(second) == MAX_NAME_LENGTH
    assert first != second
    assert first[: MAX_NAME_LENGTH - HASH_LENGTH - 1] == second[: MAX_NAME_LENGTH - HASH_LENGTH - 1]
    assert re.fullmatch(r"[0-9a-f]{8}", first[-HASH_LENGTH:])
    assert SAFE.match(first) and SAFE.match(second)


def test_collisions_resolve_deterministically_whatever_the_input_order() -> None:
    keys = [
        ToolKey(0, "a.b", "t"),
        ToolKey(1, "a-b", "t"),
        ToolKey(2, "a_b", "t"),
        ToolKey(3, "a_b", "t"),  # the same server name twice
        ToolKey(2, "a_b", "t", utility=True),
    ]
    results = {
        tuple(sorted(assign_names(list(order)).items(), key=lambda kv: repr(kv[0])))
        for order in itertools.permutations(keys)
    }
    assert len(results) == 1
    names = assign_names(keys)
    assert len(set(names.values())) == len(keys)
    assert all(SAFE.match(n) for n in names.values())
    # The first by (sanitised name, original names, position) keeps the plain name: "a-b" sorts before "a.b".
    assert names[ToolKey(1, "a-b", "t")] == "mcp__a_b__t"
    assert names[ToolKey(0, "a.b", "t")].startswith("mcp__a_b__t_")


def test_a_server_tool_outranks_our_helper_of_the_same_name() -> None:
    own = ToolKey(0, "docs", "list_resources")
    helper = ToolKey(0, "docs", "list_resources", utility=True)
    names = assign_names([helper, own])
    assert names[own] == "mcp__docs__list_resources"
    assert names[helper] != names[own]
