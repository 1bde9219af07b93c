"""shardpipe: stream N-dimensional arrays into sharded Zarr v3 stores.

A thin layer over libshardpipe (the C library in this repository)::

    import numpy as np
    import shardpipe

    with shardpipe.Stream("frames.zarr", shape=(0, 2048, 2048),
                          chunks=(32, 256, 256), shards=(128, 1024, 1024),
                          dtype="uint16", codec="zstd:1",
                          dimension_names=("t", "y", "x")) as s:
        for frame in camera:          # uint16 arrays of shape (2048, 2048)
            s.append(frame)
    a = shardpipe.open("frames.zarr")
    a[10, :256, :256]                 # a NumPy array

The stores open in zarr-python, TensorStore and any Zarr v3 reader.
"""

from __future__ import annotations

# The future statement binds the name "annotations"; its effect on this
# file's compilation stays, the name goes.
del annotations

# Imported under private names: the package's namespace is __all__.
import collections.abc as _abc
import importlib as _importlib
import json as _json
import numbers as _numbers
import operator as _operator
import os as _os
import threading as _threading
from dataclasses import dataclass as _dataclass
from typing import Any as _Any, Callable as _Callable, cast as _cast
from typing import Iterator as _Iterator, NamedTuple as _NamedTuple
from typing import Sequence as _Sequence, TYPE_CHECKING as _TYPE_CHECKING

if _TYPE_CHECKING:
    # NumPy is imported when first used; the hints name it all the same.
    import numpy as _np
    import numpy.typing as _npt

    _NDArray = _npt.NDArray[_Any]

# A package that carries its own library (built by setup.py, or a wheel)
# has it and its backend plugins in _lib/.  The library looks for plugins
# in SHARDPIPE_PLUGIN_PATH, else in its installed directory; unless the
# user set that variable, it is set here, before the library loads, to
# _lib/ and then (the empty entry) the installed directory.  Child
# processes inherit it.
_LIB_DIR = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "_lib")
if _os.path.isdir(_LIB_DIR) and "SHARDPIPE_PLUGIN_PATH" not in _os.environ:
    _os.environ["SHARDPIPE_PLUGIN_PATH"] = _LIB_DIR + ":"

from . import _shardpipe  # noqa: E402

__all__ = [
    "Stream", "Stats", "Reader", "Group", "Plate", "BackendInfo", "open",
    "backends", "publish", "write_region",
    "Error", "InvalidDescriptionError", "BeyondEndError", "IncompleteError",
    "StorageError", "BusyError",
    "CorruptStoreError", "UnsupportedError", "DeviceError", "SinkError", "ClosedError",
    "library_version", "__version__",
]

# A path as the package takes one: a str, bytes or os.PathLike of either
# (what os.fspath() takes), or for a store an "s3://bucket/prefix" URL.
_Path = str | bytes | _os.PathLike[str] | _os.PathLike[bytes]

library_version: str = _shardpipe.library_version
# The package is the library's binding: its version is the library's.
__version__: str = library_version


# ---------------------------------------------------------------- errors

class Error(Exception):
    """A failure reported by libshardpipe.

    ``str(e)`` is the library's message (it names the dimension, value or
    file at fault); ``e.code`` is the library's error code
    (``SHARDPIPE_ERR_*``, an int)."""

    code: int | None

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


class InvalidDescriptionError(Error, ValueError):
    """The array description, codec string or backend choice is refused;
    nothing was written."""


class BeyondEndError(Error, ValueError):
    """An append or skip went past a bounded dim 0; the stream is still
    open (its close writes the last shards).  ``Stream.append()`` of an
    array checks first and appends nothing (the message says how many
    rows are left); ``append_bytes()`` and ``skip()`` take what fits, which
    stays valid, and drop the rest.  ``code`` is 17."""


class IncompleteError(Error, ValueError):
    """``Stream.close()`` found the input incomplete: it ended inside a
    row of dim 0 (and the stream was not made with ``pad_partial=True``),
    or before a bounded dim 0 was full (and not ``allow_short=True``) --
    what ``shardpipe write`` refuses with exit status 2 without
    ``--pad-partial`` and ``--allow-short``.  It is raised after the close,
    as the command line's status comes after its store: the stream is
    closed and the store valid, holding the whole rows given (a bounded
    dim 0 keeps its shape, the rows not given holding the fill value);
    the partial row is not written.  ``code`` is None (no library
    error)."""


class StorageError(Error, OSError):
    """The store's path cannot be used, or a read or write failed
    (I/O error, no space, no permission, a store already there)."""

    def __init__(self, message: str, code: int | None = None):
        # OSError's constructor reads two arguments as (errno, strerror).
        OSError.__init__(self, message)
        self.code = code


class BusyError(StorageError):
    """Another stream holds the store: every stream on a directory store,
    made with ``mode="w"`` or continuing it with ``mode="a"``, holds an
    advisory lock (flock) on the store's directory until it is closed, and
    a second stream on it, in this process or another, is refused with
    this (``code`` 27, ``SHARDPIPE_ERR_BUSY``); nothing is changed.  Close
    the first stream, then open again."""


class CorruptStoreError(Error):
    """A store being read is malformed or fails a checksum or decode."""


class UnsupportedError(Error):
    """The store uses a codec or feature shardpipe does not read."""


class DeviceError(Error):
    """A backend's device failed, or a plugin is built for another ABI."""


class SinkError(Error):
    """The sink failed (only when it gave no Python exception of its own;
    otherwise that exception is raised)."""


class ClosedError(Error):
    """The stream failed earlier or is closed."""


# SHARDPIPE_ERR_* values, include/shardpipe.h.
_FAMILY = {
    1: InvalidDescriptionError, 2: InvalidDescriptionError,
    3: InvalidDescriptionError, 4: InvalidDescriptionError,
    5: InvalidDescriptionError, 6: InvalidDescriptionError,
    7: InvalidDescriptionError, 8: InvalidDescriptionError,
    9: InvalidDescriptionError, 10: InvalidDescriptionError,
    11: StorageError, 12: StorageError, 13: Error, 14: StorageError,
    15: StorageError, 16: StorageError, 17: BeyondEndError,
    18: ClosedError, 19: SinkError, 20: DeviceError, 21: Error,
    22: CorruptStoreError, 23: CorruptStoreError, 24: UnsupportedError,
    25: InvalidDescriptionError, 26: DeviceError, 27: BusyError,
}
_shardpipe._set_errors(tuple(_FAMILY.get(c, Error)
                             for c in range(_shardpipe.ERR_COUNT)))


# ---------------------------------------------------------------- writing

@_dataclass(frozen=True)
class Stats:
    """A stream's counters so far (``shardpipe_stats``)."""

    bytes_in: int
    """Array bytes appended."""
    bytes_out: int
    """Shard bytes written, indexes included."""
    shards_written: int
    """Shards written (to files, the store or the sink)."""
    chunks_written: int
    """Chunks stored in them (chunks all fill value left out are not)."""
    rows_written: int
    """Rows of dim 0 covered by written shards."""
    seconds_stage: float
    """Seconds copying appended spans into batches.  The seconds of each
    stage are summed over batches; stages that overlap are each counted
    in full."""
    seconds_scatter: float
    """Seconds scattering batches into chunks."""
    seconds_compress: float
    """Seconds compressing chunks."""
    seconds_aggregate: float
    """Seconds aggregating compressed chunks into shards and fetching
    them (from a device)."""
    seconds_write: float
    """Seconds on shard indexes, serialisation and the store."""
    pool_bytes: int
    """Memory planned for staging and pools."""
    appends_blocked: int
    """Appends and skips that waited for the pipeline."""
    seconds_blocked: float
    """The seconds they waited, in all."""


# SHARDPIPE_ERR_* codes the argument checks below report.
_ERR_INVALID, _ERR_DIM, _ERR_CHUNK, _ERR_SHARD, _ERR_OVERFLOW = 1, 3, 4, 5, 6
_ERR_PATH, _ERR_BEYOND_END, _ERR_CLOSED = 11, 17, 18
_U64_MAX = (1 << 64) - 1


def _integer(name: str, v: _Any, lo: int, hi: int, code: int | None) -> int:
    """v as an int in lo..hi, or an error naming the argument ("shape[1] =
    -3: ...."): InvalidDescriptionError with `code`, or IndexError when
    code is None (a region to read).  Floats, strings and bools are
    refused with TypeError rather than converted: int(4.5) and int("4")
    would silently accept a mistake."""
    if isinstance(v, bool) or not hasattr(type(v), "__index__"):
        raise TypeError("%s = %r: not an integer" % (name, v))
    i = _operator.index(v)
    why = None
    if i < lo:
        why = "negative" if i < 0 else "below %d" % lo
    elif i > hi:
        why = "above %d%s" % (hi, " (2^64 - 1)" if hi == _U64_MAX else "")
        if code is not None and hi == _U64_MAX:
            code = _ERR_OVERFLOW
    if why is None:
        return i
    msg = "%s = %d: %s" % (name, i, why)
    raise IndexError(msg) if code is None else InvalidDescriptionError(
        msg, code)


def _not_sequence(v: _Any) -> bool:
    """Whether v cannot stand for one value per dim: a string, or what
    has no order of its own (a dict iterates its keys, a set in hash
    order), or nothing to iterate."""
    return isinstance(v, (str, bytes, _abc.Mapping, _abc.Set)) or \
        not hasattr(v, "__iter__")


def _extents(name: str, values: _Any, lo: int,
             code: int | None) -> tuple[int, ...]:
    """A sequence of extents, each checked by _integer as name[d]."""
    if _not_sequence(values):
        raise TypeError("%s = %r: not a sequence of integers" %
                        (name, values))
    return tuple(_integer("%s[%d]" % (name, d), v, lo, _U64_MAX, code)
                 for d, v in enumerate(values))


def _text(name: str, v: _Any) -> str:
    """v, a str without NUL (which C would cut the string at), or an
    error naming the argument."""
    if not isinstance(v, str):
        raise TypeError("%s = %r: not a str" % (name, v))
    if "\0" in v:
        raise InvalidDescriptionError("%s = %r: holds a NUL character"
                                      % (name, v), _ERR_INVALID)
    return v


def _shape_text(shape: _Sequence[int]) -> str:
    """A shape as Python writes a tuple of ints: (64, 63), (5,), ()."""
    return str(tuple(int(n) for n in shape))


def _flag(name: str, v: _Any) -> bool:
    """v as a bool: anything equal to False or True (0, 1, NumPy's bools)
    but a string.  Anything else is refused: bool("no") is True, and
    overwrite="no" must not overwrite."""
    try:
        if not isinstance(v, (str, bytes)) and v in (False, True):
            return bool(v)
    except (TypeError, ValueError):  # an array's truth is ambiguous
        pass
    raise TypeError("%s = %r: not a bool" % (name, v))


