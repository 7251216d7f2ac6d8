"""Writing output files safely: never replacing, never following a link, all or nothing."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path


def write_new_files(out_dir: Path | str, files: Mapping[str, bytes]) -> dict[str, Path]:
    """Write files into ``out_dir`` without replacing or following anything already there.

    Each name is claimed atomically with a hard link from a private temporary file, which
    fails if *anything* (a file, a symbolic link, a dangling link) has that name; the name
    then gets ``-2``, ``-3``, ... before its extension. All files are written or none: on
    any error the files already written are removed.

    Parameters
    ----------
    out_dir : Path
        The folder (created if missing). It must not itself be a file.
    files : mapping
        File name (no folder part) -> bytes.

    Returns
    -------
    dict
        File name asked for -> path written.

    Raises
    ------
    ValueError
        When ``out_dir`` is a file, a name has a folder part, or the folder cannot be written.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)  # an OSError names the path itself
    written: dict[str, Path] = {}
    try:
        for name, data in files.items():
            if Path(name).name != name or name in ("", ".", ".."):
                raise ValueError(f"report file name {name!r} must not contain a folder")
            written[name] = _write_one(out, name, data)
    except OSError as exc:
        remove_files(written.values())
        raise ValueError(f"cannot write the report to {out}: {exc.strerror or exc}") from None
    except BaseException:
        remove_files(written.values())
        raise
    return written


def _write_one(out: Path, name: str, data: bytes) -> Path:
    tmp = out / f".{name}.{secrets.token_hex(8)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        stem, dot, ext = name.rpartition(".")
        stem, ext = (stem, f".{ext}") if dot else (name, "")
        for n in range(1, 10_000):
            target = out / (name if n == 1 else f"{stem}-{n}{ext}")
            try:
                os.link(tmp, target, follow_symlinks=False)
            except FileExistsError:
                continue
            return target
        raise ValueError(f"{out}: no free name for {name}")  # pragma: no cover
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def remove_files(paths: Iterable[Path]) -> None:
    """Remove files, ignoring those already gone."""
    for p in paths:
        with contextlib.suppress(OSError):
            os.unlink(p)
