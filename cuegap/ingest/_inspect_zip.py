"""Reading inspect-ai ``.eval`` logs as zip files, one member at a time.

inspect-ai writes sample members zstd-compressed (zip method 93) since version 0.3.2xx and
deflate-compressed before; ``zipfile`` reads deflate, and method 93 is decompressed here
from the member's raw bytes with ``zstandard``, with the CRC checked.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import orjson

from cuegap.ingest._records import IngestError

ZIP_ZSTANDARD = 93
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise IngestError(
            f"{path}: not a readable inspect-ai .eval log (zip): {exc}; the file may be "
            "truncated or still being written"
        ) from None


def _member_bytes(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes: zipfile for deflate/stored, zstandard for method 93."""
    if info.compress_type != ZIP_ZSTANDARD:
        return zf.read(info)
    import zstandard

    fh = zf.fp
    if fh is None:
        raise zipfile.BadZipFile("zip file is closed")
    fh.seek(info.header_offset)
    local = fh.read(_LOCAL_HEADER.size)
    if len(local) != _LOCAL_HEADER.size or local[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {info.filename}")
    fields = _LOCAL_HEADER.unpack(local)
    fh.seek(fields[10] + fields[11], io.SEEK_CUR)
    compressed = fh.read(info.compress_size)
    if len(compressed) != info.compress_size:
        raise zipfile.BadZipFile(f"{info.filename}: member data is truncated")
    reader = zstandard.ZstdDecompressor().stream_reader(
        io.BytesIO(compressed), read_across_frames=True
    )
    try:
        data = reader.read()
    except zstandard.ZstdError as exc:  # a damaged member: quarantined, the rest is read
        raise zipfile.BadZipFile(f"{info.filename}: zstd data is damaged ({exc})") from None
    if zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile(f"{info.filename}: CRC check failed")
    return data


def _read_member_json(zf: zipfile.ZipFile, name: str) -> Any:
    return orjson.loads(_member_bytes(zf, zf.getinfo(name)))


def _eval_header(zf: zipfile.ZipFile, path: Path) -> dict[str, Any]:
    names = set(zf.namelist())
    member = "header.json" if "header.json" in names else "_journal/start.json"
    if member not in names:
        raise IngestError(f"{path}: not an inspect-ai log: no header.json in the zip")
    try:
        header = _read_member_json(zf, member)
    except (zipfile.BadZipFile, zlib.error, orjson.JSONDecodeError, ValueError) as exc:
        raise IngestError(f"{path}: cannot read {member}: {exc}") from None
    if member != "header.json":
        header.setdefault("status", "started")
    return header
