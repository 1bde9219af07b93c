"""Types of the C extension under the shardpipe package (_shardpipe.c).

Use the package (``shardpipe.Stream``, ``shardpipe.open``, ...): it checks
the arguments and words the errors; these are the calls it makes.  A path
is anything ``PyUnicode_FSConverter`` takes (str, bytes, os.PathLike)."""
import os
from typing import Any, Callable, Sequence

_Path = str | bytes | os.PathLike[str] | os.PathLike[bytes]

library_version: str
"""The library's version (``shardpipe_version()``, AC_INIT's)."""
ERR_COUNT: int
"""How many SHARDPIPE_ERR_* codes there are (``_set_errors`` takes a class
for each)."""
MAX_THREADS: int
"""The most worker threads a stream or group takes (SHARDPIPE_MAX_THREADS)."""
MAX_LEVELS: int
"""The most levels a pyramid has, level 0 included (SHARDPIPE_MAX_LEVELS)."""

class Stream:
    """The library's stream (shardpipe_stream); see shardpipe.Stream.

    Calls on one stream from two threads at once: the second raises
    RuntimeError.  The GIL is released while the library works."""

    # shards in elements (chunks per shard are computed from them).  A new
    # array (reopen False) needs every array field; with reopen True the
    # array at path is continued (shardpipe_stream_reopen), the fields
    # given as None being the store's (shardpipe_desc_from_store), and
    # path must be a directory, with no sink and no group.  plate: the
    # field (row, column, index, acquisition id or -1) of that Plate
    # (shardpipe_plate_field), path then being the field's directory.
    # region (lo, hi): a region writer of that box (shardpipe_stream_
    # open_region); publish rows: no stream, zarr.json published
    # (shardpipe_array_publish), design §30.
    def __init__(self, path: _Path | None, shape: Sequence[int] | None,
                 chunks: Sequence[int] | None,
                 shards: Sequence[int] | None,
                 dtype: str | None, codec: str | None,
                 dimension_names: Sequence[str | None] | None,
                 index_location: str | None, backend: str, threads: int,
                 overwrite: bool,
                 sink: Callable[[tuple[int, ...], bytes], object] | None,
                 fill_value: bytes | None, write_empty_chunks: bool,
                 durable: bool, max_memory: int,
                 attributes: Sequence[tuple[str, str]] | None,
                 group: Group | None = ..., array: str | None = ...,
                 downsample: int = 0, method: int = 0,
                 append_method: int = -1, max_levels: int = 0,
                 ngff: bool = False,
                 units: Sequence[str | None] | None = None,
                 scales: Sequence[float] | None = None,
                 axis_types: Sequence[int] | None = None,
                 reopen: bool = False,
                 truncate: bool = False,
                 max_levels_dim: Sequence[int] | None = None,
                 plate: Plate | None = None,
                 field: tuple[str, str, int, int] | None = None,
                 region: tuple[Sequence[int], Sequence[int]] | None = None,
                 publish: int | None = None) -> None: ...
    def info(self) -> tuple[tuple[int, ...], str, bytes, int]:
        """What the stream was opened with, open or closed: (shape, dim 0
        the bound or 0; dtype name; one element of fill, its bytes; the
        row of dim 0 the first append lands on)."""
    def append(self, buf: Any, /) -> None:
        """Any C-contiguous buffer's bytes, in spans of any size; a typed
        buffer must hold the stream's dtype.  The package checks shapes
        (Stream.append) and keeps a partial row back (Stream.append_bytes)
        before calling it."""
    def skip(self, nbytes: int, /) -> None:
        """Advance by nbytes of the fill value."""
    def set_attribute(self, key: str, json: str | None, /) -> None:
        """A user attribute as JSON text; None removes it."""
    def flush(self) -> None:
        """Write every complete shard and zarr.json."""
    def close(self) -> None:
        """Write the last shards and zarr.json; again, nothing (or the
        sink's exception not yet raised)."""
    def stats(self) -> tuple[int, int, int, int, int, float, float, float,
                             float, float, int, int, float]:
        """The library's counters, in shardpipe.Stats's order."""
    @property
    def backend(self) -> str:
        """The backend the stream runs on."""
    @property
    def closed(self) -> bool:
        """Whether the stream is closed (or failed and was closed)."""

class Group:
    """The library's group (shardpipe_group); see shardpipe.Group."""

    def __init__(self, path: _Path, create: bool, threads: int) -> None: ...
    def close(self) -> None:
        """Release the group; its streams stay usable."""
    @property
    def arrays(self) -> tuple[str, ...]:
        """The arrays the group held when opened, sorted."""

class Plate:
    """The library's plate (shardpipe_plate); see shardpipe.Plate.

    A field's open (Stream(plate=...)) and close() take turns; the GIL is
    released meanwhile."""

    # rows None opens the plate at path (shardpipe_plate_open); else a
    # plate is made there (shardpipe_plate_create).
    def __init__(self, path: _Path, threads: int,
                 rows: Sequence[str] | None = None,
                 columns: Sequence[str] | None = None,
                 field_count: int = 1, name: str | None = None,
                 acquisitions: Sequence[str] | None = None) -> None: ...
    def close(self) -> None:
        """Release the plate; its fields' streams stay usable."""
    @property
    def closed(self) -> bool:
        """Whether the plate is closed."""

class Reader:
    """The library's reader (shardpipe_reader); see shardpipe.open().

    Reads of one reader from several threads take turns (a lock); the GIL
    is released while the library reads."""

    def __init__(self, path: _Path, /) -> None: ...
    def info(self) -> tuple[tuple[int, ...], tuple[int, ...],
                            tuple[int, ...], str,
                            tuple[str | None, ...], int]:
        """(shape, chunks, shards, dtype name, dimension names, levels):
        chunks and shards in elements, an unnamed dim None, levels the
        OME-NGFF image's when opened at its group, else 0."""
    def read_into(self, start: Sequence[int], count: Sequence[int],
                  out: Any, step: Sequence[int] | None = None, /) -> None:
        """Decode the elements start + k * step, k < count (step None:
        every 1), into out, a writable C-contiguous buffer of exactly
        prod(count) elements of the array's dtype."""
    def set_threads(self, threads: int, /) -> None:
        """Decode on this many threads, 0 for one per core."""
    def stats(self) -> tuple[int, int, int]:
        """(bytes read, requests, chunks decoded) since the open."""
    def check(self) -> None:
        """Verify every stored object (and every level of an image)."""

def backends() -> list[tuple[str, bool, bool, str]]:
    """Every backend the library knows: (name, usable, gpu, detail)."""
def desc_from_store(path: _Path, /) -> tuple[
    tuple[int, ...], tuple[int, ...], tuple[int, ...], str,
    tuple[str | None, ...], str, bytes, int]:
    """The array at path (shardpipe_desc_from_store): shape (shape[0] the
    rows its zarr.json advertises), chunks, shards (elements), dtype name,
    dimension names, index location, fill bytes, rows."""
def strerror(code: int, /) -> str:
    """The library's sentence for an error code."""
def _set_errors(classes: tuple[type[BaseException], ...], /) -> None:
    """The exception class raised for each error code (ERR_COUNT)."""
