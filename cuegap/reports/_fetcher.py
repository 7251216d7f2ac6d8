"""The only URL fetcher a report's PDF rendering gets: the package's templates, nothing else."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

from weasyprint.urls import URLFetcher, URLFetcherResponse

TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"

_TYPES = {".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png"}


class RefusedFetch(ValueError):
    """A report tried to load a resource outside the package's templates directory."""


class TemplateOnlyFetcher(URLFetcher):
    """A WeasyPrint URL fetcher that serves ``file:`` URLs inside the templates directory.

    Everything else (``http``, ``https``, ``ftp``, ``data``, files elsewhere, paths that
    climb out with ``..`` or a symlink) raises :class:`RefusedFetch` and is listed in
    :attr:`refused`, so a report can never fetch, or leak, anything from outside.

    Parameters
    ----------
    root : Path, optional
        Directory allowed; the package's ``cuegap/templates`` by default.
    """

    def __init__(self, root: Path | None = None) -> None:
        super().__init__(timeout=1, allow_redirects=False, fail_on_errors=False)
        self.root = (root or TEMPLATES_DIR).resolve()
        self.refused: list[str] = []

    def resolve(self, url: str) -> Path:
        """The file inside the templates directory that ``url`` names.

        Raises
        ------
        RefusedFetch
            For any other URL.
        """
        parts = urlsplit(url)
        if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
            raise RefusedFetch(f"refused to fetch {url!r}: reports load nothing from outside")
        path = Path(unquote(parts.path)).resolve()
        if not path.is_relative_to(self.root) or not path.is_file():
            raise RefusedFetch(f"refused to fetch {url!r}: only files in {self.root} may be loaded")
        return path

    def fetch(self, url: str, headers: dict | None = None) -> URLFetcherResponse:
        """Serve a templates file, or record and refuse the URL."""
        try:
            path = self.resolve(url)
        except RefusedFetch:
            self.refused.append(url)
            raise
        media = _TYPES.get(path.suffix.lower(), "application/octet-stream")
        return URLFetcherResponse(path.as_uri(), path.read_bytes(), headers={"Content-Type": media})
