"""Documents read in the real sandbox (``files.extract`` running ``files.extract_worker`` in bubblewrap as
the extraction user): each type's text and pages, and each kind of bad file ending with a reason a user
understands, never an exception of the parser."""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloft.core.settings import Settings, load_settings
from agentloft.files import extract, reasons
from agentloft.tools import sandbox
from tests.files import samples


def settings_for(tmp_path: Path, **values: Any) -> Settings:
    return load_settings(data_dir=tmp_path / "data", env="test", secret_key="test-secret-key", **values)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return settings_for(tmp_path)


async def unreadable(settings: Settings, family: str, data: bytes) -> str:
    """Why the file cannot be read; every reason is of a kind pages can word (``files.reasons``)."""
    with pytest.raises(extract.Unreadable) as caught:
        await extract.read(settings, family, data)
    assert reasons.error_code(str(caught.value)) != reasons.UNREADABLE, caught.value
    return str(caught.value)


async def test_a_pdf_is_read_page_by_page(settings: Settings) -> None:
    pages = await extract.read(settings, "pdf", samples.pdf("first page\nsecond line", "page two"))
    assert [(n, " ".join(t.split())) for n, t in pages] == [(1, "first page second line"), (2, "page two")]


async def test_a_docx_keeps_its_headings_and_tables(settings: Settings) -> None:
    ((number, text),) = await extract.read(settings, "docx", samples.docx())
    assert number is None
    assert text.split("\n") == ["# Quarterly report", "", "Revenue grew in every region.", "", "## Details", "",
                                "region\tgrowth", "north\t12%", "", "第二段：中文内容。"]


async def test_a_pptx_is_read_slide_by_slide_with_its_notes(settings: Settings) -> None:
    pages = await extract.read(settings, "pptx", samples.pptx())
    assert pages == [(1, "# Roadmap\nship the sandbox\n\nNotes:\nsay it slowly"), (2, "# Risks\nzip bombs")]


async def test_an_xlsx_is_read_sheet_by_sheet(settings: Settings) -> None:
    pages = await extract.read(settings, "xlsx", samples.xlsx())
    assert pages == [(1, "# Sales\nregion\tunits\nnorth\t12"), (2, "# Costs\nrent\t3.5")]


async def test_html_loses_its_scripts_and_keeps_its_structure(settings: Settings) -> None:
    page = (b"<!doctype html><html><head><title>The page</title><style>p{color:red}</style>"
            b"<script>alert('x')</script></head><body><h2>Part one</h2><p>Some <b>bold</b> words.</p>"
            b"<ul><li>first</li><li>second</li></ul><script>steal()</script></body></html>")
    assert await extract.read(settings, "html", page) == [
        (None, "# The page\n\n## Part one\n\nSome bold words.\n\n- first\n- second")]


async def test_html_whose_head_is_left_open_keeps_its_body(settings: Settings) -> None:
    page = b"<html><head><title>Open</title><meta charset=utf-8><body><p>the body text</p></body></html>"
    assert await extract.read(settings, "html", page) == [(None, "# Open\n\nthe body text")]


async def test_a_damaged_pdf_says_so(settings: Settings) -> None:
    assert (await unreadable(settings, "pdf", b"%PDF-1.7\n" + bytes(range(256)) * 8)).startswith(
        "damaged or not a PDF")


async def test_an_encrypted_pdf_says_so(settings: Settings) -> None:
    assert await unreadable(settings, "pdf", samples.encrypted_pdf()) == (
        "encrypted with a password; upload a copy without the password")


@pytest.mark.parametrize(("family", "document", "part"), [
    ("docx", samples.docx, "word/media/bomb.bin"), ("xlsx", samples.xlsx, "xl/media/bomb.bin"),
])
async def test_a_zip_bomb_is_refused_before_it_is_inflated(settings: Settings, family: str, document: Any,
                                                          part: str) -> None:
    reason = await unreadable(settings, family, samples.zip_bomb(document(), part, 64 << 20))
    assert reason.startswith(f"expands too much: its part {part} would grow ") and "zip bomb" in reason


async def test_an_archive_that_unpacks_too_large_is_refused(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, extract_max_unzipped_bytes=8 << 20, extract_max_zip_ratio=100_000)
    reason = await unreadable(settings, "docx", samples.zip_bomb(samples.docx(), "word/media/big.bin", 16 << 20))
    assert reason.startswith("expands too much: unpacked it would take 1")  # 16 MiB and the document's parts
    assert reason.endswith(" MiB, more than the 8 MiB this server unpacks from one file")


