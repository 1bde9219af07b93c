# Types of the C extension under the shardpipe package; use the package.
from typing import Any, Callable, Sequence

library_version: str
ERR_COUNT: int
MAX_THREADS: int

class Stream:
    # shards in elements (chunks per shard are computed from them).  A new
    # array (reopen False) needs every array field; with reopen True the
    # array at path is continued (shardpipe_stream_reopen), the fields
    # given as None being the store's (shardpipe_desc_from_store), and
    # path must be a directory, with no sink and no group.
    def __init__(self, path: str | None, shape: Sequence[int] | None,
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
                 reopen: bool = False) -> None: ...
    # What the stream was opened with: (shape, dim 0 the bound or 0;
    # dtype name; one element of fill, its bytes; the row of dim 0 the
    # first append lands on).  Open or closed.
    def info(self) -> tuple[tuple[int, ...], str, bytes, int]: ...
    # Any C-contiguous buffer's bytes, in spans of any size; a typed
    # buffer must hold the stream's dtype.  The package checks shapes
    # (Stream.append) and keeps a partial row back (Stream.append_bytes)
    # before calling it.
    def append(self, buf: Any, /) -> None: ...
    def skip(self, nbytes: int, /) -> None: ...
    def set_attribute(self, key: str, json: str | None, /) -> None: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...
    def stats(self) -> tuple[int, int, int, int, int, float, float, float,
                             float, float, int, int, float]: ...
    @property
    def backend(self) -> str: ...
    @property
    def closed(self) -> bool: ...

class Group:
    def __init__(self, path: str, create: bool, threads: int) -> None: ...
    def close(self) -> None: ...
    @property
    def arrays(self) -> tuple[str, ...]: ...

class Reader:
    def __init__(self, path: str, /) -> None: ...
    def info(self) -> tuple[tuple[int, ...], tuple[int, ...],
                            tuple[int, ...], str,
                            tuple[str | None, ...], int]: ...
    def read_into(self, start: Sequence[int], count: Sequence[int],
                  out: Any, /) -> None: ...
    def check(self) -> None: ...

def backends() -> list[tuple[str, bool, bool, str]]: ...
# The array at path (shardpipe_desc_from_store): shape (shape[0] the rows
# its zarr.json advertises), chunks, shards (elements), dtype name,
# dimension names, index location, fill bytes, rows.
def desc_from_store(path: str | bytes, /) -> tuple[
    tuple[int, ...], tuple[int, ...], tuple[int, ...], str,
    tuple[str | None, ...], str, bytes, int]: ...
def strerror(code: int, /) -> str: ...
def _set_errors(classes: tuple[type[BaseException], ...], /) -> None: ...
