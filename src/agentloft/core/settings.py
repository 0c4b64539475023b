"""Settings, read from the environment (prefix ``AGENTLOFT_``) when the app is created, never at import.

The secret key encrypts stored API keys and signs nothing else; when it is not given it is generated once
and kept in ``<data dir>/secret_key`` so restarts keep decrypting. Production mode refuses to start
without an explicit key, because a key that lives next to the data protects nothing from whoever can
read the data.

The data dir, the SQLite database with its WAL and shared-memory files, and the key file are the server's
alone: every start makes them owner-only (:meth:`Settings.prepare_data_dir`), and every sandbox hides them
(:meth:`Settings.private_paths`).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import stat
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy import make_url

# An install that found an empty database would greet the first visitor as its new administrator: the
# file's name must never change.
SQLITE_FILE = "agentloft.db"
MISNAMED_SQLITE_FILE = "agentloft.core.db"
SECRET_KEY_FILE = "secret_key"
# The files SQLite keeps beside a database (``-journal`` only while a rollback journal is in use).
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


class ConfigError(RuntimeError):
    """The settings cannot produce a working app; the message says which one and why."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGENTLOFT_", extra="ignore")

    env: Literal["development", "production", "test"] = Field(
        default="development", description="``production`` requires a secret key and marks cookies Secure."
    )
    data_dir: Path = Field(default=Path("./data"), description="Where the SQLite file and a generated key live.")
    database_url: str | None = Field(
        default=None, description="SQLAlchemy async URL; default is a SQLite file in the data dir."
    )
    host: str = Field(default="127.0.0.1", description="Where ``agentloft serve`` listens.")
    port: int = Field(default=8000, description="The port ``agentloft serve`` listens on.")
    public_url: str | None = Field(
        default=None,
        description="The base URL users and other servers reach this instance at, such as "
        "https://agents.example.com (a path after the host is kept, for an instance served below one). "
        "Addresses this server hands out name it: the URLs in A2A agent cards. Unset: the address the "
        "request reached this server at (the connection's own local address and port), never the "
        "request's Host header, which the client writes; behind a reverse proxy that is the proxy's "
        "upstream address, so set this there.",
    )
    secret_key: str | None = Field(
        default=None, description="Encrypts stored API keys; generated into the data dir when not given."
    )
    signup_open: bool = Field(
        default=False, description="Whether anyone may sign up after the first account (an admin)."
    )
    redis_url: str | None = Field(
        default=None,
        description="redis:// or rediss:// (TLS) URL, a password in it if the server wants one. Needed to run "
        "several workers: stream buffers, run ownership and the login throttle live there.",
    )
    redis_prefix: str = Field(
        default="agentloft", min_length=1,
        description="Prefix of every Redis key and channel, so several instances can share one Redis.",
    )
    workers: int = Field(
        default=1, ge=1, description="Worker processes `agentloft serve` starts (`--workers`); above 1 needs "
        "PostgreSQL and Redis.",
    )
    worker_lease_seconds: float = Field(
        default=6.0, gt=0.5,
        description="How long a worker's claim on a running reply lasts without a heartbeat. When a worker "
        "dies, another one finishes its replies (marked interrupted) within about twice this.",
    )
    shutdown_grace_seconds: float = Field(
        default=10.0, ge=0,
        description="When the server is told to stop (SIGTERM, or Ctrl+C once), how long its running replies "
        "may go on to finish. Those still running then are saved as interrupted, with their text so far, and "
        "their streams end with the interruption; the process exits within about this plus 10 s.",
    )
    log_format: Literal["text", "json"] = Field(
        default="text",
        description="How `agentloft serve` writes its log lines: `text`, or `json` (one object per line, with "
        "`requestId` and the fields of the request's or turn's line) for a log collector.",
    )
    metrics: bool = Field(
        default=False,
        description="Serve Prometheus metrics on `/metrics` (core.metrics): to loopback clients, and to others "
        "with `Authorization: Bearer` and `AGENTLOFT_METRICS_TOKEN`. Off: `/metrics` is 404.",
    )
    metrics_token: str | None = Field(
        default=None,
        description="The bearer token a scraper on another machine sends to `/metrics`; unset, only loopback "
        "clients are answered (others get 403).",
    )
    trace_content: bool = Field(
        default=False,
        description="Put what users and models wrote (messages, tool arguments and results) into the "
        "OpenTelemetry spans of model and tool calls (core.tracing); off, spans carry names, ids and "
        "outcomes only.",
    )
    openai_base_url: str | None = Field(
        default=None, description="Bootstrap model: created (or updated) on start so a first run needs no clicks."
    )
    openai_api_key: str | None = Field(default=None, description="The bootstrap model's API key.")
    default_model: str | None = Field(
        default=None, description="The bootstrap model's name; it becomes the default model."
    )
    allowed_internal_hosts: list[str] = Field(
        default_factory=list,
        description="Hosts and CIDRs that tools may reach although they are private (a local SearXNG, Ollama).",
    )
    session_days: int = Field(default=30, description="How long a sign-in lasts.")
    max_running_chats_per_user: int = Field(
        default=5, ge=0,
        description="How many of one user's chats may be writing a reply at once, counted in the database "
        "across all workers; a message or a regeneration beyond it is refused with 429 "
        "too_many_running_chats. A paused reply resuming after its approval is not refused, and A2A tasks "
        "do not count. 0: no limit. The default 5 lets a person keep a few replies going in several tabs "
        "while a runaway script cannot take the models for everyone.",
    )
    user_storage_bytes: int = Field(
        default=2**30, ge=0,
        description="How many bytes one user may keep: their documents with every kept version (UTF-8 text), "
        "and their uploaded files' original bytes (core.storage_quota). A write that would go past it is "
        "refused with 413 storage_quota_exceeded, saying what is in use and the limit, and nothing of it is "
        "kept. 0: no limit. The default 1 GiB is thousands of long documents with their histories and dozens "
        "of full-size files, while one account cannot fill the server's disk or database.",
    )
    audit_retention_days: int = Field(
        default=365, ge=0,
        description="How many days the audit trail keeps its events; older ones are deleted by every server "
        "process about once an hour, and the chain's recorded start moves with them, so `agentloft audit "
        "verify` still checks what is kept. 0: keep them forever.",
    )
    login_max_failures: int = Field(
        default=5, ge=1,
        description="Sign-in attempts an account gets at once, from any address; after that each further "
        "attempt waits twice as long as the one before (see login_backoff_seconds). A successful sign-in "
        "starts over.",
    )
    login_backoff_seconds: float = Field(
        default=1.0, gt=0, description="The first wait of an account that used up its free attempts."
    )
    login_backoff_max_seconds: float = Field(
        default=86400.0, gt=0, description="The longest wait of an account; a long guessing run gets about "
        "twenty tries per this many seconds.",
    )
    login_address_max_attempts: int = Field(
        default=30, ge=1,
        description="Sign-in attempts (to any accounts, successful ones too) one address may make per "
        "login_address_window_seconds; IPv6 addresses count per /64.",
    )
    login_address_window_seconds: float = Field(
        default=600.0, gt=0, description="The window of login_address_max_attempts, from an address's first "
        "attempt in it."
    )
    forwarded_allow_ips: list[str] = Field(
        default_factory=list,
        description="Addresses or networks of the reverse proxies whose X-Forwarded-For and "
        "X-Forwarded-Proto are believed (passed to uvicorn by `agentloft serve`); the client is the "
        "rightmost address in X-Forwarded-For that is not one of them. Empty: none, and the client "
        "address is the connection's own.",
    )
    stream_grace_seconds: float = Field(
        default=60.0, description="How long a finished reply stays replayable for reconnecting browsers."
    )
    model_timeout_seconds: float = Field(
        default=120.0, description="Seconds to wait for a model to connect or send its next chunk."
    )
    python_sandbox_user: str = Field(
        default="agentloft-sandbox",
        description="Unprivileged host user the python tool runs snippets as, inside bubblewrap, and nothing "
        "else: its process limit counts per user. The server must run as root to switch to it; without it (or "
        "without bwrap) the python tool refuses to run.",
    )
    mcp_idle_seconds: float = Field(
        default=300.0, gt=0,
        description="Seconds an MCP server connection (for stdio: its process) stays open unused before it "
        "is closed; the next call opens it again.",
    )
    mcp_max_message_bytes: int = Field(
        # The cap an HTTP MCP server's answer had before this setting (core.netguard.STREAM_MAX_BODY_BYTES).
        default=16_000_000, ge=64 * 1024,
        description="Longest message an MCP server may send: a stdio line, an HTTP answer or one event of "
        "its stream. Room for answers larger than what reaches the model, which are cut after they arrive "
        "(several images of megabytes, as base64, of which 5 MB are kept); a longer answer fails its call "
        "(over stdio, a longer message that answers no call it can be told from ends the connection).",
    )
    mcp_max_tools: int = Field(
        default=500, ge=1, le=100_000,
        description="Most tools one MCP server may list: a refresh of a server listing more is refused, its "
        "tools left as they were, and the admin told why.",
    )
    mcp_stdio_sandbox: bool = Field(
        default=True,
        description="Run stdio MCP servers in bubblewrap as mcp_sandbox_user. Off runs them as this server's "
        "own user, with its files in reach and no limits: only for a machine that runs nothing else.",
    )
    mcp_sandbox_user: str = Field(
        default="agentloft-mcp",
        description="Unprivileged host user stdio MCP servers run as, inside bubblewrap. Not the python tool's "
        "user, so that servers cannot use up its process limit, which counts per user (scripts/setup-sandbox "
        "creates both).",
    )
    mcp_memory_mb: int = Field(
        default=4096, ge=64,
        description="Address-space limit of each stdio MCP server process, in MB. More than a python snippet's: "
        "a server lives long, and V8 (node) reserves address space well beyond what it uses.",
    )
    mcp_max_processes: int = Field(
        default=256, ge=8,
        description="Processes and threads that all stdio MCP servers of this machine may have together (the "
        "limit counts per user: every server and every worker shares it).",
    )
    mcp_max_open_files: int = Field(default=1024, ge=16, description="Open files per stdio MCP server process.")
    mcp_scratch_mb: int = Field(
        default=256, ge=1,
        description="Size of a stdio MCP server's private /tmp (its home and working directory), in MB, and the "
        "largest file it may write.",
    )
    remote_agent_max_chars: int = Field(
        default=16_384, ge=100,
        description="The longest answer, in characters, that a remote A2A agent may give one agent-invoke "
        "call (about a local agent's default maxOutputTokens of 4,096 at four characters a token). Past "
        "it the call ends as failed, saying so, with the first this many characters kept; the remote task "
        "is cancelled and its stream closed. Each event the agent sends is at most 1 MiB besides.",
    )
    generate_titles: bool = Field(
        default=True,
        description="Name a new chat with one short call to its model after the first reply (also in "
        "Admin → Settings); off: the first words of the first message.",
    )
    create_defaults: bool = Field(
        default=True, description="On the first start, create the default tools and the Assistant agent."
    )
    render_processes: int = Field(
        default=2, ge=1,
        description="Worker processes that turn markdown into HTML (chat replies, previews, documents), per "
        "server process; at most this many renders run at once and the others wait their turn. Each starts "
        "with the first render that needs it and costs about 30 MB.",
    )
    render_timeout_seconds: float = Field(
        default=10.0, gt=0,
        description="Longest one render may take in its worker; past it the worker is stopped and the text "
        "rendered again without highlighting and math (and shown as plain text if that is too slow too). "
        "Highlighting and math have their own small CPU budget inside it.",
    )
    file_store: str = Field(
        default="", pattern=r"^(s3://[^/]+(/.*)?)?$",
        description="Where uploaded files live: empty for the data dir's files directory, or "
        "s3://bucket/prefix for an S3-compatible bucket, with the usual AWS_ACCESS_KEY_ID, "
        "AWS_SECRET_ACCESS_KEY, AWS_REGION and AWS_ENDPOINT_URL variables (several machines then share the "
        "files).",
    )
    file_max_bytes: int = Field(
        default=25 * 1024 * 1024, ge=1024,
        description="Largest file a user may upload, in bytes (25 MiB). Uploads have this body limit of their "
        "own (plus a little for the form's framing) in place of the API's 16 MiB; a larger file is refused "
        "with 413 file_too_large before it is stored.",
    )
    attachment_token_budget: int = Field(
        default=8000, ge=100,
        description="Tokens the text of the files attached to one chat message may take in the model's input "
        "together (estimated as documents are: one per CJK character, one per four other characters). A file "
        "within what is left goes whole; larger ones give the parts most relevant to the message instead. "
        "Images do not count against it.",
    )
    extract_sandbox_user: str = Field(
        default="agentloft-extract",
        description="Unprivileged host user uploaded documents (PDF, DOCX, PPTX, XLSX, HTML) are read as, inside "
        "bubblewrap, and nothing else: its process limit counts per user (scripts/setup-sandbox creates it). "
        "The server must run as root to switch to it; without it (or without bwrap) such uploads are refused "
        "with 503 file_extraction_unavailable, while text and images still work.",
    )
    extract_cpu_seconds: int = Field(
        default=60, ge=1,
        description="CPU time reading one document may take in the sandbox; past it the file ends failed.",
    )
    extract_wall_seconds: float = Field(
        default=120.0, gt=0,
        description="Wall-clock time reading one document may take in the sandbox; past it the reader is "
        "killed and the file ends failed.",
    )
    extract_memory_bytes: int = Field(
        default=1024 * 1024 * 1024, ge=64 * 1024 * 1024,
        description="Address-space limit of the process that reads one document (1 GiB); a file that needs "
        "more ends failed.",
    )
    extract_max_pages: int = Field(
        default=2000, ge=1,
        description="Most pages (PDF), slides (PPTX) or sheets (XLSX) read from one file; a file with more "
        "ends failed before any is read.",
    )
    extract_max_chars: int = Field(
        default=5_000_000, ge=1000,
        description="Most characters of text read from one file; a file holding more ends failed (none of it "
        "is kept, rather than a part that looks whole).",
    )
    extract_max_unzipped_bytes: int = Field(
        default=256 * 1024 * 1024, ge=1024 * 1024,
        description="Most bytes the parts of one DOCX, PPTX or XLSX may declare unpacked (256 MiB); checked "
        "before the document is opened, so a zip bomb ends failed without being inflated.",
    )
    extract_max_zip_ratio: float = Field(
        default=100.0, ge=2,
        description="Most times one part of a DOCX, PPTX or XLSX may grow when unpacked, for parts above 1 MiB "
        "(Apache POI's rule); a file with a part that grows more ends failed as a zip bomb.",
    )
    job_poll_seconds: float = Field(
        default=2.0, gt=0,
        description="How often each server process looks for background jobs (reading an uploaded document, "
        "indexing a file) when nothing woke it: a job queued in this process starts at once, one queued by "
        "another process or due for a retry within this.",
    )
    job_lease_seconds: float = Field(
        default=30.0, ge=1,
        description="How long a process's claim on a running job lasts without being renewed (it is renewed "
        "every third of this while the job runs). The jobs of a process that died are taken up by another "
        "after this.",
    )
    job_max_attempts: int = Field(
        default=5, ge=1,
        description="How often a job is tried before it is marked failed with its last error: a job whose "
        "handler raised is retried after a pause that doubles each time (5 s, 10 s, 20 s...), and a job "
        "whose process died while running it counts as one attempt.",
    )
    job_concurrency: int = Field(
        default=2, ge=1, description="Background jobs one server process runs at the same time."
    )
    knowledge_cache_mb: int = Field(
        default=512, ge=0,
        description="Memory each server process may keep knowledge collections' search indexes in: term "
        "postings for the lexical ranking and, with an embedding model, vectors (the least recently searched "
        "are dropped beyond it). A collection whose postings do not fit is ranked in SQL, and one whose "
        "vectors do not fit has them read from the database on every search, both much slower at scale. "
        "100,000 chunks of ~40 words take ~20 MB of postings, and ~100 MB of vectors at 256 values (600 MB "
        "at 1,536); 0 keeps nothing.",
    )
    allow_remote_images: bool = Field(
        default=False,
        description="Let chats and documents show images from other sites. Off, the pages load images only "
        "from this server and data: addresses, so a reply cannot send what it read to another server "
        "through an image address the reader's browser fetches.",
    )

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _proxy_addresses(cls, value: list[str]) -> list[str]:
        """Addresses or networks only, so that a typo stops the start instead of trusting nobody (or
        somebody else) silently. Not uvicorn's ``*``: it believes the leftmost address of the header,
        which the client writes itself."""
        for item in value:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(
                    f"AGENTLOFT_FORWARDED_ALLOW_IPS: {item!r} is not an IP address or network "
                    "(name the proxy's address, or its network such as 10.0.0.0/8)"
                ) from None
        return value

    @field_validator("public_url")
    @classmethod
    def _base_url(cls, value: str | None) -> str | None:
        """An http(s) URL with a host and nothing after its path, kept without the trailing slash; empty
        means unset. A typo stops the start instead of sending clients to a wrong address."""
        text = (value or "").strip()
        if not text:
            return None
        try:
            parts = urlsplit(text)
            _ = parts.port  # raises for a port that is not a number
        except ValueError:  # that, or a malformed IPv6 address
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname \
                or parts.query or parts.fragment or parts.username or parts.password:
            raise ValueError(f"AGENTLOFT_PUBLIC_URL: {value!r} is not a base URL such as https://agents.example.com "
                             "(http or https, a host, perhaps a port and a path; no query, fragment or password)")
        return text.rstrip("/")

    @model_validator(mode="after")
    def _require_secret_in_production(self) -> Settings:
        if self.env == "production" and not self.secret_key:
            raise ValueError("AGENTLOFT_SECRET_KEY is required when AGENTLOFT_ENV=production")
        return self

    @property
    def sqlite_path(self) -> Path:
        """The embedded database's file: ``agentloft.db`` in the data dir. For a while the file was named
        ``agentloft.core.db`` by mistake (a search and replace when modules moved into ``core/``); a data
        dir that has only that file keeps using it, so no install comes up empty after an upgrade."""
        path = self.data_dir / SQLITE_FILE
        misnamed = self.data_dir / MISNAMED_SQLITE_FILE
        return misnamed if misnamed.exists() and not path.exists() else path

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{self.sqlite_path.resolve()}"

    @property
    def sqlite_file(self) -> Path | None:
        """The SQLite database's file, wherever the URL puts it (None for PostgreSQL or an in-memory one)."""
        url = make_url(self.resolved_database_url)
        if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
            return None
        return Path(url.database)

    def database_files(self) -> list[Path]:
        """The SQLite database and the files SQLite keeps beside it (whether they exist yet or not)."""
        db = self.sqlite_file
        return [] if db is None else [db, *(db.with_name(db.name + side) for side in SQLITE_SIDE_FILES)]

    def private_paths(self) -> list[Path]:
        """What no sandbox may ever see, as absolute paths: the data dir, the key file and the database's
        files, wherever the URL puts them. A sandbox that binds a directory holding one of them hides it
        (``tools.sandbox.hiding``)."""
        return [Path(os.path.abspath(p)) for p in (self.data_dir, self.data_dir / SECRET_KEY_FILE,
                                                   *self.database_files())]

    def prepare_data_dir(self) -> None:
        """Create the data dir, and make it (0700), the database's files and the key file (0600) readable by
        this server's user only: at every start, so an install made before this rule is fixed too. The
        database file is created here, empty (SQLite takes an empty file for an empty database), because
        SQLite gives the WAL and shared-memory files it creates later the database file's own mode; the
        default umask made all of them world-readable (0644), password hashes and chats included."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        shared = self.data_dir.resolve() == Path("/") or self.data_dir.stat().st_mode & stat.S_ISVTX
        if shared:  # made 0700, / or /tmp would lock every other user of the machine out
            raise ConfigError(f"AGENTLOFT_DATA_DIR is {self.data_dir}, a directory other users share; give "
                              "the server a directory of its own (such as /var/lib/agentloft)")
        _owner_only(self.data_dir, 0o700)
        db = self.sqlite_file
        if db is not None:
            db.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(db, os.O_WRONLY | os.O_CREAT, 0o600))
        for path in (self.data_dir / SECRET_KEY_FILE, *self.database_files()):
            if path.exists():
                _owner_only(path, 0o600)

    def ensure_secret_key(self) -> str:
        """Return the secret key, creating and keeping one in the data dir on first start (created 0600, so
        it is never readable by others, not even for a moment)."""
        if self.secret_key:
            return self.secret_key
        self.data_dir.mkdir(parents=True, exist_ok=True)
        path = self.data_dir / SECRET_KEY_FILE
        with contextlib.suppress(FileExistsError):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_urlsafe(48))
        self.secret_key = path.read_text().strip()
        return self.secret_key


def _owner_only(path: Path, mode: int) -> None:
    """``chmod`` to ``mode``; a path this user may not change stops the start with the reason."""
    try:
        path.chmod(mode)
    except OSError as exc:
        raise ConfigError(f"cannot make {path} private to this server's user ({exc.strerror}); run the server "
                          "as the user that owns it") from exc


def load_settings(**overrides: Any) -> Settings:
    """Build settings from the environment plus explicit overrides; wrap errors in ConfigError. The
    overrides are untyped on purpose: like the environment, they are validated by ``Settings``."""
    try:
        return Settings(**overrides)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
