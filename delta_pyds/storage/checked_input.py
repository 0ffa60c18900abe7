"""Object-store input files whose every read is checked against the object's size.

pyarrow reads Parquet (checkpoints, sidecars, data files) through a file object: a
footer read at the end, then column chunks by ``seek`` + ``read``. An fsspec file turns
each read into a range GET through its block cache; a GET that returns fewer bytes than
asked (a body cut short behind a correct-looking ``Content-Length``, a connection
closed early) would hand pyarrow a short buffer, and pyarrow then fails with a
confusing error or, with a block cache that splices blocks, reads bytes at the wrong
offsets.

Guarantees of :class:`CheckedInput`:

* ``read(n)`` returns exactly ``min(n, size - position)`` bytes of the object (``size``
  from the store when the file was opened), or raises: a short read, or a body fault of
  the client, is fetched again with one ranged GET whose length is checked
  (``refetch``: the storage layer's retried read, which raises
  :class:`~delta_pyds.errors.StoreFaultError` naming the store, the path and the fault
  when its retries run out);
* the underlying fsspec file is opened with the ``readahead`` cache, whose one block
  always holds a correct prefix of what was asked (a short block is never spliced to
  another), and is repositioned after every refetch;
* it behaves as a read-only, seekable binary file (``read``, ``readinto``, ``seek``,
  ``tell``, ``size``, ``close``, context manager) for pyarrow and the ``parquet`` module.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from typing import Any

from delta_pyds.storage.retry import fault_of

log = logging.getLogger(__name__)


class CheckedInput(io.RawIOBase):
    """A read-only view of ``raw`` (an fsspec file of ``size`` bytes at ``path``) whose
    reads are never short; ``refetch(start, length)`` reads a range again, checked."""

    mode = "rb"

    def __init__(self, raw: Any, path: str, size: int, refetch: Callable[[int, int], bytes]):
        super().__init__()
        self.raw = raw
        self.path = path
        self._size = int(size)
        self._refetch = refetch
        self._pos = 0

    # -- file protocol ----------------------------------------------------------------
    @property
    def size(self) -> int:
        return self._size

    @property
    def name(self) -> str:
        return self.path

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._size + offset
        else:
            raise ValueError(f"seek: whence must be 0, 1 or 2, got {whence!r}")
        if pos < 0:
            raise ValueError(f"seek: negative position {pos}")
        self._pos = pos
        return pos

    def read(self, size: int | None = -1) -> bytes:
        start = self._pos
        want = max(0, self._size - start)
        if size is not None and size >= 0:
            want = min(want, size)
        if want == 0:
            return b""
        data = None
        fault = None
        try:
            self.raw.seek(start)
            data = self.raw.read(want)
        except Exception as exc:  # a body cut short or a reset: read the range again
            fault = fault_of(exc)
            if fault is None:
                raise
        if data is None or len(data) != want:
            got = "no" if data is None else str(len(data))
            log.warning(
                "pydelta: read of bytes %d-%d of %s returned %s bytes (%s); reading the range again",
                start,
                start + want,
                self.path,
                got,
                fault or "short read",
            )
            data = self._refetch(start, want)
        self._pos = start + len(data)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            try:
                self.raw.close()
            finally:
                super().close()
