"""Read the text of one document: run as ``python -m agentloft.files.extract_worker`` inside the sandbox.

The file's bytes come on stdin, the limits as arguments (``FAMILY MAX_PAGES MAX_CHARS MAX_UNZIPPED_BYTES
MAX_ZIP_RATIO``; the single argument ``probe`` only imports the libraries); on success the pages go to
stdout as ``{"pages": [{"number", "text"}]}`` (the shape of ``files.service.Extracted``) and the exit code
is 0. A file that cannot be read exits with ``UNREADABLE``
and one line on stderr saying why in words a user understands (corrupt, encrypted, too many pages, too
much text, expands too much, needs too much memory). Anything else (a crash of a parser, a limit of the
sandbox) is the caller's to describe.

Only the standard library and the parsing libraries are imported, each when its format needs it: nothing
of the server, so the sandbox needs no more than the server's packages, read-only.

What is read:

- **PDF** (``pypdfium2``, PDFium's text layer): one page per PDF page. Encrypted files open when their
  password is empty (owner-password protection only); otherwise they are refused as encrypted.
- **DOCX** (``python-docx``): paragraphs and tables in document order, headings as ``#`` lines
  (``Heading 2`` is ``## ``), table rows as cells separated by tabs; one page.
- **PPTX** (``python-pptx``): one page per slide: its title as a ``#`` line, the text of its shapes
  (groups and tables included) and its speaker notes after a ``Notes:`` line.
- **XLSX** (``openpyxl``, read-only mode, cached values rather than formulas): one page per sheet, its
  name as a ``#`` line, then each row that has a value, cells separated by tabs.
- **HTML** (the standard library's parser; the caller sends it decoded, as UTF-8): the text, without
  ``script``, ``style``, ``template``, ``svg``, ``noscript`` and the ``head`` (its ``title`` is kept as
  the first ``#`` line, and a ``body`` ends a ``head`` left open), headings as ``#`` lines, list items as
  ``- `` lines, table cells separated by tabs; one page.

Office files are zip archives: before a library opens one, the sizes its directory declares are checked
(:func:`check_zip`), since the zip reader these libraries use never inflates an entry past its declared
size. As Apache POI does, an entry that inflates more than ``MAX_ZIP_RATIO`` times is refused once it is
larger than ``RATIO_FLOOR`` (small entries compress well legitimately), and so is an archive whose
entries together declare more than ``MAX_UNZIPPED_BYTES``.
"""

from __future__ import annotations

import io
import json
import resource
import sys
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

UNREADABLE = 2  # exit code: the file cannot be read, stderr says why
RATIO_FLOOR = 1 << 20  # entries below this size are not held to the ratio
MAX_ENTRIES = 10_000  # zip entries a document may have (a real one has tens)


class Unreadable(Exception):
    """The file cannot be read; the message says why, for its owner."""


@dataclass(frozen=True)
class Caps:
    pages: int
    chars: int
    unzipped_bytes: int
    zip_ratio: float


