"""No test reaches past a production module's public surface (``probes/private_patches.py``): it patches no
``_private`` name or module constant of hermes_acp and reads no private attribute of its objects; and the checker
finds each kind of site it is meant to."""

from __future__ import annotations

from pathlib import Path

from probes.private_patches import counted, find_sites, main

ROOT = Path(__file__).resolve().parents[2]

PLANTED = """
import os
import subprocess
from unittest import mock

from PKG.images import cache as image_cache
from PKG.exec import process
from PKG.turns.approvals import _hidden


def test_planted(monkeypatch, provider):
    monkeypatch.setattr(image_cache, "LOCK_WAIT_S", 0.0)
    monkeypatch.setattr("PKG.exec.process._members_alive", None)
    monkeypatch.setattr(process, "run_command", None)
    monkeypatch.setattr(os, "_exit", None)
    with mock.patch.object(provider, "_client"):
        assert provider._client.is_closed
    provider._params = None
    os._exit(0)
    self_made = object()
    subprocess.run(["python", "-c", "import PKG.cli as c\\nc._serve()"])
""".replace("PKG", "hermes" + "_acp")  # spelled apart: this file's own strings are read as scripts too


def test_no_test_patches_a_private_name_or_reads_a_private_attribute_of_a_production_object() -> None:
    assert [str(site) for site in counted(find_sites(ROOT))] == []
    assert main(["--root", str(ROOT)]) == 0


def test_each_kind_of_site_is_found(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_planted.py").write_text(PLANTED)
    sites = {(site.kind, site.name) for site in find_sites(tmp_path)}
    assert sites == {
        ("private-import", "hermes_acp.turns.approvals._hidden"),
        ("constant-patch", "image_cache.LOCK_WAIT_S"),
        ("private-patch", "hermes_acp.exec.process._members_alive"),
        ("public-patch", "process.run_command"),
        ("private-patch", "provider._client"),
        ("private-read", "provider._client"),
        ("private-patch", "provider._params"),
        ("private-read", "c._serve"),
    }
    assert main(["--root", str(tmp_path)]) == 1
