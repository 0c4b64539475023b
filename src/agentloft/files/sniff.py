"""What a file is, from its bytes: never from its name or the type the client claims.

The content decides the kind: a PDF's signature, an image's (``puremagic``), an Office document's zip
(told apart by the part names it holds: ``word/document.xml``, ``ppt/presentation.xml``,
``xl/workbook.xml``), or text that decodes (UTF-8, UTF-16/32 with a byte-order mark, or GB18030, the
superset of GBK that Chinese systems save plain text in) without control characters. Only text's flavour
comes from the name (``.md`` is Markdown, ``.py`` Python); a file named ``report.pdf`` that holds text is
text, and one named ``notes.txt`` that holds a PDF is a PDF. Nothing is parsed here: the checks read a
signature, search for part names and decode text; documents are parsed in the sandbox
(``files.extract``). Anything else is refused with ``415 file_type_unsupported``, naming what it looks
like where ``puremagic`` knows.
"""

from __future__ import annotations

import codecs
import mimetypes
import re
from dataclasses import dataclass
from typing import Literal

import puremagic

from agentloft.files.errors import FileTypeUnsupported

Family = Literal["text", "html", "image", "pdf", "docx", "pptx", "xlsx"]
# The families read in the sandbox (``files.extract``), and those with nothing to read.
DOCUMENTS: frozenset[Family] = frozenset({"pdf", "docx", "pptx", "xlsx"})

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
OFFICE: dict[bytes, tuple[Family, str]] = {
    b"word/document.xml": ("docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    b"ppt/presentation.xml": ("pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
    b"xl/workbook.xml": ("xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
}
# What an older or other format should be saved as instead, by the type puremagic names.
SAVE_AS = {
    "application/msword": "save it as .docx",
    "application/vnd.ms-excel": "save it as .xlsx",
    "application/vnd.ms-powerpoint": "save it as .pptx",
    "application/vnd.oasis.opendocument.text": "save it as .docx",
    "application/vnd.oasis.opendocument.spreadsheet": "save it as .xlsx",
    "application/vnd.oasis.opendocument.presentation": "save it as .pptx",
}
SUPPORTED = "text (txt, md, csv, json, code, html), PDF, DOCX, PPTX, XLSX, or a PNG, JPEG, GIF or WebP image"

# Text flavours by name, where ``mimetypes`` has none (or a non-text one) for a common kind.
TEXT_TYPES = {
    ".md": "text/markdown", ".markdown": "text/markdown", ".csv": "text/csv", ".tsv": "text/tab-separated-values",
    ".json": "application/json", ".jsonl": "application/x-ndjson", ".ndjson": "application/x-ndjson",
    ".xml": "application/xml", ".yaml": "application/yaml", ".yml": "application/yaml", ".toml": "application/toml",
    ".html": "text/html", ".htm": "text/html", ".js": "text/javascript", ".mjs": "text/javascript",
    ".ts": "text/x-typescript", ".tsx": "text/x-typescript", ".jsx": "text/javascript", ".py": "text/x-python",
    ".rs": "text/x-rust", ".go": "text/x-go", ".java": "text/x-java", ".kt": "text/x-kotlin",
    ".swift": "text/x-swift", ".rb": "text/x-ruby", ".php": "text/x-php", ".sh": "text/x-shellscript",
    ".sql": "text/x-sql", ".vue": "text/x-vue", ".svelte": "text/x-svelte", ".lua": "text/x-lua",
    ".cs": "text/x-csharp", ".scala": "text/x-scala", ".r": "text/x-r", ".ipynb": "application/json",
}
_HTML_START = re.compile(rb"\s*(<!--.*?-->\s*)*<(!doctype\s+html|html[\s>])", re.I | re.S)
# Control characters that text does not hold (tab, newlines, form feed, backspace, escape and the old
# end-of-file mark do occur). A few are tolerated (a stray one in a long log), NUL never.
_CONTROL = re.compile("[\x01-\x07\x0e-\x19\x1c-\x1f\x7f]")
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


@dataclass(frozen=True)
class Sniffed:
    family: Family
    media_type: str
    text: str | None = None
    """The decoded text, for text and HTML."""


def decode_text(data: bytes) -> str | None:
    """``data`` as text, or None when it is not text (see the module docstring)."""
    encodings = next(([e] for bom, e in _BOMS if data.startswith(bom)), ["utf-8", "gb18030"])
    for encoding in encodings:
        try:
            text = data.decode(encoding)
        except (UnicodeDecodeError, ValueError):
            continue
        if "\x00" in text or len(_CONTROL.findall(text)) > len(text) // 1000:
            return None
        return text
    return None


def text_type(name: str) -> str:
    """The media type of a text file called ``name``: its flavour where the name says one, else plain."""
    suffix = ("." + name.rsplit(".", 1)[-1].lower()) if "." in name else ""
    if suffix in TEXT_TYPES:
        return TEXT_TYPES[suffix]
    guessed, _ = mimetypes.guess_type(f"x{suffix}", strict=False)
    return guessed if guessed and guessed.startswith("text/") else "text/plain"


def _magic(data: bytes) -> list[str]:
    try:
        return [m.mime_type for m in puremagic.magic_string(data) if m.mime_type]
    except (puremagic.PureError, ValueError):
        return []


def sniff(name: str, data: bytes) -> Sniffed:
    """The file's family and media type, or ``FileTypeUnsupported`` saying why not."""
    if data.startswith(b"%PDF-"):
        return Sniffed("pdf", "application/pdf")
    text = decode_text(data)
    if text is None and b"%PDF-" in data[:1024]:  # readers take the signature anywhere in the first kilobyte
        return Sniffed("pdf", "application/pdf")
    magic = _magic(data[:65536]) if data else []
    image = next((m for m in magic if m in IMAGE_TYPES), None)
    if image is not None:
        return Sniffed("image", image)
    if data.startswith(b"PK\x03\x04"):
        for part, (family, media_type) in OFFICE.items():
            if part in data:
                return Sniffed(family, media_type)
        raise FileTypeUnsupported(f"this is a zip archive, not a Word, PowerPoint or Excel document; supported: "
                                  f"{SUPPORTED}")
    if text is not None:
        if _HTML_START.match(data[:4096].lstrip(codecs.BOM_UTF8)) or text_type(name) == "text/html":
            return Sniffed("html", "text/html", text)
        return Sniffed("text", text_type(name), text)
    known = next((m for m in magic if m not in ("text/plain", "application/octet-stream")), None)
    hint = f"; {SAVE_AS[known]}" if known in SAVE_AS else ""
    looks = f"it looks like {known}{hint}" if known else "its content is not a type this server can read"
    raise FileTypeUnsupported(f"unsupported file type: {looks}; supported: {SUPPORTED}")
