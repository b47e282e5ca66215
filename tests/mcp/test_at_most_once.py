"""At most once, for every user of the one supervised MCP connection (the editor's MCP servers over stdio and over
HTTP, and the cua-driver): a mutation whose answer is lost is never sent again, a replay-safe read is sent once
more on a fresh connection, a server that died between calls is replaced before anything is sent, and every wait
is bounded. The users and their faults: ``at_most_once_users.py``; what happened is read from the fixtures'
journals, never from the answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp.at_most_once_users import KINDS, Fault, Kind, open_user

pytestmark = pytest.mark.anyio

UNKNOWN = {"timeout_outcome_unknown", "transport_outcome_unknown"}


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> Kind:
    value: Kind = request.param
    return value


@pytest.mark.parametrize(
    ("fault", "code"), [("mutation_hangs", "timeout_outcome_unknown"), ("mutation_drops", "transport_outcome_unknown")]
)
async def test_a_mutation_whose_answer_is_lost_is_never_sent_again(
    tmp_path: Path, kind: Kind, fault: Fault, code: str
) -> None:
    async with open_user(kind, tmp_path, fault) as user:
        lost = await user.mutate()
        performed_then = user.performed()
        later = await user.mutate()
        performed, link = user.performed(), user.link
        connections, generation = link.connections, link.generation
    assert lost == code
    assert performed_then == 1, "the server acted once and was not asked again"
    assert later is None and performed == 2
    assert (connections, generation) == (2, 1), "the next call went out on a fresh connection"


@pytest.mark.parametrize("fault", ["read_hangs", "read_drops"])
async def test_a_read_whose_answer_is_lost_is_sent_once_more_on_a_fresh_connection(
    tmp_path: Path, kind: Kind, fault: Fault
) -> None:
    async with open_user(kind, tmp_path, fault) as user:
        outcome = await user.read()
        attempts, link = user.read_attempts(), user.link
        connections, generation = link.connections, link.generation
    assert outcome is None
    assert (connections, generation) == (2, 1)
    assert attempts in (2, None), "the lost read and its one replay"


@pytest.mark.parametrize("fault", ["read_hangs", "read_drops"])
async def test_a_read_lost_twice_is_reported_and_not_sent_a_third_time(
    tmp_path: Path, kind: Kind, fault: Fault
) -> None:
    async with open_user(kind, tmp_path, fault, times="always") as user:
        outcome = await user.read()
        attempts, generation = user.read_attempts(), user.link.generation
    assert outcome is not None and outcome not in UNKNOWN, "a read acted on nothing: a failure, not an unknown"
    assert generation == 2
    assert attempts in (2, None)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_server_that_died_between_calls_is_replaced_before_a_mutation_goes_out(
    tmp_path: Path, kind: Kind
) -> None:
    async with open_user(kind, tmp_path) as user:
        await user.kill_server()
        outcome = await user.mutate()
        performed, connections = user.performed(), user.link.connections
    assert outcome is None and performed == 1
    assert connections == 2


async def test_leaving_ends_the_connection_and_refuses_what_comes_later(tmp_path: Path, kind: Kind) -> None:
    async with open_user(kind, tmp_path) as user:
        assert await user.read() is None
        link = user.link
    assert link.state == "closed"
    assert await user.read() is not None
