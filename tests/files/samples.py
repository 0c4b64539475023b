"""Files for the tests, made here at test time: tiny real images, and (for extraction) documents built with
the same libraries that read them, or by hand where a test needs a broken one."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib


def _png(width: int = 2, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PNG = _png()
# A 1x1 baseline JPEG (the smallest valid one commonly used in tests), a 1x1 GIF and a 1x1 lossless WebP.
JPEG = bytes.fromhex(
    "ffd8ffe000104a46494600010100000100010000ffdb004300080606070605080707070909080a0c140d0c0b0b0c1912130f141d1a1f1e1d1a1c1c"
    "20242e2720222c231c1c2837292c30313434341f27393d38323c2e333432ffc0000b080001000101011100ffc4001f0000010501010101010100"
    "000000000000000102030405060708090a0bffc400b5100002010303020403050504040000017d01020300041105122131410613516107227114"
    "328191a1082342b1c11552d1f02433627282090a161718191a25262728292a3435363738393a434445464748494a535455565758595a63646566"
    "6768696a737475767778797a838485868788898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5c6c7c8c9cad2d3"
    "d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1f2f3f4f5f6f7f8f9faffda0008010100003f00fbd3ffd9")
GIF = bytes.fromhex("47494638396101000100800000000000ffffff21f90401000000002c00000000010001000002024401003b")
WEBP = bytes.fromhex("524946461a000000574542505650384c0d0000002f0000001007101111888808")


# --- documents ---------------------------------------------------------------------------------------


def pdf(*pages: str) -> bytes:
    """A minimal PDF, written by hand: one page per string, each line of it a line of Helvetica text."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    kids: list[int] = []
    font = 3
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for text in pages:
        lines = b"".join(b"(" + line.encode("latin-1").replace(b"\\", b"\\\\").replace(b"(", b"\\(")
                         .replace(b")", b"\\)") + b") Tj 0 -16 Td " for line in text.split("\n"))
        stream = b"BT /F1 12 Tf 72 720 Td " + lines + b"ET"
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        content = len(objects)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                       b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (content, font))
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids) + b"] /Count %d >>" % len(kids)
    out = bytearray(b"%PDF-1.4\n")
    offsets: list[int] = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def encrypted_pdf(password: str = "secret") -> bytes:
    """A PDF that opens only with ``password`` (pypdf, test-only, encrypts it)."""
    import pypdf

    writer = pypdf.PdfWriter(clone_from=io.BytesIO(pdf("confidential words")))
    writer.encrypt(user_password=password, owner_password=password, algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def docx(*, heading: str = "Quarterly report", body: str = "Revenue grew in every region.") -> bytes:
    import docx as python_docx

    document = python_docx.Document()
    document.add_heading(heading, level=1)
    document.add_paragraph(body)
    document.add_heading("Details", level=2)
    table = document.add_table(rows=2, cols=2)
    for (row, col), value in {(0, 0): "region", (0, 1): "growth", (1, 0): "north", (1, 1): "12%"}.items():
        table.cell(row, col).text = value
    document.add_paragraph("第二段：中文内容。")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx() -> bytes:
    import pptx as python_pptx

    deck = python_pptx.Presentation()
    for title, point in (("Roadmap", "ship the sandbox"), ("Risks", "zip bombs")):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = point
    deck.slides[0].notes_slide.notes_text_frame.text = "say it slowly"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def xlsx() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.title = "Sales"
    sheet.append(["region", "units"])
    sheet.append(["north", 12])
    costs = book.create_sheet("Costs")
    costs.append(["rent", 3.5])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def zip_bomb(document: bytes, part: str, inflated_bytes: int) -> bytes:
    """``document`` (a DOCX, PPTX or XLSX) with one more part of ``inflated_bytes`` zeros, which deflate to
    about a thousandth of that."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(document)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            target.writestr(entry, source.read(entry))
        with target.open(part, "w") as bomb:
            chunk = bytes(1 << 20)
            for _ in range(inflated_bytes >> 20):
                bomb.write(chunk)
    return out.getvalue()
