"""docs/ci.md says what is true: its workflow blocks are the example files `make workflows` checks, each row of its
table of variables sets the key it says, to the value it says, and its table of exit codes is ``hermes-acp exec``'s
own (``headless.outcome.EXIT_CODES``)."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from hermes_acp.checks.sources import setting_origins
from hermes_acp.config import load_settings
from hermes_acp.headless.outcome import EXIT_CODES

ROOT = Path(__file__).resolve().parents[2]
CI = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
YAML_BLOCK = re.compile(r"^```yaml\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
ROW = re.compile(
    r"^\| `(?P<assignment>HERMES_ACP_\w+=[^`]+)` \| `\[(?P<section>[\w.]+)\] (?P<line>[^`]+)`", re.MULTILINE
)


def test_the_workflow_blocks_are_the_example_files() -> None:
    blocks = [match["body"] for match in YAML_BLOCK.finditer(CI)]
    examples = ROOT / "docs" / "examples"
    assert blocks == [
        (examples / "hermes-acp-ci.yml").read_text(encoding="utf-8"),
        (examples / "hermes-acp.gitlab-ci.yml").read_text(encoding="utf-8"),
    ]


def test_each_variable_of_the_table_sets_the_key_it_names(tmp_path: Path) -> None:
    rows = list(ROW.finditer(CI))
    assert len(rows) >= 8
    for row in rows:
        [assignment] = shlex.split(row["assignment"])
        variable, _, text = assignment.partition("=")
        expected = tomllib.loads(row["line"])
        [(key, value)] = expected.items()
        dotted = f"{row['section']}.{key}"
        env = {variable: text}
        if dotted.startswith("providers.") or dotted == "model.default":
            env |= {"HERMES_ACP_PROVIDERS__LOCAL__KIND": "openai", "HERMES_ACP_PROVIDERS__LOCAL__MODELS": '["qwen3"]'}
            env.setdefault("HERMES_ACP_PROVIDERS__LOCAL__BASE_URL", "http://127.0.0.1:9/v1")
        origins = {o.key: o for o in setting_origins(load_settings(env, home=tmp_path))}
        found = origins[dotted]
        shown = [m["id"] for m in found.value] if dotted.endswith(".models") else found.value
        assert (shown, found.variable) == (value, variable), row.group()


def test_the_table_of_exit_codes_is_exec_s_own() -> None:
    table = CI.split("### Exit codes", 1)[1].split("\n\n", 2)[1]
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    assert {int(code.strip("| ")): meaning.rstrip(" |") for code, meaning in rows} == dict(EXIT_CODES.values())
