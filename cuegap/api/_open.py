"""Opening a store for the notebook API: :func:`open_store` (``cuegap.open``)."""

from __future__ import annotations

from pathlib import Path

from cuegap.api._audit import Audit


def open_store(url: str | None = None, *, create: bool = False, quiet: bool = False) -> Audit:
    """Open a cuegap store: ``cuegap.open(url)``.

    Parameters
    ----------
    url : str, optional
        ``sqlite:///FILE``, ``postgresql://USER@HOST/DB`` or a SQLite file path (default:
        ``$CUEGAP_DB``, else ``sqlite:///cuegap.db``).
    create : bool
        Create the store (or bring it to this cuegap's schema) when needed.
    quiet : bool
        Print nothing from ``analyze`` and ``simulate``.

    Raises
    ------
    ValueError
        When the store is empty (and ``create`` is False), or at another schema revision.
    """
    from cuegap.schema import (
        current_revision,
        describe_url,
        head_revision,
        known_revision,
        make_engine,
        newer_store_error,
        upgrade,
    )

    engine = make_engine(url)
    db = engine.url.database if engine.dialect.name == "sqlite" else None
    if db and db != ":memory:" and not Path(db).exists():
        if not create:
            engine.dispose()  # connecting would create a file behind a mistyped path
            raise ValueError(f"no store at {describe_url(engine)}: there is no such file "
                             "(open it with create=True to create one)")  # fmt: skip
        Path(db).parent.mkdir(parents=True, exist_ok=True)
    rev = current_revision(engine)
    if rev != head_revision() and create and (rev is None or known_revision(rev)):
        upgrade(engine)
    elif rev is None:
        engine.dispose()
        raise ValueError(f"the store at {describe_url(engine)} is empty: open it with "
                         "create=True, or run `cuegap init`")  # fmt: skip
    elif not known_revision(rev):
        engine.dispose()
        raise newer_store_error(rev)
    elif rev != head_revision():
        engine.dispose()
        raise ValueError(
            f"the store at {describe_url(engine)} is at schema revision {rev}; open it with "
            "create=True, or run `cuegap init`, to upgrade it"
        )
    return Audit(engine, quiet=quiet)
