"""A tiny, real PDF writer for tests and benchmarks: text pages (Helvetica, one line per
line of text) and image-only pages (a small grey image, no text layer), with an xref table
readers parse normally. Encrypted copies are made with pypdf's own writer (see ``encrypted``).
"""

from __future__ import annotations

import io
from collections.abc import Sequence


def _escape(line: str) -> bytes:
    text = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return text.encode("latin-1", "replace")


def _stream(header: bytes, data: bytes) -> bytes:
    return header + b" /Length " + str(len(data)).encode() + b" >>\nstream\n" + data + b"\nendstream"


def text_pdf(pages: Sequence[str | None], title: str | None = None) -> bytes:
    """A PDF with one page per item: its text, or None for a page that is only an image."""
    objects: list[bytes] = [b"", b""]  # 1: catalog, 2: page tree (filled in last)
    font = len(objects) + 1
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids: list[int] = []
    for text in pages:
        if text is None:
            objects.append(_stream(b"<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray "
                                   b"/BitsPerComponent 8", b"\x00\xff\xff\x00"))  # fmt: skip
            resources = f"<< /XObject << /Im1 {len(objects)} 0 R >> >>".encode()
            content = b"q 200 0 0 200 72 500 cm /Im1 Do Q"
        else:
            ops = [b"BT /F1 12 Tf 14 TL 72 720 Td"]
            ops += [b"(" + _escape(line) + b") Tj T*" for line in text.split("\n")]
            content = b"\n".join([*ops, b"ET"])
            resources = f"<< /Font << /F1 {font} 0 R >> >>".encode()
        objects.append(_stream(b"<<", content))
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources " + resources
                       + f" /Contents {len(objects)} 0 R >>".encode())  # fmt: skip
        kids.append(len(objects))
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>".encode()
    info = None
    if title is not None:
        objects.append(b"<< /Title (" + _escape(title) + b") >>")
        info = len(objects)
    return raw_pdf(objects, info)


def raw_pdf(objects: Sequence[bytes], info: int | None = None) -> bytes:
    """A PDF of ``objects`` as given (object 1 is the catalog), with its xref table and trailer:
    for files no writer would make, such as a page tree of 200 000 kids."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    out.write("".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode())
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R" + (f" /Info {info} 0 R" if info else "") + " >>"
    out.write(f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def encrypted(pdf: bytes, user_password: str) -> bytes:
    """``pdf`` encrypted (RC4, which pypdf reads without extra packages) with ``user_password``."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt(user_password, algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