class Text:
    """The pages read so far, refusing the file once they hold more than ``limit`` characters: reading
    stops there rather than after the whole file has been turned into text."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chars = 0
        self.pages: list[dict[str, Any]] = []

    def add(self, number: int | None, lines: Iterable[str]) -> None:
        kept: list[str] = []
        for line in lines:
            self.chars += len(line) + 1
            if self.chars > self.limit:
                raise Unreadable(f"too much text: more than the {self.limit:,} characters this server reads from "
                                 "one file")
            kept.append(line)
        self.pages.append({"number": number, "text": "\n".join(kept).strip("\n")})


def too_many_pages(count: int, caps: Caps, what: str = "pages") -> None:
    if count > caps.pages:
        raise Unreadable(f"too many {what}: {count:,}, more than the {caps.pages:,} this server reads from one file")


# --- zip archives ------------------------------------------------------------------------------------


def check_zip(data: bytes, caps: Caps) -> None:
    """Refuse an Office file whose zip would inflate too far (see the module docstring)."""
    try:
        entries = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise Unreadable(f"damaged: not a readable zip archive ({exc})") from None
    if len(entries) > MAX_ENTRIES:
        raise Unreadable(f"expands too much: {len(entries):,} parts in its archive, more than a document has")
    total = 0
    for entry in entries:
        total += entry.file_size
        ratio = entry.file_size / max(entry.compress_size, 1)
        if entry.file_size > RATIO_FLOOR and ratio > caps.zip_ratio:
            raise Unreadable(f"expands too much: its part {entry.filename} would grow {ratio:,.0f} times when "
                             f"unpacked (at most {caps.zip_ratio:g}), as a zip bomb does")
    if total > caps.unzipped_bytes:
        raise Unreadable(f"expands too much: unpacked it would take {total / 2**20:,.0f} MiB, more than the "
                         f"{caps.unzipped_bytes / 2**20:,.0f} MiB this server unpacks from one file")


# --- the formats -------------------------------------------------------------------------------------


def read_pdf(data: bytes, caps: Caps, text: Text) -> None:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise Unreadable("encrypted with a password; upload a copy without the password") from None
        raise Unreadable(f"damaged or not a PDF ({exc})") from None
    try:
        too_many_pages(len(pdf), caps)
        for index in range(len(pdf)):
            page = pdf[index]
            textpage = page.get_textpage()
            body = textpage.get_text_bounded()
            textpage.close()
            page.close()
            text.add(index + 1, body.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    finally:
        pdf.close()


HEADING_STYLES = {"Title": 1, "Subtitle": 2}


def _heading_level(style: str | None) -> int:
    if not style:
        return 0
    if style in HEADING_STYLES:
        return HEADING_STYLES[style]
    if style.startswith("Heading "):
        tail = style.removeprefix("Heading ").strip()
        return min(int(tail), 6) if tail.isdigit() else 0
    return 0


def _row_lines(rows: Iterable[Iterable[str]]) -> Iterator[str]:
    for cells in rows:
        values = [c.replace("\t", " ").replace("\n", " ").strip() for c in cells]
        while values and not values[-1]:
            values.pop()
        if values:
            yield "\t".join(values)


def read_docx(data: bytes, caps: Caps, text: Text) -> None:
    check_zip(data, caps)
    import docx
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises whatever its zip and XML layers do
        raise Unreadable(f"damaged or not a Word document ({type(exc).__name__}: {exc})") from None

    def lines() -> Iterator[str]:
        for block in document.iter_inner_content():
            if isinstance(block, Table):
                yield from _row_lines([cell.text for cell in row.cells] for row in block.rows)
                yield ""
                continue
            body = block.text.strip()
            if not body:
                continue
            level = _heading_level(block.style.name if block.style is not None else None)
            yield f"{'#' * level} {body}" if level else body
            yield ""

    text.add(None, lines())


def _shape_lines(shapes: Iterable[Any], skip: int | None = None) -> Iterator[str]:
    """The text of ``shapes`` but the one whose id is ``skip`` (the title, already read)."""
    for shape in shapes:
        if shape.shape_id == skip:
            continue
        if getattr(shape, "shape_type", None) == 6:  # MSO_SHAPE_TYPE.GROUP
            yield from _shape_lines(shape.shapes)
        elif getattr(shape, "has_table", False):
            yield from _row_lines([cell.text for cell in row.cells] for row in shape.table.rows)
        elif getattr(shape, "has_text_frame", False):
            for paragraph in shape.text_frame.paragraphs:
                line = "".join(run.text for run in paragraph.runs).strip()
                if line:
                    yield line


def read_pptx(data: bytes, caps: Caps, text: Text) -> None:
    check_zip(data, caps)
    import pptx

    try:
        deck = pptx.Presentation(io.BytesIO(data))
    except Exception as exc:
        raise Unreadable(f"damaged or not a PowerPoint presentation ({type(exc).__name__}: {exc})") from None
    slides = list(deck.slides)
    too_many_pages(len(slides), caps, "slides")
    for number, slide in enumerate(slides, start=1):
        title = slide.shapes.title
        lines: list[str] = []
        if title is not None and title.text.strip():
            lines.append(f"# {title.text.strip()}")
        lines += _shape_lines(slide.shapes, skip=None if title is None else title.shape_id)
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame
            if notes is not None and notes.text.strip():
                lines += ["", "Notes:", notes.text.strip()]
        text.add(number, lines)


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def read_xlsx(data: bytes, caps: Caps, text: Text) -> None:
    check_zip(data, caps)
    import openpyxl

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:
        raise Unreadable(f"damaged or not an Excel workbook ({type(exc).__name__}: {exc})") from None
    try:
        sheets = book.worksheets
        too_many_pages(len(sheets), caps, "sheets")
        for number, sheet in enumerate(sheets, start=1):
            rows = ([_cell(v) for v in row] for row in sheet.iter_rows(values_only=True))
            text.add(number, [f"# {sheet.title}", *_row_lines(rows)])
    finally:
        book.close()


class _HtmlText(HTMLParser):
    """Text of an HTML page, with headings and list items marked (see the module docstring)."""

    SKIPPED = frozenset({"script", "style", "template", "svg", "head", "noscript"})
    BLOCKS = frozenset({"p", "div", "br", "tr", "section", "article", "header", "footer", "main", "nav",
                        "aside", "blockquote", "pre", "table", "ul", "ol", "dl", "dt", "dd", "figure",
                        "figcaption", "hr", "form", "fieldset", "address", "details", "summary"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.title: list[str] = []
        self.skipping: list[str] = []
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        if tag == "body" and "head" in self.skipping:  # ``</head>`` may be left out
            self.skipping.clear()
        if tag in self.SKIPPED:
            self.skipping.append(tag)
        if self.skipping:
            return
        if len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.out.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag == "li":
            self.out.append("\n- ")
        elif tag in ("td", "th"):
            self.out.append("\t")
        elif tag in self.BLOCKS:
            self.out.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in self.SKIPPED and tag in self.skipping:
            while self.skipping and self.skipping.pop() != tag:
                pass
            return
        if not self.skipping and (tag in self.BLOCKS or (len(tag) == 2 and tag[0] == "h" and tag[1] in "123456")):
            self.out.append("\n")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        elif not self.skipping:
            self.out.append(data)

    def lines(self) -> list[str]:
        title = " ".join("".join(self.title).split())
        body = [" ".join(line.split()) if not line.startswith("#") else line.strip() for line in
                "".join(self.out).split("\n")]
        lines = [f"# {title}", ""] if title else []
        for line in body:
            if line and not line.strip("#- \t"):
                continue
            if line or (lines and lines[-1]):
                lines.append(line)
        return lines


def read_html(data: bytes, caps: Caps, text: Text) -> None:
    parser = _HtmlText()
    parser.feed(data.decode("utf-8", "replace"))
    parser.close()
    text.add(None, parser.lines())


READERS: dict[str, Callable[[bytes, Caps, Text], None]] = {
    "pdf": read_pdf, "docx": read_docx, "pptx": read_pptx, "xlsx": read_xlsx, "html": read_html,
}


def memory_message() -> str:
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return "too much memory: reading it needs more than this machine has"
    return f"too much memory: reading it needs more than {limit / 2**20:,.0f} MiB"


def extract(family: str, data: bytes, caps: Caps) -> list[dict[str, Any]]:
    """The pages of ``data``, or ``Unreadable``; the one function the bench calls in-process too."""
    text = Text(caps.chars)
    try:
        READERS[family](data, caps, text)
    except MemoryError:
        raise Unreadable(memory_message()) from None
    except Unreadable:
        raise
    except Exception as exc:  # a parser's error half-way through: the file is not what it claims
        raise Unreadable(f"damaged ({type(exc).__name__}: {str(exc)[:300]})") from None
    return text.pages


def probe() -> int:
    """Import every parsing library: what the server runs once in a new sandbox before trusting it."""
    import docx  # noqa: F401
    import openpyxl  # noqa: F401
    import pptx  # noqa: F401
    import pypdfium2  # noqa: F401

    return 0


def main(argv: list[str]) -> int:
    if argv == ["probe"]:
        return probe()
    family, pages, chars, unzipped, ratio = argv
    caps = Caps(pages=int(pages), chars=int(chars), unzipped_bytes=int(unzipped), zip_ratio=float(ratio))
    data = sys.stdin.buffer.read()
    try:
        pages_read = extract(family, data, caps)
    except Unreadable as exc:
        sys.stderr.write(" ".join(str(exc).split()) + "\n")
        return UNREADABLE
    out = json.dumps({"pages": pages_read}, ensure_ascii=False).encode("utf-8")
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
