"""Writing output files safely: never following a symbolic link, all or nothing.

Every file cuegap writes goes through this module: reports and signed copies through
:func:`write_new_files` (never replacing anything), exports and simulated data through
:func:`open_output` (replacing a regular file atomically) or :func:`write_output`, keys
through :func:`create_new`, the witness file through :func:`append_output`. Each refuses a
path that is a symbolic link (:class:`LinkRefused`, a ``ValueError``), so a link planted
at an output name cannot redirect a write to the file it points to.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO


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


class LinkRefused(ValueError):
    """An output path is a symbolic link: cuegap never writes through one."""


def refuse_link(path: Path | str) -> Path:
    """Raise :class:`LinkRefused` when ``path`` itself is a symbolic link (dangling or not).

    Parameters
    ----------
    path : Path
        The file or folder about to be written.

    Returns
    -------
    Path
        ``path``, for chaining.
    """
    path = Path(path)
    if path.is_symlink():
        raise LinkRefused(f"{path}: is a symbolic link; cuegap never writes through one")
    return path


def make_dir(root: Path | str, rel: Path | str) -> Path:
    """Create the folder ``root/rel``, refusing any folder of ``rel`` that is a link.

    ``root`` is the output folder the user named: it may itself be a link (followed, as a
    shell would). The folders cuegap creates inside it may not, so that a link planted in
    the output folder cannot send the files elsewhere.

    Parameters
    ----------
    root : Path
        The output folder (created if missing).
    rel : Path
        A relative path of folders inside it.

    Returns
    -------
    Path
        ``root / rel``.
    """
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    for part in Path(rel).parts:
        path = refuse_link(path / part)
        with contextlib.suppress(FileExistsError):
            path.mkdir()
        if not refuse_link(path).is_dir():  # a link planted between the check and mkdir
            raise ValueError(f"{path}: is a file, not a folder")
    return path


@contextlib.contextmanager
def open_output(path: Path | str, *, fsync: bool = False) -> Iterator[BinaryIO]:
    """Open a file for writing that replaces ``path`` only once everything is written,
    and never through a symbolic link.

    The data goes to a private temporary file beside ``path`` (created with ``O_EXCL`` and
    ``O_NOFOLLOW``) that is renamed over ``path`` at the end: a rename replaces a link
    rather than following it, so even a link planted after the check is never written
    through. On any error the temporary file is removed and ``path`` is left as it was.

    Parameters
    ----------
    path : Path
        The file to write; an existing regular file is replaced.
    fsync : bool
        Flush the data to disk before the rename.

    Raises
    ------
    LinkRefused
        When ``path`` is a symbolic link.
    ValueError
        When ``path`` is a folder.
    """
    path = refuse_link(path)
    if path.is_dir():
        raise ValueError(f"{path}: is a folder, not a file")
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        refuse_link(path)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def write_output(path: Path | str, data: bytes | str) -> Path:
    """Write ``data`` (text as UTF-8) to ``path``, replacing a regular file's content but
    never writing through a symbolic link.

    Opened with ``O_NOFOLLOW``, so a link planted after the check is refused by the
    kernel too. Cheaper than :func:`open_output` (no temporary file and rename), for the
    many small files of a simulated dataset.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    LinkRefused
        When ``path`` is a symbolic link.
    ValueError
        When ``path`` is not a regular file (a folder, a pipe, a device).
    """
    path = refuse_link(path)
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    fd = _open_regular(path, flags)
    with os.fdopen(fd, "wb") as fh:
        fh.truncate(0)
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def _open_regular(path: Path, flags: int) -> int:
    """``os.open`` for a regular file only: a link refused (also when planted after the
    caller's check), and a folder, pipe or device refused without blocking on it."""
    try:
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), 0o644)
    except OSError:
        refuse_link(path)  # O_NOFOLLOW refused a link planted after the check
        if path.exists() and not path.is_file():
            raise ValueError(f"{path}: not a regular file") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError(f"{path}: not a regular file")
    os.set_blocking(fd, True)
    return fd


def create_new(path: Path | str, data: bytes, mode: int = 0o644) -> Path:
    """Create ``path`` with ``data``, refusing any existing file or link at that name.

    Raises
    ------
    LinkRefused
        When ``path`` is a symbolic link.
    FileExistsError
        When anything else already has that name.
    """
    path = refuse_link(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return path


def append_output(path: Path | str, data: bytes) -> Path:
    """Append ``data`` to a regular file (created if missing), never through a link.

    Raises
    ------
    LinkRefused
        When ``path`` is a symbolic link.
    ValueError
        When ``path`` is not a regular file (a folder, a pipe, a device).
    """
    path = refuse_link(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(_open_regular(path, flags), "ab") as fh:
        fh.write(data)
    return path
