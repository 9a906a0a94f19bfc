"""Fixtures of the burrow package's tests: a fresh store per test, the CLI binary."""

from __future__ import annotations

import os
import subprocess

import pytest

import burrow


def required() -> bool:
    return os.environ.get("BURROW_REQUIRE_PYTHON_PACKAGE") == "1"


def need(module: str):
    """Imports an optional module (the Anthropic SDK), or skips; fails in CI."""
    if required():
        return __import__(module)
    return pytest.importorskip(module)


@pytest.fixture
def store(tmp_path):
    return tmp_path / "burrow.db"


@pytest.fixture
def sb(store):
    return burrow.Sandbox(store)


@pytest.fixture
def s(sb):
    return sb.create("work")


@pytest.fixture
def cli(store):
    """Runs the `burrow` CLI on the test's store: (exit code, stdout, stderr)."""
    exe = os.environ.get("BURROW_BIN")
    if not exe or not os.path.exists(exe):
        if required():
            raise AssertionError("BURROW_BIN is not set to the burrow binary")
        pytest.skip("the burrow binary is not built (BURROW_BIN)")

    def run(*args: str, stdin: str = ""):
        p = subprocess.run(
            [exe, "--store", str(store), *args],
            input=stdin.encode(),
            capture_output=True,
            timeout=120,
        )
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    return run
