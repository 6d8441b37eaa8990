"""The saved-graph container: a zip archive of `graph.json` and `arrays/<k>.npy` (docs/export.md).

Reading checks, in this order, that the file is a zip archive, that its
`graph.json` says it is a flowgraph graph, and that its format version is one
this code reads: a newer file is refused with the version it needs, never half
read. Zip's CRC-32 of every member catches corruption of what follows.
"""
from __future__ import annotations

import io
import json
import os
import zipfile
import zlib

import numpy as np

from graph.saving.values import FormatError

FORMAT = "flowgraph.graph"
FORMAT_VERSION = 1
GRAPH_MEMBER = "graph.json"


def write_archive(path, document: dict, arrays: list[np.ndarray]) -> None:
    """Writes `document` (JSON-ready, with FORMAT and FORMAT_VERSION set here) and its arrays."""
    document = {"format": FORMAT, "version": FORMAT_VERSION, **document}
    text = json.dumps(document, separators=(",", ":"), allow_nan=False)
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(GRAPH_MEMBER, text)
            for k, arr in enumerate(arrays):
                buf = io.BytesIO()
                np.save(buf, arr, allow_pickle=False)
                zf.writestr(f"arrays/{k}.npy", buf.getvalue())
        os.replace(tmp, path)  # a reader never sees a half-written file
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


class Archive:
    """An open saved-graph file: its document and, on demand, its arrays."""

    def __init__(self, path):
        self.path = os.fspath(path)
        try:
            self._zip = zipfile.ZipFile(self.path)
        except FileNotFoundError:  # a missing file is the caller's error, not the format's
            raise
        except (zipfile.BadZipFile, OSError) as e:
            raise FormatError(f"{self.path} is not a flowgraph saved graph (not a zip archive: {e})") from None
        try:
            text = self._zip.read(GRAPH_MEMBER)
        except KeyError:
            raise FormatError(f"{self.path} is not a flowgraph saved graph (no {GRAPH_MEMBER} in it)") from None
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as e:
            raise FormatError(f"{self.path} is corrupt: {e}") from None
        try:
            document = json.loads(text)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise FormatError(f"{self.path} is corrupt: {GRAPH_MEMBER} is not valid JSON ({e})") from None
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise FormatError(f"{self.path} is not a flowgraph saved graph ({GRAPH_MEMBER} does not say "
                              f"format {FORMAT!r})")
        version = document.get("version")
        if not isinstance(version, int) or version < 1:
            raise FormatError(f"{self.path} is corrupt: format version {version!r}")
        if version > FORMAT_VERSION:
            raise FormatError(f"{self.path} was written in format version {version} of {FORMAT}, by a newer "
                              f"flowgraph; this one reads versions up to {FORMAT_VERSION}: upgrade flowgraph "
                              "to load it")
        self.document = document
        self.version = version
        self._arrays: dict[int, np.ndarray] = {}

    def array(self, k: int) -> np.ndarray:
        got = self._arrays.get(k)
        if got is not None:
            return got
        if not isinstance(k, int):
            raise FormatError(f"{self.path} is corrupt: array reference {k!r}")
        try:
            data = self._zip.read(f"arrays/{k}.npy")
        except KeyError:
            raise FormatError(f"{self.path} is corrupt: array {k} is missing") from None
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as e:
            raise FormatError(f"{self.path} is corrupt: array {k}: {e}") from None
        try:
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise FormatError(f"{self.path} is corrupt: array {k}: {e}") from None
        arr.flags.writeable = False
        self._arrays[k] = arr
        return arr

    def close(self) -> None:
        self._zip.close()

    def __enter__(self) -> "Archive":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