async def test_a_damaged_office_file_says_so(settings: Settings) -> None:
    assert (await unreadable(settings, "xlsx", b"PK\x03\x04" + bytes(200))).startswith("damaged")


async def test_too_many_pages_are_refused(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, extract_max_pages=2)
    assert await unreadable(settings, "pdf", samples.pdf("a", "b", "c")) == (
        "too many pages: 3, more than the 2 this server reads from one file")


async def test_too_much_text_is_refused(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, extract_max_chars=1000)
    assert await unreadable(settings, "html", b"<p>" + b"word " * 400 + b"</p>") == (
        "too much text: more than the 1,000 characters this server reads from one file")


SLOW_HTML = b"<p><b>w</b> <i>x</i></p>" * 150_000  # about 3 s of CPU to read, 750,000 characters of text


async def test_a_file_that_takes_too_long_is_stopped(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, extract_wall_seconds=0.5)
    assert await unreadable(settings, "html", SLOW_HTML) == "timed out: reading it took longer than 0.5 s"


async def test_a_file_that_takes_too_much_cpu_is_stopped(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, extract_cpu_seconds=1)
    assert await unreadable(settings, "html", SLOW_HTML) == "too much CPU time: reading it took more than 1 s"


async def test_a_file_that_needs_too_much_memory_is_stopped(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, extract_memory_bytes=96 << 20)
    assert await unreadable(settings, "html", b"<p>" + b"x" * (48 << 20)) == (
        "too much memory: reading it needs more than 96 MiB")


def finished(stdout: bytes, exit_code: int = 0) -> sandbox.Completed:
    return sandbox.Completed(exit_code=exit_code, stdout=stdout, stderr=b"", stdout_cut=False, stderr_cut=False,
                             timed_out=False)


@pytest.mark.parametrize(("stdout", "says"), [
    (b"not json", "damaged: the reader's answer was malformed"),
    (b'{"pages": [{"number": "1", "text": "x"}]}', "damaged: the reader's answer was malformed"),
    (b'{"pages": [{"number": null}]}', "damaged: the reader's answer was malformed"),
    (b'{"pages": [' + b",".join([b'{"number": 1, "text": "x"}'] * 3) + b"]}", "too many pages"),
    (b'{"pages": [{"number": null, "text": "' + b"x" * 1001 + b'"}]}', "too much text"),
])
def test_what_comes_out_of_the_sandbox_is_checked_too(tmp_path: Path, stdout: bytes, says: str) -> None:
    """A parser the file took over could write anything: the answer is held to the shape and the limits."""
    settings = settings_for(tmp_path, extract_max_pages=2, extract_max_chars=1000)
    with pytest.raises(extract.Unreadable, match=f"^{says}"):
        extract.outcome(finished(stdout), settings)
    assert extract.outcome(finished(b'{"pages": [{"number": 1, "text": "fine"}]}'), settings) == [(1, "fine")]


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user may enter (pytest's own temporary directories are closed to others)."""
    path = Path(tempfile.mkdtemp(prefix="agentloft-open-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


async def test_packages_under_a_directory_closed_to_others_are_read(open_dir: Path, settings: Settings) -> None:
    """A server installed under a directory closed to other users (a virtualenv in /root) still lends its
    packages to the reader: bubblewrap binds them as root, and the reader runs as the sandbox user, which
    could not have bound them itself."""
    closed = open_dir / "home"
    packages = closed / "venv" / "site-packages"
    packages.mkdir(parents=True)
    (packages / "mark.py").write_text("kept\n")
    closed.chmod(0o700)
    user = sandbox.sandbox_user(settings.extract_sandbox_user)
    command = ["/bin/sh", "-c", f'cat {packages}/mark.py; id -u; echo > /scratch/w && echo written']
    run = functools.partial(sandbox.run_confined, command, user=user, limits=extract.limits(settings),
                            wall_seconds=30, output_cap=4096, read_only=[str(packages)])
    done = await run(as_root=True)
    assert (done.exit_code, done.stdout.decode().split()) == (0, ["kept", str(user.uid), "written"]), done
    assert (await run()).exit_code != 0  # bubblewrap as the sandbox user: "Permission denied"
