"""Running several processes: ``serve --workers N`` refuses what cannot work, a second process on the
same database without a shared Redis is refused (by the command and by the app as it starts), and
``agentloft doctor`` reports the database, Redis, the server processes and the models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory

from agentloft.core import migrate
from agentloft.llm import service as llm_service
from tests import redis_db
from tests.fakes.openai_server import FakeModel, Step, text
from tests.pg import database as pg
from tests.support import ApiClient, LiveApp, start_app

_SHARED = ("AGENTLOFT_DATABASE_URL", "AGENTLOFT_REDIS_URL", "AGENTLOFT_REDIS_PREFIX")


def _env(data_dir: Path, **env: str) -> dict[str, str]:
    """The command's environment on ``data_dir``'s database (the one a test server on it uses)."""
    base = {k: v for k, v in os.environ.items() if k not in _SHARED}
    base.update(AGENTLOFT_DATA_DIR=str(data_dir), AGENTLOFT_SECRET_KEY="test-secret-key")
    if pg.current is not None:
        base["AGENTLOFT_DATABASE_URL"] = pg.current.for_dir(data_dir, empty=False)
    base.update(env)
    return base


def _cli(*args: str, data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentloft.cli", *args], env=_env(data_dir, **env),
                          capture_output=True, text=True, timeout=120)


def test_several_workers_need_postgres_and_redis(tmp_path: Path) -> None:
    r = _cli("serve", "--workers", "2", data_dir=tmp_path / "d", AGENTLOFT_DATABASE_URL="")
    assert r.returncode == 2
    assert "--workers 2 needs PostgreSQL and Redis" in r.stderr
    assert "AGENTLOFT_DATABASE_URL=postgresql" in r.stderr and "AGENTLOFT_REDIS_URL=" in r.stderr
    # PostgreSQL alone is not enough (refused before anything connects anywhere)
    r = _cli("serve", "--workers", "3", data_dir=tmp_path / "d",
             AGENTLOFT_DATABASE_URL="postgresql+asyncpg://nobody@127.0.0.1:1/none")
    assert r.returncode == 2
    assert "AGENTLOFT_REDIS_URL=" in r.stderr and "AGENTLOFT_DATABASE_URL=" not in r.stderr


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the refused server's
def test_a_second_process_without_redis_on_the_same_database_is_refused(
    app: LiveApp, admin: ApiClient, capfd: pytest.CaptureFixture[str]
) -> None:
    r = _cli("serve", data_dir=app.data_dir, AGENTLOFT_PORT="1")
    assert r.returncode == 2
    assert "already serves this database" in r.stderr and "AGENTLOFT_REDIS_URL" in r.stderr
    with pytest.raises(RuntimeError, match="did not start"):  # the app itself refuses, too
        start_app(app.data_dir, redis_url=None)
    assert "already serves this database" in capfd.readouterr().err
    app.stop()
    again = start_app(app.data_dir)  # the first one's row went with it
    again.stop()


def test_doctor_reports_database_redis_processes_and_models(
    app: LiveApp, admin: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    fake_model.push(text("OK"))
    shared = {"AGENTLOFT_REDIS_URL": redis_db.server_url() or "", "AGENTLOFT_REDIS_PREFIX": redis_db.current or ""}
    r = _cli("doctor", data_dir=app.data_dir, **(shared if redis_db.current else {}))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    (head,) = ScriptDirectory.from_config(migrate.alembic_config("sqlite://")).get_heads()
    assert any(line.startswith("ok    database:") and f"schema {head}" in line for line in lines), lines
    assert any(line.startswith("ok    server processes: 1 running: pid") for line in lines), lines
    redis_line = next(line for line in lines if line.startswith("ok    redis:"))
    assert ("Redis 7" in redis_line) if redis_db.current else ("not configured" in redis_line)
    assert any(line.startswith("ok    model 'Fake':") and "answered in" in line for line in lines), lines
    assert "ok    document sandbox: documents are read in bubblewrap as 'agentloft-extract'" in lines, lines

    r = _cli("doctor", data_dir=app.data_dir, AGENTLOFT_REDIS_URL="redis://:secret@127.0.0.1:1/0",
             AGENTLOFT_EXTRACT_SANDBOX_USER="agentloft-nobody")
    assert r.returncode == 1
    failed = next(line for line in r.stdout.splitlines() if line.startswith("FAIL  redis:"))
    assert "127.0.0.1:1" in failed and "secret" not in failed
    refused = next(line for line in r.stdout.splitlines() if line.startswith("FAIL  document sandbox:"))
    assert "documents (PDF, DOCX, PPTX, XLSX, HTML) are refused: the sandbox user 'agentloft-nobody'" in refused


def test_doctor_says_what_it_waits_for_and_gives_a_silent_model_its_limit(
    app: LiveApp, admin: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    """Each check is announced as it starts, with its limit, and a model that never answers fails after
    the model test's limit (one attempt: no retry stacked on it)."""
    fake_model.default = lambda body: Step(hang=True)
    limit = f"{llm_service.TEST_LIMIT_S:g} s"
    proc = subprocess.Popen([sys.executable, "-m", "agentloft.cli", "doctor"], env=_env(app.data_dir),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        while not lines or not lines[-1].startswith("wait  model 'Fake'"):
            line = proc.stdout.readline()
            assert line, f"the command ended before it said it was asking the model: {lines}"
            lines.append(line.rstrip("\n"))
        assert proc.poll() is None, "said while the model is being asked, not at the end"
        assert lines[0] == f"wait  database: connecting, at most {limit}"
        assert lines[-1] == f"wait  model 'Fake': asking for a short reply, at most {limit}"
        rest, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    failed = rest.splitlines()[0]
    assert failed.startswith("FAIL  model 'Fake': openai fake-model at ") and f"did not answer within {limit}" in failed
    assert proc.returncode == 1
    assert len(fake_model.requests) == 1


@pytest.mark.sqlite_only(reason="SQLite is one process even with a Redis configured")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the refused server's
def test_sqlite_stays_one_process_even_with_redis(
    tmp_path: Path, template_db: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A Redis URL does not make SQLite shareable (nothing here even reaches that Redis: a worker starts
    while Redis is down and connects later)."""
    unreachable = "redis://127.0.0.1:1/0"
    first = start_app(tmp_path / "data", template_db, redis_url=unreachable)
    try:
        with pytest.raises(RuntimeError, match="did not start"):
            start_app(tmp_path / "data", redis_url=unreachable)
        assert "already serves this database" in capfd.readouterr().err
    finally:
        first.stop()