_ZARR_DTYPES = frozenset((
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float16", "float32", "float64"))


def _dtype_name(dtype: _Any) -> str:
    """The Zarr name of a dtype given as a name, a NumPy dtype or a type;
    a non-native byte order is refused (the library takes native bytes)."""
    if isinstance(dtype, str) and dtype in _ZARR_DTYPES:
        return dtype
    if dtype is None:
        # NumPy reads None as float64: too easy a slip to take.
        raise TypeError("dtype = None: not a data type")
    import numpy as np

    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError("dtype: %r is not a data type" % (dtype,)) from e
    if not dt.isnative:
        raise ValueError("dtype: %s is not in native byte order; convert "
                         "with a.astype(a.dtype.newbyteorder('='))" % dt)
    return str(dt.name)


def _fill_bytes(name: str, value: _Any) -> bytes:
    """The fill value as one element of dtype `name` in native bytes.

    A NumPy scalar of exactly that dtype is taken bit for bit (a NaN keeps
    its payload); otherwise bool takes True/False (or 0/1), the integer
    types an integer in their range, the float types any real number (a
    finite one that the type cannot hold is refused, not made infinite).
    """
    import numpy as np

    dt = np.dtype(name)
    if isinstance(value, np.generic) and value.dtype == dt:
        return value.tobytes()
    if dt.kind == "b":
        if isinstance(value, (bool, np.bool_)) or (
                isinstance(value, _numbers.Integral) and value in (0, 1)):
            return np.array(bool(value), dt).tobytes()
        raise ValueError("fill_value: %r is not a bool (True, False, 0 or 1)"
                         % (value,))
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, _numbers.Real):
        raise TypeError("fill_value: %r is not a number (dtype %s)"
                        % (value, name))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if not isinstance(value, _numbers.Integral) or not (
                info.min <= int(value) <= info.max):
            raise ValueError("fill_value: %r is not a %s (an integer in "
                             "%d..%d)" % (value, name, info.min, info.max))
        return np.array(int(value), dt).tobytes()
    try:
        x = float(value)
    except OverflowError:
        x = None
    with np.errstate(over="ignore"):
        v = np.array(x if x is not None else 0.0, dt)
    if x is None or (np.isinf(v) and not np.isinf(x)):
        raise ValueError("fill_value: %r is beyond %s's range"
                         % (value, name))
    return v.tobytes()


def _attr_key(where: str, key: _Any) -> str:
    """An attribute's key, a str the library can take: no NUL (C would
    cut the key there) and no lone surrogate (not UTF-8)."""
    if not isinstance(key, str):
        raise TypeError("%s: key must be a str, not %r" % (where, key))
    if "\0" in key:
        raise ValueError("%s: key %r holds a null character" % (where, key))
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("%s: key %r is not valid Unicode (a lone "
                         "surrogate)" % (where, key)) from None
    return key


def _json_text(key: str, value: _Any) -> str:
    """An attribute's value as JSON text (what set_attribute stores)."""
    try:
        text = _json.dumps(value, allow_nan=False, ensure_ascii=False)
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        raise ValueError("attribute %r: a str in the value is not valid "
                         "Unicode (a lone surrogate)" % (key,)) from None
    except ValueError as e:
        raise ValueError("attribute %r: %s (NaN and infinities are not "
                         "JSON)" % (key, e)) from None
    except TypeError as e:
        raise TypeError("attribute %r: %s" % (key, e)) from None


_METHODS = ("mean", "min", "max", "median", "decimate", "second_max",
            "second_min")
_AXIS_TYPES = ("auto", "space", "time", "channel")


def _dim_of(arg: str, key: _Any, names: _Sequence[str | None] | None,
            rank: int) -> int:
    """The dim a name or index stands for, or ValueError naming both."""
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise TypeError("%s: %r is neither a dimension name nor an index"
                        % (arg, key))
    if isinstance(key, int):
        if not 0 <= key < rank:
            raise ValueError("%s: dim %d is beyond the %d dims of shape"
                             % (arg, key, rank))
        return key
    if names is not None and key in names:
        return list(names).index(key)
    raise ValueError("%s: no dim is named %r (dimension_names: %r)"
                     % (arg, key, names))


def _word(arg: str, value: _Any, words: _Sequence[str]) -> int:
    if value not in words:
        raise ValueError("%s: %r is not one of %s" % (arg, value,
                                                       ", ".join(words)))
    return list(words).index(value)


def _pyramid_args(names: _Sequence[str | None] | None, rank: int,
                  downsample: _Sequence[str | int] | None, method: str,
                  append_method: str | None, levels: int | None,
                  ngff: bool, units: dict[str | int, str] | None,
                  scale: dict[str | int, float] | None,
                  axis_types: dict[str | int, str] | None,
                  stop: dict[str | int, int] | None = None
                  ) -> tuple[_Any, ...]:
    """The pyramid's keywords as the extension takes them: dims resolved,
    words made numbers, the per-dim dicts made lists."""
    mask = 0
    for key in downsample or ():
        d = _dim_of("downsample", key, names, rank)
        if mask >> d & 1:
            raise ValueError("downsample: dim %d is given twice" % d)
        mask |= 1 << d
    if levels is not None and (isinstance(levels, bool) or
                               not isinstance(levels, int) or levels < 1):
        raise ValueError("levels: %r is not a count of levels (1 or more)"
                         % (levels,))
    per_dim: list[list[_Any]] = []
    conv: _Callable[[_Any], _Any]
    given: dict[str | int, _Any] | None
    for arg, given, conv in (("units", units, str),
                             ("scale", scale, float),
                             ("axis_types", axis_types,
                              lambda v: _word("axis_types", v, _AXIS_TYPES))):
        vals: list[_Any] = [None if arg == "units" else 0] * rank
        for key, v in (given or {}).items():
            vals[_dim_of(arg, key, names, rank)] = conv(v)
        per_dim.append(vals)
    stops = [0] * rank
    for key, v in (stop or {}).items():
        d = _dim_of("stop", key, names, rank)
        if isinstance(v, bool) or not isinstance(v, int) or \
                not 2 <= v <= _shardpipe.MAX_LEVELS:
            raise ValueError("stop: %r for dim %d is not a count of levels "
                             "in 2..%d (the levels, level 0 included, "
                             "that the dim halves through)"
                             % (v, d, _shardpipe.MAX_LEVELS))
        stops[d] = v
    per_dim.append(stops)
    return (mask, _word("method", method, _METHODS),
            -1 if append_method is None
            else _word("append_method", append_method, _METHODS),
            0 if levels is None else levels, _flag("ngff", ngff), *per_dim)


class _Default:
    """The default of an array field that mode "a" takes from the store
    when it is not given, and mode "w" reads as ``value``; its repr is the
    value's, so that help() shows what mode "w" takes."""

    __slots__ = ("value",)

    def __init__(self, value: _Any):
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


_CODEC: _Any = _Default("zstd:1")
_INDEX_END: _Any = _Default("end")
_FILL: _Any = _Default(0)
_MODES = ("w", "w-", "a")


def _reopen_refusals(path: _Any, sink: _Any, overwrite: bool,
                     downsample: _Any, method: _Any, append_method: _Any,
                     levels: _Any, ngff: bool, units: _Any, scale: _Any,
                     axis_types: _Any, stop: _Any = None) -> None:
    """The arguments mode "a" cannot take, refused with ValueError before
    anything is read."""
    if sink is not None:
        raise ValueError("mode 'a' continues the array stored at path; a "
                         "sink receives the shards of a new array only "
                         "(sink with mode 'a')")
    if path is None:
        raise ValueError("mode 'a' needs the path of the array to "
                         "continue (path is None)")
    if overwrite:
        raise ValueError("mode 'a' continues the array at path and "
                         "overwrite=True would replace it: mode 'w' with "
                         "overwrite=True replaces a store")
    pyramid = [n for n, given in (
        ("downsample", downsample is not None),
        ("method", method != "mean"),
        ("append_method", append_method is not None),
        ("levels", levels is not None), ("ngff", ngff),
        ("units", units is not None), ("scale", scale is not None),
        ("axis_types", axis_types is not None),
        ("stop", stop is not None)) if given]
    if pyramid:
        raise ValueError("reopening a pyramid is not supported yet (mode "
                         "'a' with %s)" % ", ".join(pyramid))


class _Progress:
    """A stream's progress on stderr while it appends (``progress=True``):
    a tqdm bar of the rows of dim 0 appended, of the bounded total or a
    count when dim 0 grows, when tqdm can be imported (``tqdm.auto``:
    a widget in a notebook); else one status line redrawn in place with a
    carriage return, at most ``INTERVAL`` seconds apart.  Only the display:
    nothing written to the store depends on it.  ``finish()`` at close
    shows the last count and ends the line."""

    INTERVAL = 0.25

    def __init__(self, label: str, total: int, rows: int, row_bytes: int):
        import time

        self._clock = time.monotonic
        self._label = label
        self._total = total or None      # None: dim 0 grows
        self._rows = self._first = rows
        self._row_bytes = row_bytes
        self._t0 = self._last = self._clock()
        self._width = 0
        self._bar: _Any = None
        tqdm: _Any = None
        try:
            # Imported by name: tqdm is optional, and has no type hints.
            tqdm = _importlib.import_module("tqdm.auto").tqdm
        except Exception:                # ImportError, or a broken tqdm
            pass
        if tqdm is not None:
            self._bar = tqdm(total=self._total, initial=rows, desc=label,
                             unit="row", dynamic_ncols=True)
        else:
            self._draw(False)

    def update(self, rows: int) -> None:
        """The rows of dim 0 now appended (from row 0 of the array)."""
        if rows <= self._rows:
            return
        if self._bar is not None:
            self._bar.update(rows - self._rows)
            self._rows = rows
            return
        self._rows = rows
        now = self._clock()
        if now - self._last >= self.INTERVAL:
            self._last = now
            self._draw(False)

    def finish(self, rows: int) -> None:
        """The last count, then the bar closed or the line ended."""
        if self._bar is not None:
            if rows > self._rows:
                self._bar.update(rows - self._rows)
            self._rows = rows
            self._bar.close()
            self._bar = None
            return
        self._rows = max(rows, self._rows)
        self._draw(True)

    def _draw(self, last: bool) -> None:
        import sys

        err = sys.stderr
        if err is None:                  # pythonw: no stderr
            return
        rows, total = self._rows, self._total
        if total:
            text = "%s: %d/%d rows (%.0f%%)" % (self._label, rows, total,
                                                100.0 * rows / total)
        else:
            text = "%s: %d rows" % (self._label, rows)
        seconds = self._clock() - self._t0
        if seconds > 0 and rows > self._first:
            text += ", %.1f MB/s" % ((rows - self._first) * self._row_bytes
                                     / seconds / 1e6)
        if last:
            text += ", %.1f s" % seconds
        # Spaces over what a longer line before left.
        pad = max(0, self._width - len(text))
        self._width = len(text)
        try:
            err.write("\r" + text + " " * pad + ("\n" if last else ""))
            err.flush()
        except (OSError, ValueError):    # a closed or broken stderr
            pass


_FRAME_DTYPES = {"float64": "f64", "int64": "i64", "bool": "b"}


def _frame_fields(frame_meta: _Any) -> tuple[tuple[str, str], ...]:
    """frame_meta as (name, dtype) pairs in the order given; the names'
    rules are the library's (doc/design.md §28.9)."""
    if frame_meta is None:
        return ()
    if not isinstance(frame_meta, dict):
        raise TypeError("frame_meta = %r: not a dict from field name to "
                        "dtype" % (frame_meta,))
    out = []
    for k, v in frame_meta.items():
        if not isinstance(k, str):
            raise TypeError("frame_meta: key %r is not a str" % (k,))
        try:
            import numpy as np
            name = np.dtype(v).name if not isinstance(v, str) else v
        except TypeError:
            name = repr(v)
        if name not in _FRAME_DTYPES:
            raise ValueError("frame_meta[%r] = %r: a field is 'float64', "
                             "'int64' or 'bool'" % (k, v))
        out.append((k, name))
    return tuple(out)


def _frame_values(fields: tuple[tuple[str, str], ...], meta: _Any,
                  k: int) -> bytes | None:
    """meta, k rows' values of fields, as the library's
    shardpipe_frame_value array (8 bytes each, row by row); None for a
    stream without fields.  Every check before anything is appended."""
    import struct
    if not fields:
        if meta is not None:
            raise ValueError("append: meta given, but the stream has no "
                             "frame_meta fields; nothing appended")
        return None
    if meta is None:
        raise ValueError("append: the stream has frame_meta fields %s: "
                         "give meta={...} with each append; nothing "
                         "appended" % ", ".join(n for n, _ in fields))
    if not isinstance(meta, dict):
        raise TypeError("append: meta = %r: not a dict" % (meta,))
    names = [n for n, _ in fields]
    for key in meta:
        if key not in names:
            raise ValueError("append: meta[%r]: not a field of the stream "
                             "(%s); nothing appended"
                             % (key, ", ".join(names)))
    import numpy as np
    cols = []
    for name, dt in fields:
        if name not in meta:
            raise ValueError("append: meta lacks field %r; nothing "
                             "appended" % name)
        v = meta[name]
        if isinstance(v, (str, bytes, dict)):
            seq = None
        else:
            try:
                seq = list(v)
            except TypeError:
                seq = None
        if seq is None:
            seq = [v]
            if k != 1:
                raise ValueError("append: meta[%r] = %r: one value for %d "
                                 "rows; give a sequence of %d; nothing "
                                 "appended" % (name, v, k, k))
        elif len(seq) != k:
            raise ValueError("append: meta[%r] has %d values for %d rows; "
                             "nothing appended" % (name, len(seq), k))
        col = []
        for x in seq:
            if isinstance(x, np.generic):
                x = x.item()
            if dt == "bool":
                if not isinstance(x, bool):
                    raise TypeError("append: meta[%r] = %r: field %r is "
                                    "bool, not %s; nothing appended"
                                    % (name, x, name, type(x).__name__))
                col.append(struct.pack("=i4x", int(x)))
            elif dt == "int64":
                if isinstance(x, float) and x.is_integer():
                    x = int(x)
                if isinstance(x, bool) or not isinstance(x, int):
                    raise TypeError("append: meta[%r] = %r: field %r is "
                                    "int64, not %s%s; nothing appended"
                                    % (name, x, name, type(x).__name__,
                                       " with a fraction"
                                       if isinstance(x, float) else ""))
                if not -2**63 <= x < 2**63:
                    raise ValueError("append: meta[%r] = %d: outside "
                                     "int64; nothing appended" % (name, x))
                col.append(struct.pack("=q", x))
            else:
                if isinstance(x, bool) or not isinstance(x, (int, float)):
                    raise TypeError("append: meta[%r] = %r: field %r is "
                                    "float64, not %s; nothing appended"
                                    % (name, x, name, type(x).__name__))
                col.append(struct.pack("=d", float(x)))
        cols.append(col)
    return b"".join(cols[i][r] for r in range(k) for i in range(len(cols)))


class Stream:
    """A stream writing one sharded Zarr v3 array.

    ``path``: the store's directory (created; an existing store is refused
    unless ``overwrite``, or continued with ``mode="a"``), or an ``"s3://bucket/prefix"`` URL, the
    endpoint, region and credentials then coming from the environment
    (``AWS_ENDPOINT_URL`` or ``SHARDPIPE_S3_ENDPOINT``, ``AWS_REGION``,
    ``AWS_ACCESS_KEY_ID`` ... or ``AWS_PROFILE``; shardpipe(1), "S3
    STORES").  ``shape``: the array's extent per dimension,
    slowest first; 0 on dim 0 makes it grow with the appends.  ``chunks``:
    the chunk (Zarr's inner chunk) shape.  ``shards``: the shard shape in
    elements, as in zarr-python and TensorStore: a multiple of ``chunks``
    on every dimension.  ``dtype``: a Zarr/NumPy name (``"uint16"``) or a
    NumPy dtype.  ``codec``: the command line's codec string (``"zstd:3"``,
    ``"gzip:6"``, ``"blosc:zstd:1:shuffle"``, ``"none"``), parsed by the
    library.  ``backend``: ``"auto"``, ``"cpu"``, ``"reference"``,
    ``"opencl"`` or ``"cuda"`` (``SHARDPIPE_BACKEND`` overrides).
    ``threads``: worker threads, 0 for every core (at most 4096).  Every
    entry of ``shape``, ``chunks`` and ``shards`` and ``threads`` must be
    an integer (a float or a string raises TypeError) in range: one that
    is not raises InvalidDescriptionError naming it ("shape[1] = -3:
    negative").  ``codec``, ``backend``, ``index_location`` and each
    dimension name must be a str (a name may be None), ``overwrite`` a
    bool: anything else raises TypeError naming it.  ``sink``: a callable
    ``sink(coords, data)`` receiving each finished shard (its coordinates
    in the shard grid and the whole shard object as bytes) instead of
    files; then ``path`` may be None.  An exception raised in it fails the
    stream, and is raised again from the next call.

    ``fill_value``: what readers return where nothing is stored, one value
    of the dtype (default 0; NaN and infinities for floats; a NumPy scalar
    of the dtype is taken bit for bit).  ``write_empty_chunks``: store
    chunks that are all fill value too (default False: they are left
    out, as zarr-python and TensorStore do).  ``durable``: fsync every
    object before zarr.json advertises it (see shardpipe(3),
    "Durability").  ``max_memory``: a cap in bytes on the memory the
    stream plans (0: none).  ``attributes``: a dict of user attributes for
    zarr.json, each value any JSON-serialisable object, checked before
    anything is written (see ``set_attribute``).

    Pyramids (see shardpipe(3), "Pyramids"): ``downsample`` names the
    dims (by ``dimension_names`` or index) that halve from each level to
    the next, every block reduced by ``method`` (``"mean"``, ``"min"``,
    ``"max"``, ``"median"``, ``"decimate"``, ``"second_max"``,
    ``"second_min"``: the second-highest or second-lowest element, equal
    values counted, which keeps a point feature that ``"max"`` or
    ``"min"`` would spread and drops a lone outlier; along dim 0 by
    ``append_method`` after ``method`` reduced each row, when given).
    ``levels``: how many, level 0 included (None: until every halving dim
    fits a chunk).  ``stop``: a dict from dim to the levels, level 0
    included, through which it halves (``{"z": 3}``: z halves twice, y
    and x go on; the library's ``max_levels_dim``), 2 up to the
    pyramid's levels, on a downsampled dim only.  The store is then an OME-NGFF 0.5 image: a group with
    arrays ``path/0``, ``path/1``, ... (``open(path + "/1")`` reads level
    1); ``ngff=True`` writes that layout with one level.  ``units``,
    ``scale`` and ``axis_types``: dicts from dim (name or index) to an
    OME-NGFF unit (``"micrometer"``, ``"second"``, ...), the physical size
    of a level-0 element, and ``"space"``, ``"time"`` or ``"channel"``
    for dims not named t, c, z, y or x.  Attributes go into the group.

    Per-frame metadata (see shardpipe(3), "Frame metadata"):
    ``frame_meta`` a dict from field name to ``"float64"``, ``"int64"`` or
    ``"bool"``, for an image only (``ngff=True`` or ``downsample``, and
    in a Group or a Plate); each field a 1-D array ``path/NAME`` beside
    the levels, with a ``skipped`` bool field added, and ``append(frame,
    meta={...})`` gives each frame's values.  xarray's zarr engine opens
    the image with the fields as coordinates of dim 0.  Mode "a" of an
    image with fields continues them: ``frame_meta`` not given is the
    store's fields, given it must equal them (InvalidDescriptionError
    naming the field), and ``append(frame, meta={...})`` goes on.

    Input that ends early follows ``shardpipe write``'s rules (see
    ``close()``): ``pad_partial=True`` (``--pad-partial``) lets the input
    end inside a row of dim 0, the rest of that row the fill value;
    ``allow_short=True`` (``--allow-short``) lets it end before a bounded
    dim 0 is full.  Without them close writes the whole rows, closes, and
    raises IncompleteError.

    ``storage_order``: the store holds the appended array transposed,
    ``stored = appended.transpose(storage_order)`` (NumPy's axes: storage
    dim i is append dim ``storage_order[i]``); ``shape``, ``chunks``,
    ``shards`` and every per-dim argument are in storage order, as the
    store's zarr.json, while ``append`` takes rows in append order.  The
    append dim may be stored as any dim (``(1, 0, 2, 3)``: (t, c, y, x)
    frames stored channel-major as (c, t, y, x), zarr.json growing its
    dim 1); it alone may then be unbounded (``shape[i]`` 0 where
    ``storage_order[i]`` is 0).  A pyramid takes any order; an image's
    axes keep OME-NGFF's order (time first, then channel, then space:
    a z-stack appended as (z, c, y, x) stored (c, z, y, x) with
    ``storage_order=(1, 0, 2, 3)``).  zarr.json records no order: mode "a"
    continues a store given the same ``storage_order`` again, the store's
    rows (``start_row``) and the bound (``shape[i]``) then counted along
    that dim.  ``(0, 3, 1, 2)``: (t, y, x, c)
    frames stored planar as (t, c, y, x).  Default None: the identity.

    ``append(a)`` takes NumPy arrays of whole rows of dim 0, shape
    ``(k, *shape[1:])`` or ``shape[1:]`` (in append order with a
    ``storage_order``), and checks shape and dtype;
    ``append_bytes(buf)`` takes raw array bytes in spans of any size.

    ``mode``: ``"w"`` (the default) creates a new array, refusing a path
    that holds a store unless ``overwrite=True``; ``"w-"`` is the same,
    zarr-python's spelling of "create, fail if it exists" (note that
    zarr-python's ``"w"`` overwrites; here only ``overwrite=True`` does).
    ``"a"`` continues the array already at ``path`` (a directory; see
    shardpipe(3), "Pausing and resuming an acquisition"): the appends
    start at the row after the last one its zarr.json advertises
    (``start_row``), and the store's rows stay byte for byte -- writing
    N rows in one run, or k rows, close, then N - k with mode "a", gives
    the same files.  A shard of the store's last shard row that does not
    decode refuses mode "a" (CorruptStoreError or a StorageError naming
    it) unless ``truncate_to_advertised=True``, which drops that row and
    continues from the rows before it (``start_row`` says where).  In mode "a" ``shape``, ``chunks``, ``shards``,
    ``dtype``, ``codec``, ``dimension_names``, ``index_location`` and
    ``fill_value`` are optional: those not given are the store's, and
    each one given must equal the store's (InvalidDescriptionError
    naming the field, the store's value and the one given), except
    ``shape[0]``, the bound of this run: 0 (or no shape) grows without
    bound, N stops at row N of the array (BeyondEndError at open when
    the store holds N rows already).  The rest (backend, threads,
    durable, max_memory, write_empty_chunks, pad_partial, allow_short)
    applies to this run; ``attributes`` are set over the store's.  Mode
    "a" refuses, with ValueError, ``overwrite=True``, a ``sink``, the
    pyramid arguments (reopening a pyramid is not supported yet) and a
    Group's stream.  Without a store at path the library's
    StorageError (code 11) is raised; a store another stream holds open
    raises BusyError.  Any other mode raises ValueError naming it.

    ``progress``: show the appends' progress on stderr: a tqdm bar of the
    rows of dim 0 appended (of the bounded ``shape[0]``, or a count when
    dim 0 grows; from ``start_row`` in mode "a") when tqdm can be
    imported, else one status line (rows, percent, MB/s) redrawn in place
    with a carriage return at most four times a second; ended at close.
    tqdm is not required, and the store written is the same either way.

    A description the library refuses raises InvalidDescriptionError (or
    StorageError for the path) with the library's message, before anything
    is written.  Use it as a context manager: leaving the block closes the
    stream, whether or not an exception is passing.  Every stream on a
    directory store holds a lock on it until closed: a second stream on
    the same store raises BusyError.

    ``region=(lo, hi)``: a region writer (shardpipe(3),
    shardpipe_stream_open_region; design §30) writing only the shards of
    the box lo..hi (hi exclusive; hi[0] 0 on an unbounded dim 0) of the
    array ``shape`` describes, into the existing directory ``path`` or
    an ``"s3://bucket/prefix"`` URL (each shard only where no object has
    its key: one of other bytes there, another writer's, raises
    BusyError naming it; design §30.4); its
    appends take the box's rows (shape ``hi - lo``), it never writes
    zarr.json (``publish()`` does, once), and many region writers hold
    the store at once.  lo and hi must be multiples of ``shards`` (hi may
    be the array's edge): else InvalidDescriptionError naming the dim and
    the nearest aligned box.
    """

    def __init__(self, path: _Path | None,
                 shape: _Sequence[int] | None = None,
                 chunks: _Sequence[int] | None = None,
                 shards: _Sequence[int] | None = None,
                 dtype: _Any = None,
                 codec: str = _CODEC,
                 dimension_names: _Sequence[str | None] | None = None,
                 index_location: str = _INDEX_END, backend: str = "auto",
                 threads: int = 0, overwrite: bool = False,
                 sink: _Callable[[tuple[int, ...], bytes], object] | None = None,
                 fill_value: _Any = _FILL, write_empty_chunks: bool = False,
                 durable: bool = False, max_memory: int = 0,
                 attributes: dict[str, _Any] | None = None,
                 downsample: _Sequence[str | int] | None = None,
                 method: str = "mean", append_method: str | None = None,
                 levels: int | None = None, ngff: bool = False,
                 units: dict[str | int, str] | None = None,
                 scale: dict[str | int, float] | None = None,
                 axis_types: dict[str | int, str] | None = None,
                 stop: dict[str | int, int] | None = None,
                 pad_partial: bool = False, allow_short: bool = False,
                 mode: str = "w", progress: bool = False,
                 truncate_to_advertised: bool = False,
                 frame_meta: dict[str, str] | None = None,
                 storage_order: _Sequence[int] | None = None,
                 region: tuple[_Sequence[int], _Sequence[int]] | None = None,
                 _publish: int | None = None):
        if not isinstance(mode, str):
            raise TypeError("mode = %r: not a str" % (mode,))
        if mode not in _MODES:
            raise ValueError(
                "mode = %r: not one of 'w' (create a new array), 'w-' (the "
                "same) or 'a' (continue the array at path)%s"
                % (mode, "; to read a store, use shardpipe.open()"
                   if mode.startswith("r") else ""))
        reopen = mode == "a"
        truncate = _flag("truncate_to_advertised", truncate_to_advertised)
        if truncate and not reopen:
            raise ValueError("truncate_to_advertised=True drops the damaged "
                             "last shard row of a store mode 'a' continues; "
                             "mode %r creates one" % (mode,))
        overwrite = _flag("overwrite", overwrite)
        progress = _flag("progress", progress)
        if reopen:
            _reopen_refusals(path, sink, overwrite, downsample, method,
                             append_method, levels, _flag("ngff", ngff),
                             units, scale, axis_types, stop)
        else:
            missing = ["'%s'" % n for n, v in (("shape", shape),
                                               ("chunks", chunks),
                                               ("shards", shards))
                       if v is None]
            if missing:
                if dtype is None:
                    missing.append("'dtype'")
                # As Python words it: 'a', 'a' and 'b', 'a', 'b', and 'c'.
                words = " and ".join(missing) if len(missing) < 3 else \
                    ", ".join(missing[:-1]) + ", and " + missing[-1]
                raise TypeError(
                    "Stream() missing %d required argument%s: %s (mode %r "
                    "creates an array: shape, chunks, shards and dtype are "
                    "needed; mode 'a' takes them from an existing store)"
                    % (len(missing), "s" if len(missing) > 1 else "",
                       words, mode))
        if shape is not None:
            shape = _extents("shape", shape, 0, _ERR_DIM)
        if chunks is not None:
            chunks = _extents("chunks", chunks, 1, _ERR_CHUNK)
        if shards is not None:
            shards = _extents("shards", shards, 1, _ERR_SHARD)
        threads = _integer("threads", threads, 0, _shardpipe.MAX_THREADS,
                           _ERR_INVALID)
        max_memory = _integer("max_memory", max_memory, 0, _U64_MAX,
                              _ERR_INVALID)
        # The given extents agree on the rank (mode "w" gives all three;
        # in mode "a" the extension checks them against the store's).
        given = [(what, len(v)) for what, v in (("shape", shape),
                                                ("chunks", chunks),
                                                ("shards", shards))
                 if v is not None]
        rank: int | None = None
        if given:
            first, rank = given[0]
            for what, n in given[1:]:
                if n != rank:
                    raise InvalidDescriptionError(
                        "%s has %d entries, %s %d" % (what, n, first, rank),
                        2)
        if dimension_names is not None:
            if _not_sequence(dimension_names):
                raise TypeError("dimension_names = %r: not a sequence of "
                                "names" % (dimension_names,))
            dimension_names = tuple(
                None if v is None else _text("dimension_names[%d]" % d, v)
                for d, v in enumerate(dimension_names))
            if rank is not None and len(dimension_names) != rank:
                raise InvalidDescriptionError(
                    "dimension_names has %d entries, %s %d"
                    % (len(dimension_names), given[0][0], rank), 25)
        order = None
        if storage_order is not None:
            if _not_sequence(storage_order) or \
                    not hasattr(storage_order, "__len__"):
                raise TypeError("storage_order = %r: not a sequence of dim "
                                "indices" % (storage_order,))
            if rank is not None and len(storage_order) != rank:
                raise InvalidDescriptionError(
                    "storage_order has %d entries, %s %d"
                    % (len(storage_order), given[0][0], rank), _ERR_INVALID)
            n = rank if rank is not None else len(storage_order)
            order = tuple(_integer("storage_order[%d]" % d, v, 0, n - 1,
                                   _ERR_INVALID)
                          for d, v in enumerate(storage_order))
        if chunks is not None and shards is not None:
            for d in range(len(chunks)):
                if shards[d] % chunks[d]:
                    raise InvalidDescriptionError(
                        "shards[%d] = %d: not a multiple of chunks[%d] = %d "
                        "(a shard holds whole chunks)"
                        % (d, shards[d], d, chunks[d]), _ERR_SHARD)
        group = array = None
        plate: dict[str, _Any] = {}
        if isinstance(path, _InPlate):
            # Plate.field(): the field of an open plate, at
            # root/ROW/COL/INDEX; the plate's threads, never overwrite.
            plate = {"plate": path.plate._p,
                     "field": (path.row, path.column, path.field_index,
                               path.acquisition)}
            root = path.plate.path
            parts = (path.row, path.column, str(path.field_index))
            path = _os.path.join(root, *(_os.fsencode(p) for p in parts)) \
                if isinstance(root, bytes) else _os.path.join(root, *parts)
        elif isinstance(path, _InGroup):
            if reopen:
                raise ValueError("Group.stream(): mode 'a' (continuing an "
                                 "array) is not supported in a group")
            # Group.stream(): the array `array` of an open group.
            group, array = path.group._g, path.name
            # A group opened by a bytes path joins its names as bytes.
            root = path.group.path
            path = _os.path.join(root, _os.fsencode(array)
                                if isinstance(root, bytes) else array)
        elif path is not None:
            path = _os.fspath(path)
        # mode "w": dtype None is refused here, naming it.
        name = None if reopen and dtype is None else _dtype_name(dtype)
        pairs = None
        if attributes is not None:
            pairs = [(_attr_key("attributes", k), _json_text(k, v))
                     for k, v in dict(attributes).items()]
        # mode "a": no pyramid (refused above); the extension's defaults.
        pyr: dict[str, _Any] = {}
        if not reopen:
            assert rank is not None      # mode "w" has all three extents
            pyr = dict(zip(
                ("downsample", "method", "append_method", "max_levels",
                 "ngff", "units", "scales", "axis_types", "max_levels_dim"),
                _pyramid_args(dimension_names, rank, downsample, method,
                              append_method, levels, ngff, units, scale,
                              axis_types, stop)))
        fields = _frame_fields(frame_meta)
        if reopen and not fields:
            # The store's fields (§28.9), given back to the library,
            # which refuses them if the store changed meanwhile.
            assert path is not None              # refused in mode "a"
            fields = tuple(_shardpipe.desc_from_store(path, order)[8])
        if fields:
            pyr["frame_fields"] = fields
        if sink is not None and (downsample or ngff or fields):
            # The library's own refusal speaks of the C sink's object
            # callback, which a Python callable cannot be.
            raise InvalidDescriptionError(
                "sink: the callable receives one array's shards (coords, "
                "data); %s writes an OME-NGFF image, a group of arrays, "
                "which needs a path" % ("downsample" if downsample else
                                        "frame_meta" if fields else
                                        "ngff=True"), _ERR_INVALID)
        pad_partial = _flag("pad_partial", pad_partial)
        allow_short = _flag("allow_short", allow_short)
        # An argument left at its _Default is the store's in mode "a"
        # (None to the extension), its value in mode "w".
        if isinstance(codec, _Default):
            codec = None if reopen else codec.value
        else:
            codec = _text("codec", codec)
        if isinstance(index_location, _Default):
            index_location = None if reopen else index_location.value
        else:
            index_location = _text("index_location", index_location)
        if isinstance(fill_value, _Default) and reopen:
            fill = None
        else:
            if isinstance(fill_value, _Default):
                fill_value = fill_value.value
            if name is None:
                # A fill value for the store's dtype, which is then given
                # too: a store changed before the reopen is refused.
                assert path is not None          # refused in mode "a"
                name = _shardpipe.desc_from_store(path, order)[3]
            fill = _fill_bytes(name, fill_value)
        if region is not None:
            if reopen or sink is not None or group is not None or plate:
                raise ValueError("region: a region writer writes a "
                                 "directory's array in mode 'w' (no sink, "
                                 "group, plate or mode 'a')")
            try:
                lo, hi = region
            except (TypeError, ValueError):
                raise TypeError("region = %r: not a pair (lo, hi)"
                                % (region,)) from None
            assert rank is not None
            lo = _extents("region lo", lo, 0, _ERR_INVALID)
            hi = _extents("region hi", hi, 0, _ERR_INVALID)
            if len(lo) != rank or len(hi) != rank:
                raise InvalidDescriptionError(
                    "region has %d and %d entries, shape %d"
                    % (len(lo), len(hi), rank), _ERR_INVALID)
            region = (lo, hi)
        self._path = path
        self._s = _shardpipe.Stream(
            path, shape, chunks, shards, name, codec, dimension_names,
            index_location, _text("backend", backend), threads, overwrite,
            sink, fill, _flag("write_empty_chunks", write_empty_chunks),
            _flag("durable", durable), max_memory, pairs, group, array,
            **pyr, reopen=reopen, truncate=truncate, **plate,
            storage_order=order, region=region, publish=_publish)
        if _publish is not None:
            return                       # publish(): no stream
        import numpy as np

        self._np = np
        # What the library opened: in mode "a" the store's array (the
        # given fields equal it, or the open was refused), dim 0 the
        # bound of this run.
        shape, name, fill, start_row = self._s.info()
        self._shape = shape
        # The shape of one row of dim 0, as appends give it: in append
        # order, whose dim order[i] is storage dim i (design §3.3).
        inner = list(shape)
        self._adim = 0                   # the append dim's storage dim
        for d, a in enumerate(order or ()):
            inner[a] = shape[d]
            if a == 0:
                self._adim = d
        self._inner = tuple(inner[1:])
        # The append dim's bound (0: grows), wherever storage_order put it.
        self._bound = inner[0]
        self._dtype = np.dtype(name)
        self._fill = fill                # one element of fill, its bytes
        self._row_bytes = self._dtype.itemsize
        for n in self._inner:
            self._row_bytes *= n
        # Bytes of a bounded dim 0, or None when it grows.
        self._cap = self._bound * self._row_bytes if self._bound else None
        self._fields = fields
        self._pad_partial = pad_partial
        self._allow_short = allow_short
        self._start_row = start_row
        # The library is given whole rows only; the bytes of a row not yet
        # complete (append_bytes, skip(nbytes=)) wait here, so that close
        # can leave a partial row out, as the command line does.  Counted
        # from row 0 of the array: a reopened one starts at start_row.
        self._lib = start_row * self._row_bytes
        self._held = bytearray()
        # Python-side state makes overlapping calls unsafe before they
        # reach the extension's own lock: refuse them the same way.
        self._busy = _threading.Lock()
        self._progress: _Progress | None = None
        if progress:
            label = "shardpipe" if path is None else _os.fsdecode(path)
            self._progress = _Progress(label, self._bound, start_row,
                                       self._row_bytes)

    # -------------------------------------------------------- appending

    def _enter(self) -> None:
        if not self._busy.acquire(False):
            raise RuntimeError("the stream is in use by another thread "
                               "(calls on one stream must not run "
                               "concurrently)")

    def _closed_check(self) -> None:
        if self._s.closed:
            raise ClosedError("the stream is closed", _ERR_CLOSED)

    def _shape_words(self) -> str:
        inner = self._inner
        k = "(k, %s)" % ", ".join(str(n) for n in inner) if inner else "(k,)"
        return "%s or %s" % (k, _shape_text(inner))

    def _give(self, buf: _Any, n: int, skip: bool = False) -> None:
        """buf, n bytes ending on a row boundary (or, at close with
        pad_partial, the partial row), to the library; with skip, n bytes
        of fill instead (buf unused).  A BeyondEndError there (not
        expected: the checks here come first) still leaves the count
        right."""
        try:
            if skip:
                self._s.skip(n)
            else:
                self._s.append(buf)
        except BeyondEndError:
            self._lib = self._cap or self._lib
            raise
        self._lib += n
        if self._progress is not None and self._row_bytes:
            self._progress.update(self._lib // self._row_bytes)

    def append(self, a: _Any, meta: dict[str, _Any] | None = None) -> None:
        """Append ``a``, a NumPy array of the stream's dtype holding whole
        rows of dim 0: of shape ``(k, *inner)`` (k rows, k >= 0) or exactly
        ``inner`` (one row), where ``inner = shape[1:]`` of the stream.
        For a stream of shape (0, 64, 64), a (64, 64) frame or a
        (k, 64, 64) stack.  For a rank-1 stream ``inner`` is ``()``: an
        array of shape (k,) is k elements, a 0-d array (or NumPy scalar)
        one; for higher ranks a 0-d array is refused.  An empty (0,
        *inner) array appends nothing.

        Anything else appends nothing and raises: a shape that is neither
        raises ValueError naming both the array's shape and the expected
        ones; another dtype (byte order included) TypeError naming both.
        ``bytes`` and ``bytearray`` carry no shape and raise TypeError
        (raw array bytes go to ``append_bytes()``), and so do lists and
        tuples (``numpy.stack(frames)`` makes one array of them, or
        append each frame) and anything that is no array.  A memoryview
        (or other buffer-protocol object with a format, array.array) is
        taken as the array it describes: its shape and format must match
        as an array's do, and it must be C-contiguous (else ValueError;
        it is not copied).  After ``append_bytes()`` left the stream
        inside a row, any array would straddle two rows: ValueError.

        A C-contiguous array goes to the library as it is, without a copy
        (read-only arrays too); one of the right shape that is not
        (Fortran order, a transposed or strided view) is copied once into
        C order by ``numpy.ascontiguousarray`` first: its logical shape is
        what counts, so a.T appends the transpose.  Past a bounded dim 0,
        the whole array is refused with BeyondEndError before anything is
        appended (the message says how many rows are left); the stream
        stays open.  The GIL is released while the library copies and
        works.  Ctrl-C during a long append closes the stream (what was
        appended so far is a valid store) and raises KeyboardInterrupt.

        ``meta``: a stream opened with ``frame_meta`` takes each frame's
        values with it, a dict from every field to its value (one frame)
        or a sequence of k values (k rows); a key missing or unknown, a
        value of the wrong type (a str or bool for float64, a float for
        int64, anything but a bool for bool), or a count that is not k
        raises TypeError or ValueError naming the field, nothing
        appended.  A stream without fields refuses ``meta``, one with
        them an append without it."""
        arr = self._as_array(a)
        k = arr.shape[0] if arr.ndim == len(self._inner) + 1 else 1
        values = _frame_values(self._fields, meta, k)
        self._enter()
        try:
            if self._held:
                raise ValueError(
                    "append: the stream is %d bytes into row %d of dim 0 "
                    "(of %d bytes), which append_bytes() left partial; an "
                    "array of shape %s would straddle two rows: complete "
                    "the row with append_bytes() first; nothing appended"
                    % (len(self._held), self._lib // self._row_bytes,
                       self._row_bytes, _shape_text(arr.shape)))
            self._closed_check()
            k = arr.shape[0] if arr.ndim == len(self._inner) + 1 else 1
            if self._cap is not None:
                left = (self._cap - self._lib) // self._row_bytes
                if k > left:
                    raise BeyondEndError(
                        "append: %d rows do not fit in dim 0 of size %d: "
                        "%d written, %d left; nothing appended%s"
                        % (k, self._bound, self._bound - left, left,
                           " (a[:%d] fits)" % left if left and
                           arr.ndim > len(self._inner) else ""),
                        _ERR_BEYOND_END)
            if not arr.flags.c_contiguous:
                arr = self._np.ascontiguousarray(arr)
            if values is None:
                self._give(arr, arr.nbytes)
            elif k > 0:
                self._s.append_meta(arr, values)
                self._lib += arr.nbytes
                if self._progress is not None and self._row_bytes:
                    self._progress.update(self._lib // self._row_bytes)
        finally:
            self._busy.release()

    def _as_array(self, a: _Any) -> _NDArray:
        """a as an ndarray of the stream's dtype and of whole rows (not
        copied), or the error saying why not."""
        arr: _NDArray
        np = self._np
        what = type(a).__name__
        if isinstance(a, np.ndarray):
            arr = a
        elif isinstance(a, np.generic):
            arr = np.asarray(a)
        elif isinstance(a, (bytes, bytearray)):
            raise TypeError("append: a %s object has no shape or dtype to "
                            "check; "
                            "pass raw array bytes to append_bytes(), or a "
                            "NumPy array of shape %s" % (what,
                                                        self._shape_words()))
        elif isinstance(a, (list, tuple)):
            raise TypeError("append: a %s is not an array; pass one array "
                            "of shape %s (numpy.stack(frames)), or append "
                            "each frame" % (what, self._shape_words()))
        else:
            try:
                mv = memoryview(a)
            except TypeError:
                raise TypeError("append: a %s is not an array (pass a NumPy "
                                "array of shape %s, or raw bytes to "
                                "append_bytes())"
                                % (what, self._shape_words())) from None
            with mv:
                if not mv.c_contiguous:
                    raise ValueError(
                        "append: the %s is not C-contiguous (row-major); "
                        "pass numpy.ascontiguousarray(a)" % what)
                fmt = mv.format
            try:
                arr = np.asarray(a)
            except (TypeError, ValueError):
                raise TypeError("append: dtype mismatch: the stream holds %s "
                                "(native byte order), the %s has format %r"
                                % (self._dtype.name, what, fmt)) from None
        if arr.dtype != self._dtype:
            hint = ""
            if not isinstance(a, (np.ndarray, np.generic)) and \
                    arr.dtype == np.uint8:
                hint = " (raw array bytes go to append_bytes())"
            raise TypeError("append: dtype mismatch: the stream holds %s "
                            "(native byte order), the %s holds %s%s"
                            % (self._dtype.name, what, arr.dtype, hint))
        inner = self._inner
        if arr.shape != inner and (arr.ndim != len(inner) + 1 or
                                   arr.shape[1:] != inner):
            rows = "rows of dim 0" if self._adim == 0 else \
                "rows of the append dim, stored as dim %d" % self._adim
            raise ValueError("append: the %s has shape %s; the stream of "
                             "shape %s takes %s (%s); nothing appended"
                             % (what, _shape_text(arr.shape),
                                _shape_text(self._shape),
                                self._shape_words(), rows))
        return arr

    def append_bytes(self, buf: _Any) -> None:
        """Append raw array bytes in C order, continuing where the last
        append ended, in spans of any size: whole frames, parts of them,
        several at once.  ``buf`` is any C-contiguous buffer-protocol
        object: bytes, bytearray, memoryview, mmap, a NumPy array (its
        bytes, whatever its shape).  A typed buffer (a NumPy array, a
        memoryview with a format other than "B") of another dtype raises
        TypeError, a non-contiguous one ValueError, both naming it and
        appending nothing.

        The library is given whole rows of dim 0 only, without a copy;
        the bytes of a row not yet complete are copied aside (at most one
        row) until a later ``append_bytes()`` or ``skip()`` completes it.
        They are not in ``stats.bytes_in`` and no ``flush()`` writes them;
        at close they are padded with the fill value when the stream was
        made with ``pad_partial=True``, else left out and ``close()`` raises
        IncompleteError.  Past a bounded dim 0 it takes what fits and raises
        BeyondEndError; the stream stays open.  The GIL is released while
        the library copies and works; Ctrl-C as for ``append()``.  A
        stream with ``frame_meta`` fields refuses it (ValueError): raw
        bytes carry no values; use ``append(frame, meta=...)``."""
        if self._fields:
            raise ValueError("append_bytes: the stream has frame_meta "
                             "fields; append whole frames with "
                             "append(frame, meta={...}); nothing appended")
        np = self._np
        what = type(buf).__name__
        self._enter()
        try:
            self._closed_check()
            try:
                mv = memoryview(buf)
            except TypeError:
                raise TypeError("append_bytes: a %s is not a buffer (pass "
                                "bytes, a bytearray, a memoryview or a NumPy "
                                "array)" % what) from None
            with mv:
                if not mv.c_contiguous:
                    raise ValueError(
                        "append_bytes: the %s is not C-contiguous "
                        "(row-major); pass numpy.ascontiguousarray(a)"
                        % what)
                dt = getattr(buf, "dtype", None)
                if dt is not None or mv.format != "B":
                    # Typed: it must be the stream's dtype, as for
                    # append() (bytes-like "B" buffers are raw bytes).
                    fmt = mv.format
                    if fmt[:1] == "@":
                        fmt = fmt[1:]
                    elif fmt[:1] == "!":
                        fmt = ">" + fmt[1:]
                    try:
                        got = np.dtype(dt if dt is not None else fmt)
                    except TypeError:
                        got = None
                    if got != self._dtype:
                        raise TypeError(
                            "append_bytes: dtype mismatch: the stream holds "
                            "%s (native byte order), the %s holds %s"
                            % (self._dtype.name, what,
                               got if got is not None else mv.format))
                raw = mv if mv.ndim == 1 and mv.format == "B" \
                    else mv.cast("B")
                with raw:
                    self._take(raw)
        finally:
            self._busy.release()

    def _take(self, b: memoryview) -> None:
        """The bytes b ('B' format): whole rows to the library, a partial
        last row into _held; past a bounded end, what fits."""
        row = self._row_bytes
        n = len(b)
        over = 0
        if self._cap is not None:
            room = self._cap - self._lib - len(self._held)
            if n > room:
                over, n = n - room, room
        i = 0
        if self._held:
            need = row - len(self._held)
            if n < need:
                self._held += b[:n]
                n = 0
            else:
                self._give(self._held, len(self._held))
                self._held = bytearray()
                self._give(b[:need], need)
                i = need
        whole = (n - i) // row * row
        if whole:
            self._give(b[i:i + whole], whole)
        if n > i + whole:
            self._held = bytearray(b[i + whole:n])
        if over:
            raise BeyondEndError(
                "%s: dim 0: append reaches past its size %d; the last %d "
                "bytes were not written"
                % (_shardpipe.strerror(_ERR_BEYOND_END), self._bound,
                   over), _ERR_BEYOND_END)

    def skip(self, frames: int | None = None, *,
             nbytes: int | None = None) -> None:
        """Advance the stream by fill value instead of data: a dropped
        frame, a hole.  ``frames``: rows of dim 0 (one index along it),
        refused with ValueError while ``append_bytes()`` has left the
        stream inside a row (the rows would be sheared); or ``nbytes``, a
        byte count (whole elements, from a whole element on), which may
        start or end inside a row, as ``append_bytes()`` may.  Exactly one
        of the two.  Chunks left all fill value are not stored (unless
        ``write_empty_chunks``); readers return the fill value there.
        Past a bounded dim 0 it skips what fits and raises
        BeyondEndError, as ``append_bytes()`` does."""
        if (frames is None) == (nbytes is None):
            raise TypeError("skip: give frames or nbytes, exactly one")
        n = frames if nbytes is None else nbytes
        what = "frames" if nbytes is None else "nbytes"
        if isinstance(n, bool) or not isinstance(n, _numbers.Integral):
            raise TypeError("skip: %s must be an integer, not %r"
                            % (what, n))
        if n < 0:
            raise ValueError("skip: %s must not be negative (%d)"
                             % (what, n))
        total = int(n) * (self._row_bytes if nbytes is None else 1)
        if total > _U64_MAX:
            raise OverflowError("skip: %s = %d: %d bytes, more than "
                                "2^64 - 1" % (what, n, total))
        self._enter()
        try:
            self._closed_check()
            self._skip(total, what == "frames")
        finally:
            self._busy.release()

    def _skip(self, n: int, frames: bool) -> None:
        row, esize = self._row_bytes, self._dtype.itemsize
        held = len(self._held)
        at = self._lib + held
        if frames and held:
            raise ValueError(
                "skip: the stream is %d bytes into row %d of dim 0 (of %d "
                "bytes), which append_bytes() left partial; skipping whole "
                "frames from there would shear the rows: complete the row "
                "first (skip(nbytes=%d) fills it); nothing skipped"
                % (held, self._lib // row, row, row - held))
        if n % esize or at % esize:
            raise InvalidDescriptionError(
                "%s: skip of %d bytes at byte %d: both must be multiples of "
                "the element size %d" % (_shardpipe.strerror(_ERR_INVALID),
                                         n, at, esize), _ERR_INVALID)
        over = 0
        if self._cap is not None and n > self._cap - at:
            over, n = n - (self._cap - at), self._cap - at
        if held:
            need = row - held
            if n < need:
                self._held += self._fill * (n // esize)
                n = 0
            else:
                self._held += self._fill * (need // esize)
                self._give(self._held, row)
                self._held = bytearray()
                n -= need
        whole = n // row * row
        if whole:
            self._give(None, whole, skip=True)
        if n > whole:
            self._held = bytearray(self._fill * ((n - whole) // esize))
        if over:
            raise BeyondEndError(
                "%s: dim 0: skip reaches past its size %d; the last %d "
                "bytes were not skipped"
                % (_shardpipe.strerror(_ERR_BEYOND_END), self._bound,
                   over), _ERR_BEYOND_END)

    def set_attribute(self, key: str, value: _Any) -> None:
        """Set the user attribute ``key`` in zarr.json to ``value``, any
        JSON-serialisable object (a str is a JSON string; to pass JSON
        text, ``json.loads`` it first); a later call replaces it.  It is
        written with the next zarr.json: when the next shard epoch is
        written, at ``flush()`` (to publish at once) or at close.  The key
        ``"ome"`` is reserved.  Raises TypeError or ValueError for a value
        JSON cannot hold (NaN, infinities), InvalidDescriptionError for
        what the library refuses (the bounds: 1 MiB of attributes, 32
        levels of nesting), ClosedError after close."""
        self._s.set_attribute(_attr_key("set_attribute", key),
                              _json_text(key, value))

    def del_attribute(self, key: str) -> None:
        """Remove the user attribute ``key`` (nothing if it is not set),
        with the next zarr.json."""
        self._s.set_attribute(_attr_key("del_attribute", key), None)

    def flush(self) -> None:
        """Write every shard whose chunks are all complete, and
        zarr.json."""
        self._s.flush()

    def close(self) -> None:
        """Write the last, partial shards (padded with the fill value) and
        the final zarr.json.  Closing again does nothing.

        The rules of ``shardpipe write`` for input that ends early: when
        ``append_bytes()`` (or ``skip(nbytes=)``) left the stream inside a
        row of dim 0, that row is padded with the fill value if the stream
        was made with ``pad_partial=True`` (``--pad-partial``), else it is
        left out; when a bounded dim 0 (``shape[0] > 0``) is not full, the
        rows not given read as the fill value.  Either way the stream is
        closed and the store valid, holding every whole row; then, unless
        ``pad_partial=True`` (the partial row) and ``allow_short=True`` (a
        bounded dim 0 left short, ``--allow-short``) allow it, close raises
        IncompleteError saying what was written -- as the command line
        writes the store and exits with status 2.  A failure of the
        library's own (I/O, the sink) is raised instead.  Under ``with``
        the block's end calls close, so IncompleteError comes out of the
        ``with`` statement; when the block is left by an exception, that
        exception passes and the close's is not raised.  A stream closed
        by Ctrl-C or dropped unclosed raises nothing (and pads nothing)."""
        self._enter()
        try:
            if self._s.closed:
                self._s.close()    # a sink's exception not yet raised
                return
            row, why = self._row_bytes, []
            held = len(self._held)
            if held and self._pad_partial:
                # The library fills the rest of the row at close.
                try:
                    self._give(self._held, held)
                except Error:
                    pass           # the stream failed: close says how
                held = 0
            elif held:
                why.append(
                    "the input ends %d bytes into a row of %d bytes (%s); "
                    "%d whole rows were written and the partial row was "
                    "not (pad_partial=True fills it with the fill value)"
                    % (held, row, self._dtype.name, self._lib // row))
            self._held = bytearray()
            done = -(-self._lib // row) * row
            if self._cap is not None and done < self._cap and \
                    not self._allow_short:
                why.append(
                    "the input ended after %d of the %d bytes of shape %s; "
                    "the store keeps that shape, rows %d and after holding "
                    "the fill value (allow_short=True accepts this)"
                    % (self._lib, self._cap, _shape_text(self._shape),
                       done // row))
            self._s.close()
        finally:
            if self._progress is not None:
                # The rows the store holds: a padded partial row counts.
                bar, self._progress = self._progress, None
                bar.finish(-(-self._lib // self._row_bytes)
                           if self._row_bytes else 0)
            self._busy.release()
        if why:
            raise IncompleteError("close: " + "; and ".join(why))

    @property
    def closed(self) -> bool:
        """Whether the stream is closed: by ``close()``, by Ctrl-C during
        an append, or after a failure of the library (the sink's, I/O)."""
        return self._s.closed

    @property
    def stats(self) -> Stats:
        """The stream's counters (a Stats).  After close, the counters as
        they stood when close began: the last, partial shards that close
        writes are not in them."""
        return Stats(*self._s.stats())

    @property
    def backend(self) -> str:
        """The backend the stream runs on (``"cpu"``, ``"opencl"``, ...)."""
        return self._s.backend

    @property
    def path(self) -> str | bytes | None:
        """The store's path (``os.fspath`` of the one given; a group's
        stream: the group's path joined with the array's name), or None
        for a stream writing to a sink."""
        return self._path

    @property
    def start_row(self) -> int:
        """The row of dim 0 that this stream's first append lands on: 0
        for a new array (mode "w"); in mode "a", the rows the store's
        zarr.json advertised when it was reopened, where the appends
        continue."""
        return self._start_row

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
            return
        # An exception is already passing: close, and let a failure to
        # close be its context rather than replace it.
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return "<shardpipe.Stream %r backend=%s%s>" % (
            self._path, self.backend, " closed" if self.closed else "")


# ---------------------------------------------------------------- reading

def publish(path: _Path, rows: int | None = None, **array_kwargs: _Any
            ) -> None:
    """Write the zarr.json of the array ``array_kwargs`` describe (as
    ``Stream`` takes them: shape, chunks, shards, dtype, codec, ...,
    attributes) at the directory (or ``"s3://bucket/prefix"``) ``path``,
    advertising ``rows`` rows of dim 0 (default: a bounded ``shape[0]``;
    needed when dim 0 is unbounded).  Called once, by one process, after every region writer
    covering those rows closed (shardpipe_array_publish, design §30).  A
    zarr.json of the same array is replaced with identical bytes; one of
    another array raises StorageError (code EXISTS) naming the field."""
    shape = array_kwargs.get("shape")
    if rows is None:
        if shape is None or not len(shape) or not shape[0]:
            raise ValueError("publish: rows is needed when dim 0 is "
                             "unbounded (shape[0] 0)")
        rows = shape[0]
    rows = _integer("rows", rows, 0, _U64_MAX, _ERR_INVALID)
    s = Stream.__new__(Stream)
    Stream.__init__(s, path, _publish=rows, **array_kwargs)


def write_region(path: _Path, array_kwargs: dict[str, _Any],
                 lo: _Sequence[int], a: _Any) -> Stats:
    """Write the NumPy array ``a`` as the box of the array ``array_kwargs``
    describe that starts at ``lo`` (its shape the box's; on an unbounded
    dim 0 it runs to the end), through a region writer
    (``Stream(path, region=(lo, hi), **array_kwargs)``; the GIL is
    released while it compresses), and return its Stats.  zarr.json is
    not written: ``publish()`` it once every box is written."""
    import numpy as np

    a = np.asarray(a)
    shape = array_kwargs.get("shape")
    if shape is None:
        raise TypeError("write_region: array_kwargs needs shape")
    lo = tuple(int(v) for v in lo)
    if a.ndim != len(shape) or len(lo) != len(shape):
        raise ValueError("write_region: a block of shape %s and lo %s for "
                         "an array of shape %s"
                         % (_shape_text(a.shape), lo, _shape_text(shape)))
    hi = [lo[d] + a.shape[d] for d in range(a.ndim)]
    if not shape[0]:
        hi[0] = 0
    with Stream(path, region=(lo, hi), **array_kwargs) as s:
        if a.size:
            s.append(a)
        # Every shard of the box written: the counters include them
        # (after close they would stand as close began).
        s.flush()
        stats = s.stats
    return stats


def _group_arrays(path: _Any) -> tuple[str, ...] | None:
    """The arrays of the group at path, or None when it is no group."""
    try:
        g = _shardpipe.Group(path, False, 1)
    except Error:
        return None
    try:
        return g.arrays
    finally:
        g.close()


# What NumPy says of an index it cannot take (its words, so that code
# catching them reads the same).
_BAD_INDEX = ("only integers, slices (`:`), ellipsis (`...`), "
              "numpy.newaxis (`None`) and integer or boolean arrays are "
              "valid indices")


def _is_url(path: str | bytes) -> bool:
    return (path.startswith("s3://") if isinstance(path, str)
            else path.startswith(b"s3://"))


class _Entry(_NamedTuple):
    """One entry of an index, classified: kind is "int", "slice",
    "array" (integers), "mask" (booleans of rank >= 1), "new" (None),
    "bool" (a scalar boolean, which adds a dim as NumPy's does) or
    "ellipsis"; value the entry as NumPy would read it."""

    kind: str
    value: _Any


def _entry(k: _Any, np: _Any) -> _Entry:
    """One entry of an index as NumPy classifies it (numpy's "Indexing on
    ndarrays": Python and NumPy integers and 0-d integer arrays are
    integers; lists, tuples and arrays of integers or booleans are
    advanced indices; a Python or NumPy bool is a 0-d boolean index, not
    the integer 0 or 1)."""
    if k is None:
        return _Entry("new", None)
    if k is Ellipsis:
        return _Entry("ellipsis", None)
    if isinstance(k, slice):
        return _Entry("slice", k)
    if isinstance(k, (bool, np.bool_)):
        return _Entry("bool", bool(k))
    if isinstance(k, (list, tuple)) or (
            not isinstance(k, np.ndarray) and hasattr(k, "__array__")):
        arr = np.asarray(k)              # a ragged list: NumPy's ValueError
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.intp)    # [] is an empty integer index
        if arr.dtype.kind not in "iub":
            raise IndexError(_BAD_INDEX)
        k = arr
    if isinstance(k, np.ndarray):
        if k.dtype.kind == "b":
            return _Entry("bool", bool(k)) if k.ndim == 0 else \
                _Entry("mask", k)
        if k.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer "
                             "(or boolean) type")
        if k.ndim == 0:
            return _Entry("int", int(k))
        return _Entry("array", k)
    try:
        return _Entry("int", _operator.index(k))
    except TypeError:
        raise IndexError(_BAD_INDEX) from None


def _region(key: _Any, shape: tuple[int, ...], np: _Any
            ) -> tuple[list[int], list[int], list[int],
                       tuple[_Any, ...] | None]:
    """The region read for ``key`` on an array of ``shape``: (start,
    count, step, local), where array[key] is region[local], region being
    the array's elements start + k * step, k < count, per dim: a slice's
    own elements (its step made positive, local then reversing a
    negative one), and for the other entries the smallest box holding
    every element they select.  local keeps the key's entries in
    their places (Ellipsis, None and the implicit trailing slices too),
    each moved into the box: so NumPy, applying it, gives exactly what
    it gives on the whole array, the order of the dims of advanced
    indices included.  Out-of-range integers and refused entries raise
    IndexError, as NumPy does.  local is None when the advanced entries
    broadcast to nothing: the result is empty and nothing is read."""
    entries = [_entry(k, np) for k in (key if isinstance(key, tuple)
                                       else (key,))]
    ndim = len(shape)
    used = 0
    for e in entries:
        if e.kind == "mask":
            used += e.value.ndim
        elif e.kind in ("int", "slice", "array"):
            used += 1
    if sum(e.kind == "ellipsis" for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > ndim:
        raise IndexError("too many indices for array: array is "
                         "%d-dimensional, but %d were indexed" % (ndim, used))
    # The advanced entries (integers among them) broadcast together; when
    # they select nothing NumPy checks no integer array's bounds.
    adv: list[tuple[int, ...]] = []
    for e in entries:
        if e.kind == "int":
            adv.append(())
        elif e.kind == "array":
            adv.append(e.value.shape)
        elif e.kind == "mask":
            adv.append((int(np.count_nonzero(e.value)),))
    empty = False
    if any(s != () for s in adv):
        try:
            empty = 0 in np.broadcast_shapes(*adv)
        except ValueError:
            raise IndexError(
                "shape mismatch: indexing arrays could not be broadcast "
                "together with shapes " + " ".join(
                    str(s) for s in adv if s != ())) from None
    start: list[int] = []
    count: list[int] = []
    step_of: list[int] = []
    local: list[_Any] = []
    d = 0
    for e in entries:
        if e.kind in ("new", "bool"):
            local.append(e.value)
        elif e.kind == "ellipsis":
            n = ndim - used
            start += [0] * n
            count += shape[d:d + n]
            d += n
            local.append(Ellipsis)
        elif e.kind == "int":
            n, i = shape[d], e.value
            if not -n <= i < n:
                raise IndexError("index %d is out of bounds for axis %d "
                                 "with size %d" % (i, d, n))
            start.append(i % n)
            count.append(1)
            local.append(0)
            d += 1
        elif e.kind == "slice":
            lo, hi, step = e.value.indices(shape[d])
            m = len(range(lo, hi, step))
            if m == 0:
                start.append(0)
                count.append(0)
                local.append(slice(0, 0))
            elif step > 0:
                start.append(lo)
                count.append(m)
                step_of += [1] * (d - len(step_of)) + [step]
                local.append(slice(None))
            else:
                start.append(lo + (m - 1) * step)
                count.append(m)
                step_of += [1] * (d - len(step_of)) + [-step]
                local.append(slice(None, None, -1))
            d += 1
        elif e.kind == "array":
            n, a = shape[d], e.value
            if not empty:                # else unchecked, as by NumPy
                lo, hi = int(a.min()), int(a.max())
                if lo < -n or hi >= n:
                    bad = lo if lo < -n else hi
                    raise IndexError("index %d is out of bounds for axis %d "
                                     "with size %d" % (bad, d, n))
                a = np.where(a < 0, a + n, a).astype(np.intp)
                first = int(a.min())
                start.append(first)
                count.append(int(a.max()) - first + 1)
                local.append(a - first)
            d += 1
        else:                            # a boolean mask over its dims
            m = e.value
            for j, (got, n) in enumerate(zip(m.shape, shape[d:])):
                if got != n:
                    raise IndexError(
                        "boolean index did not match indexed array along "
                        "axis %d; size of axis is %d but size of "
                        "corresponding boolean axis is %d" % (d + j, n, got))
            if not empty:                # else it selects nothing
                nz = m.nonzero()
                box = []
                for j in range(m.ndim):
                    lo, hi = int(nz[j].min()), int(nz[j].max()) + 1
                    start.append(lo)
                    count.append(hi - lo)
                    box.append(slice(lo, hi))
                local.append(m[tuple(box)])
            d += m.ndim
    if empty:
        return [0] * ndim, [0] * ndim, [1] * ndim, None
    # The dims no entry names: whole, as NumPy's implicit trailing slices.
    start += [0] * (ndim - d)
    count += shape[d:]
    step_of += [1] * (ndim - len(step_of))
    return start, count, step_of, tuple(local)


def _check_out(out: _Any, shape: tuple[int, ...], dtype: _Any,
               np: _Any) -> None:
    """Refuse an ``out`` that is not the array a read would return."""
    if not isinstance(out, np.ndarray):
        raise TypeError("out must be a NumPy array, not %s" %
                        type(out).__name__)
    if out.dtype != dtype:
        raise TypeError("out has dtype %s, the array %s" %
                        (out.dtype, np.dtype(dtype)))
    if out.shape != shape:
        raise ValueError("out has shape %s, the region %s" %
                         (out.shape, shape))
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    if not out.flags.c_contiguous:
        raise ValueError("out is not C-contiguous (a view with steps, or "
                         "Fortran order)")


class Reader:
    """A Zarr v3 array opened for reading by the library (``open()``).

    It reads as a NumPy array would: ``a[key]`` takes every index NumPy
    takes -- integers (negative too), slices with any step (``a[::-1]``,
    ``a[5:1:-2]``), ``...``, ``None`` (``numpy.newaxis``), and integer or
    boolean arrays and lists -- and gives exactly what
    ``numpy.asarray(a)[key]`` gives, through one region read of the
    library: the smallest box holding every element selected is read and
    decoded (every index, CRC32C and decoded size on the way is checked),
    then the key is applied to it by NumPy.  A step or an integer array
    therefore reads the span it covers (``a[::100]`` reads the whole dim).
    An integer out of range raises IndexError, as NumPy's does.

    ``shape``, ``dtype`` (a numpy.dtype), ``ndim``, ``size``, ``nbytes``,
    ``len()``, iteration over dim 0 and ``numpy.asarray(a)`` are NumPy's;
    ``chunks`` is the read chunk (Zarr's inner chunk shape) and ``shards``
    the shard shape, both tuples of elements.  That is what
    ``dask.array.from_array(a, chunks=a.chunks)`` needs.  A Reader
    pickles as its path: unpickling reopens the store (so Dask's process
    and distributed schedulers can ship it) and reads the same data, the
    shape it had when pickled (a store that grew along dim 0 since reads
    the rows it had then; one whose array changed otherwise is refused).
    Reads from several threads at once are safe (the library's reads of
    one Reader take turns)."""

    shape: tuple[int, ...]
    """The array's shape (dim 0 as the store's zarr.json advertised it
    when opened)."""
    chunks: tuple[int, ...]
    """The chunk (Zarr's inner chunk) shape: the unit a reader decodes."""
    shards: tuple[int, ...]
    """The shard shape in elements (the chunk shape for an unsharded
    array)."""
    dtype: _np.dtype[_Any]
    """The element type, a numpy.dtype in native byte order."""
    dimension_names: tuple[str | None, ...]
    """The dims' names from zarr.json, None for an unnamed one."""
    levels: int
    """The OME-NGFF image's levels when opened at its group (this Reader
    reads level 0), else 0."""

    def __init__(self, path: _Path, threads: int = 0):
        import numpy as np

        self._np = np
        self._path: str | bytes = _os.fspath(path)
        if isinstance(threads, bool) or not hasattr(type(threads),
                                                    "__index__"):
            raise TypeError("threads = %r: not an integer" % (threads,))
        self._threads = _operator.index(threads)
        if not 0 <= self._threads <= _shardpipe.MAX_THREADS:
            raise ValueError("threads = %d: not in 0..%d" % (
                self._threads, _shardpipe.MAX_THREADS))
        try:
            self._r = _shardpipe.Reader(self._path)
        except CorruptStoreError:
            # A group's zarr.json is no array's, yet nothing in it is
            # corrupt: say what it is and how to name an array instead.
            arrays = _group_arrays(self._path)
            if arrays is None:
                raise
            where = _os.fsdecode(self._path)
            raise StorageError(
                "%s: is a Zarr group of %d array(s) (%s), not an array; "
                "open one as %s/NAME or use shardpipe.Group"
                % (where, len(arrays), ", ".join(arrays), where),
                _ERR_PATH) from None
        shape, chunks, shards, dtype, names, levels = self._r.info()
        self.shape = shape
        self.chunks = chunks
        self.shards = shards
        self.dtype = np.dtype(dtype)
        self.dimension_names = names
        # An OME-NGFF image opened at its group reads level 0; this many.
        self.levels = levels
        self._r.set_threads(self._threads)

    @property
    def threads(self) -> int:
        """The threads a read decodes on (the caller's among them); 0
        for one per core."""
        return self._threads

    def stats(self) -> dict[str, int]:
        """What this Reader fetched from its store since it was opened:
        ``bytes_read`` (shard indexes and chunks), ``requests`` (reads;
        ranged GETs on S3) and ``chunks_decoded``."""
        b, q, c = self._r.stats()
        return {"bytes_read": b, "requests": q, "chunks_decoded": c}

    @property
    def path(self) -> str | bytes:
        """The path (or ``s3://`` URL) the array was opened at."""
        return self._path

    @property
    def ndim(self) -> int:
        """The number of dims, ``len(shape)``."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements, the product of ``shape``."""
        n = 1
        for x in self.shape:
            n *= x
        return n

    @property
    def nbytes(self) -> int:
        """The bytes of the whole array decoded, ``size * itemsize``."""
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        """The length of dim 0, as for a NumPy array."""
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> _Iterator[_Any]:
        """The rows of dim 0 in turn, each read when reached."""
        for i in range(len(self)):
            yield self[i]

    def read(self, start: _Sequence[int], count: _Sequence[int],
             out: _NDArray | None = None) -> _NDArray:
        """The region [start, start + count) as a NumPy array of shape
        ``count``.  An entry that is not a non-negative integer, or a
        region beyond the shape, raises TypeError or IndexError naming it
        ("start[1] = -2: negative").

        ``out``, a writable C-contiguous NumPy array of exactly that shape
        and the array's dtype, receives the region instead of a new array
        and is returned: a loop reading into one buffer skips allocating
        (and the system zeroing) fresh memory each time.  Any other
        ``out`` raises TypeError or ValueError naming what differs, before
        anything is read."""
        np = self._np
        start = _extents("start", start, 0, None)
        count = _extents("count", count, 0, None)
        if len(start) != self.ndim or len(count) != self.ndim:
            raise IndexError("start and count need %d entries, not %d and "
                             "%d" % (self.ndim, len(start), len(count)))
        for d, n in enumerate(self.shape):
            if start[d] + count[d] > n:
                raise IndexError("start[%d] + count[%d] = %d: beyond "
                                 "shape[%d] = %d" % (d, d, start[d] +
                                                     count[d], d, n))
        if out is None:
            out = np.empty(count, dtype=self.dtype)
        else:
            _check_out(out, tuple(count), self.dtype, np)
        if out.size:
            self._r.read_into(start, count, out)
        return out

    def __getitem__(self, key: _Any) -> _Any:
        """``numpy.asarray(self)[key]`` (a NumPy array, or a NumPy scalar
        when every dim is given an integer), read as one region: see the
        class.  Raises IndexError where NumPy does."""
        np = self._np
        start, count, step, local = _region(key, self.shape, np)
        if local is None:
            # An advanced selection of nothing: NumPy's own empty result,
            # of a stand-in of the shape that holds no memory.
            ghost = np.broadcast_to(np.zeros((), self.dtype), self.shape)
            return ghost[key]
        box: _NDArray = np.empty(count, dtype=self.dtype)
        if box.size:
            # Only the chunks holding the slices' elements are read.
            self._r.read_into(start, count, box, step)
        out = box[local]
        # A step leaves a view of a larger box: keep the elements only.
        if isinstance(out, np.ndarray) and out.base is box and \
                out.size < box.size:
            out = out.copy()
        return out

    def __array__(self, dtype: _Any = None,
                  copy: bool | None = None) -> _NDArray:
        """The whole array, read (``numpy.asarray(a)``, ``numpy.array(a,
        dtype)``); ``dtype`` converts it.  Reading always makes a new
        array, so ``copy=False`` (NumPy 2: never copy) raises ValueError,
        as zarr-python's and h5py's arrays do."""
        if copy is False:
            raise ValueError("a shardpipe.Reader cannot give an array "
                             "without a copy (copy=False): reading the "
                             "store makes a new array; use "
                             "numpy.asarray(a)")
        a: _NDArray = self[...]
        return a if dtype is None else a.astype(dtype, copy=False)

    def __getstate__(self) -> dict[str, _Any]:
        # A relative path is made absolute: a process with another
        # working directory unpickles it to the same store.
        p = self._path
        return {"path": p if _is_url(p) else _os.path.abspath(p),
                "shape": self.shape, "chunks": self.chunks,
                "shards": self.shards, "dtype": self.dtype.str,
                "threads": self._threads}

    def __setstate__(self, state: dict[str, _Any]) -> None:
        self.__init__(state["path"],  # type: ignore[misc]
                      state.get("threads", 0))
        shape = tuple(state["shape"])
        was = (shape[1:], tuple(state["chunks"]), tuple(state["shards"]),
               self._np.dtype(state["dtype"]))
        now = (self.shape[1:], self.chunks, self.shards, self.dtype)
        if was != now or len(self.shape) != len(shape) or \
                (shape and self.shape[0] < shape[0]):
            raise StorageError(
                "%s: the array changed since this Reader was pickled: "
                "shape %s, chunks %s, shards %s, dtype %s then; shape %s, "
                "chunks %s, shards %s, dtype %s now"
                % (_os.fsdecode(self._path), _shape_text(shape),
                   _shape_text(was[1]), _shape_text(was[2]), was[3],
                   _shape_text(self.shape), _shape_text(self.chunks),
                   _shape_text(self.shards), self.dtype), _ERR_PATH)
        # Rows appended since read as the pickled Reader did: not at all.
        self.shape = shape

    def __dask_tokenize__(self) -> tuple[_Any, ...]:
        """Dask's name of the data: the store and the array's layout."""
        return ("shardpipe.Reader", self.__getstate__()["path"],
                self.shape, self.chunks, self.shards, self.dtype.str)

    def to_dask(self, chunks: _Any = None) -> _Any:
        """The array as a dask.array (needs dask), read by this Reader
        (which pickles by path, so the tasks run on dask.distributed
        workers too); ``chunks`` default: the shard shape."""
        import dask.array as da

        if chunks is not None and not isinstance(chunks, (int, str)):
            chunks = tuple(chunks)
            if len(chunks) != len(self.shape):
                raise ValueError("to_dask: chunks = %r has %d entries, the "
                                 "array %d dims" % (chunks, len(chunks),
                                                    len(self.shape)))
            for d, c in enumerate(chunks):
                if isinstance(c, int) and not isinstance(c, bool) and \
                        c < 1 and c != -1:
                    raise ValueError("to_dask: chunks[%d] = %d: below 1 "
                                     "(-1: the whole dim)" % (d, c))
        return da.from_array(self, chunks=self.shards if chunks is None
                             else chunks)

    def check(self) -> None:
        """Check every stored object (index CRCs, bounds, every chunk
        decodes to its size); raises CorruptStoreError naming the shard and
        chunk at fault.  Of an OME-NGFF image, every level, each recomputed
        from the one below it."""
        self._r.check()

    def __repr__(self) -> str:
        return "<shardpipe.Reader %r shape=%s dtype=%s>" % (
            self._path, self.shape, self.dtype)


class _InGroup(_NamedTuple):
    group: "Group"
    name: str


class Group:
    """A Zarr v3 group holding several arrays, each written by its own
    Stream, all of them compressing on one set of worker threads (see
    shardpipe(3), "Groups")::

        with shardpipe.Group("run.zarr", create=True) as g:
            with g.stream("cam0", shape=(0, 2048, 2304), ...) as a, \\
                 g.stream("cam1", shape=(0, 2048, 2304), ...) as b:
                ...                   # append to a and b, from two threads

    ``create``: make a new, empty group at ``path`` (refused when the path
    holds a store or other files); otherwise open the existing group there
    (refused when there is none, or it is an array).  ``threads``: the
    worker threads its streams share, 0 for every core.  Directories only.
    ``arrays``: the arrays the group held when opened, sorted.  Closing the
    group leaves its streams usable.
    """

    def __init__(self, path: _Path, *, create: bool = False,
                 threads: int = 0):
        threads = _integer("threads", threads, 0, _shardpipe.MAX_THREADS,
                           _ERR_INVALID)
        self.path = _os.fspath(path)
        self._g = _shardpipe.Group(self.path, _flag("create", create),
                                   threads)

    @property
    def arrays(self) -> tuple[str, ...]:
        """The names of the arrays the group held when opened, sorted
        (empty once the group is closed)."""
        return self._g.arrays

    def stream(self, name: str, shape: _Sequence[int], chunks: _Sequence[int],
               shards: _Sequence[int], dtype: _Any, **kwargs: _Any) -> Stream:
        """A Stream writing the array ``name`` (1 to 255 of a-z A-Z 0-9 -
        _ ., not starting with . or __) at path/name, as Stream(...) takes
        its arguments but ``path``, ``sink`` and ``threads`` (the group's
        threads replace it).  ``overwrite=True`` replaces that array only;
        ``mode="a"`` is refused (ValueError): continue a group's array
        with ``Stream(path + "/" + name, mode="a")`` after its group
        stream is closed."""
        for k in ("path", "sink", "threads"):
            if k in kwargs:
                raise TypeError("Group.stream() takes no %s" % k)
        # The group and name travel as the path (Stream's private form).
        where = _cast(_Any, _InGroup(self, _text("name", name)))
        return Stream(where, shape, chunks, shards, dtype, **kwargs)

    def close(self) -> None:
        """Release the group; the streams made by ``stream()`` stay
        usable.  Closing again does nothing."""
        self._g.close()

    def __enter__(self) -> "Group":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<shardpipe.Group %s: %d arrays>" % (
            _os.fsdecode(self.path), len(self.arrays))


class _InPlate(_NamedTuple):
    plate: "Plate"
    row: str
    column: str
    field_index: int
    acquisition: int


def _plate_names(arg: str, v: _Any) -> tuple[str, ...]:
    """A list of names (rows, columns, acquisitions) as a tuple of str,
    or an error naming the argument or the entry at fault.  A str is
    refused rather than read as its letters, a set or a generator rather
    than taken in an order nobody chose; a 1-D NumPy array of names (as
    a plate map's column gives) is taken as its list."""
    if getattr(v, "ndim", None) == 1 and hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, (str, bytes)) or not isinstance(v, _abc.Sequence):
        raise TypeError("%s = %r: not a sequence of names (a list of str)"
                        % (arg, v))
    return tuple(_utf8_text("%s[%d]" % (arg, i), x) for i, x in enumerate(v))


def _utf8_text(name: str, v: _Any) -> str:
    """_text, and no lone surrogate (which is not UTF-8)."""
    text = _text(name, v)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidDescriptionError("%s = %r: not valid Unicode (a lone "
                                      "surrogate)" % (name, text),
                                      _ERR_INVALID) from None
    return text


_INT_MAX = (1 << 31) - 1


class Plate:
    """An OME-NGFF 0.5 high-content screening plate: rows and columns of
    wells, each well holding up to ``field_count`` fields of view, each
    field an OME-NGFF image (one level or a pyramid) written by its own
    Stream, all of them compressing on one set of worker threads (see
    shardpipe(3), "Plates")::

        with shardpipe.Plate("screen.zarr", rows=["A", "B"],
                             columns=["1", "2", "3"], field_count=2) as p:
            with p.field("B", "3", 0, shape=(0, 2048, 2048),
                         chunks=(1, 512, 512), shards=(1, 2048, 2048),
                         dtype="uint16", dimension_names=("t", "y", "x"),
                         downsample=("y", "x")) as s:
                for frame in camera:
                    s.append(frame)

    ``create`` (the default): make a new plate at ``path`` (created if
    missing; an empty directory is taken; a path holding a store or other
    files is refused with StorageError) with ``rows`` and ``columns`` (two
    sequences of distinct names of A-Z a-z 0-9, at least one each),
    ``field_count`` fields per well at most (default 1), the plate's
    ``name`` (default "plate") and ``acquisitions``, a sequence of names
    (acquisition i has id i).  ``create=False`` opens the plate at
    ``path`` to write more fields (StorageError when there is none),
    taking no description: passing one raises ValueError.  ``threads``:
    the worker threads its fields share, 0 for every core.  Directories
    only.

    A well is listed by the plate, and a field by its well, as soon as the
    field's stream is opened, so the plate is valid for readers from its
    first field on, whatever the order the fields come in; a well with no
    field written stays out of the plate's wells (ome-zarr shows it
    blank).  Fields may be opened and written from several threads (and
    processes) at once.  A bad argument raises before anything is written:
    TypeError for a wrong type, InvalidDescriptionError (a ValueError)
    naming the value the library refuses.  Closing the plate leaves its
    fields' streams usable.
    """

    def __init__(self, path: _Path, rows: _Sequence[str] | None = None,
                 columns: _Sequence[str] | None = None, *,
                 field_count: int | None = None, name: str | None = None,
                 acquisitions: _Sequence[str] | None = None,
                 threads: int = 0, create: bool = True):
        create = _flag("create", create)
        threads = _integer("threads", threads, 0, _shardpipe.MAX_THREADS,
                           _ERR_INVALID)
        given = [k for k, v in (("rows", rows), ("columns", columns),
                                ("field_count", field_count),
                                ("name", name),
                                ("acquisitions", acquisitions))
                 if v is not None]
        self.path = _os.fspath(path)
        if not create:
            if given:
                raise ValueError(
                    "Plate(create=False) opens the plate at %s as it is, "
                    "with its own description: %s may not be given"
                    % (_os.fsdecode(self.path), ", ".join(given)))
            self._p = _shardpipe.Plate(self.path, threads)
            return
        if rows is None or columns is None:
            raise TypeError("Plate(): a new plate needs rows and columns "
                            "(create=False opens the plate at path)")
        self._p = _shardpipe.Plate(
            self.path, threads, _plate_names("rows", rows),
            _plate_names("columns", columns),
            1 if field_count is None else _integer(
                "field_count", field_count, -_INT_MAX - 1, _INT_MAX,
                _ERR_INVALID),
            None if name is None else _utf8_text("name", name),
            None if acquisitions is None
            else _plate_names("acquisitions", acquisitions))

    def field(self, row: str, column: str, field: int = 0,
              acquisition: int | None = None, *, shape: _Sequence[int],
              chunks: _Sequence[int], shards: _Sequence[int], dtype: _Any,
              **kwargs: _Any) -> Stream:
        """A Stream writing field ``field`` (0 to field_count - 1) of the
        well at ``row`` and ``column``, an OME-NGFF image at
        path/ROW/COLUMN/FIELD: one level, or a pyramid with ``downsample``
        (and ``levels``, ``method``, ...).  ``acquisition``: the id of one
        of the plate's acquisitions, or None.  It takes Stream's arguments
        but ``path``, ``sink``, ``threads`` (the plate's replace them),
        ``mode``, ``overwrite`` (a field is written once) and ``ngff`` (a
        field is always an image), which raise TypeError.

        The well and the field are listed in the plate's metadata before
        this returns.  Refused before anything is written: a row or column
        not in the plate, a field outside 0..field_count - 1 or an
        acquisition the plate lacks (InvalidDescriptionError naming it), a
        field written before or open in another stream (StorageError,
        code 12; a field is written at its first row, so one whose first
        append was refused and whose ``with`` block closed it opens
        again), and whatever Stream
        refuses; ClosedError once the plate is closed."""
        for k in ("path", "sink", "threads", "mode", "overwrite", "ngff"):
            if k in kwargs:
                raise TypeError("Plate.field() takes no %s" % k)
        where = _cast(_Any, _InPlate(
            self, _utf8_text("row", row), _utf8_text("column", column),
            _integer("field", field, 0, _INT_MAX, _ERR_INVALID),
            -1 if acquisition is None else _integer(
                "acquisition", acquisition, 0, _INT_MAX, _ERR_INVALID)))
        return Stream(where, shape, chunks, shards, dtype, **kwargs)

    @property
    def closed(self) -> bool:
        """Whether the plate is closed."""
        return self._p.closed

    def close(self) -> None:
        """Release the plate; the streams made by ``field()`` stay usable.
        Closing again does nothing."""
        self._p.close()

    def __enter__(self) -> "Plate":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<shardpipe.Plate %s%s>" % (
            _os.fsdecode(self.path), " closed" if self.closed else "")


def open(path: _Path, threads: int = 0) -> Reader:  # noqa: A001
    """Open the Zarr v3 array at ``path`` (a directory or an
    ``"s3://bucket/prefix"`` URL) for reading (any store whose codecs
    shardpipe knows, written by shardpipe or not).  At an OME-NGFF image's
    group, its level 0 (``Reader.levels`` says how many there are);
    ``path + "/1"`` is level 1 of one shardpipe wrote.  ``threads``: the
    threads each read decodes on, 0 (the default) for one per core."""
    return Reader(path, threads)


# ---------------------------------------------------------------- backends

class BackendInfo(_NamedTuple):
    """One backend as ``shardpipe backends`` lists it."""

    name: str
    """``"cpu"``, ``"reference"``, ``"opencl"`` or ``"cuda"``: what
    ``Stream(backend=...)`` takes."""
    usable: bool
    """Whether it can run here (its plugin loads, a device is there)."""
    gpu: bool
    """Whether it runs on a GPU."""
    detail: str
    """The device when usable, else why not."""


def backends() -> list[BackendInfo]:
    """Every backend this library knows, usable here or not."""
    return [BackendInfo(*b) for b in _shardpipe.backends()]
