"""`rg.save` / `rg.load`: checkpoints that never run code when loaded.

The file is a zip archive of `.npy` arrays (NumPy's format, so `np.load(path)`
reads the arrays too) plus one JSON entry, `__retrograd__.json`, describing
the structure: nested dicts (str or int keys), lists, tuples, Python numbers,
strings, None, NumPy arrays and Tensors. There is no pickle anywhere: the
loader reads only JSON and raw array bytes, checks every array's declared
size against the bytes stored (and the zip CRCs), and refuses object dtypes.
Entries are stored uncompressed, and the loader refuses compressed entries
and oversized metadata before reading them (a few hundred kilobytes of
deflated JSON could otherwise inflate to gigabytes). A truncated, corrupted or
foreign file raises `CheckpointError` naming the path and the problem.
"""

from __future__ import annotations

import errno
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import devices
from .tensor import Tensor

__all__ = ["save", "load", "CheckpointError", "safe_globals", "add_safe_globals",
           "get_safe_globals", "clear_safe_globals"]

_META = "__retrograd__.json"
_FORMAT = "retrograd-checkpoint"
_VERSION = 1
_KINDS = "biufc"  # bool, signed and unsigned int, float, complex: plain bytes only
_MAX_DEPTH = 64
_MAX_META = 64 << 20  # bytes of JSON structure: far above any real state dict


class CheckpointError(ValueError):
    """The file is not a readable retrograd checkpoint (or the object cannot be saved)."""


# PyTorch's allowlist for its pickle-based weights-only loader. retrograd's loader never
# unpickles, so the list changes nothing; it is kept so scripts that set it run unchanged.
_SAFE_GLOBALS: list = []


def add_safe_globals(safe_globals: list) -> None:
    """Record classes and functions as allowed in checkpoints (no effect: nothing is
    unpickled). Like `torch.serialization.add_safe_globals`."""
    _SAFE_GLOBALS.extend(safe_globals)


def get_safe_globals() -> list:
    """The recorded allowlist. Like `torch.serialization.get_safe_globals`."""
    return list(_SAFE_GLOBALS)


def clear_safe_globals() -> None:
    """Empty the recorded allowlist. Like `torch.serialization.clear_safe_globals`."""
    _SAFE_GLOBALS.clear()


class safe_globals:
    """Context manager adding to the allowlist for its body. Like
    `torch.serialization.safe_globals`."""

    def __init__(self, safe_globals: list) -> None:
        self.safe_globals = list(safe_globals)

    def __enter__(self) -> None:
        self._saved = list(_SAFE_GLOBALS)
        _SAFE_GLOBALS.extend(self.safe_globals)

    def __exit__(self, *exc) -> None:
        _SAFE_GLOBALS[:] = self._saved


# ---------------------------------------------------------------- save

class _Encoder:
    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []

    def _array(self, arr: np.ndarray, where: str) -> str:
        if arr.dtype.kind not in _KINDS:
            raise CheckpointError(f"cannot save an array of dtype {arr.dtype} at {where}: only "
                                  "bool, integer, float and complex arrays are stored")
        name = f"a{len(self.arrays)}.npy"
        self.arrays.append(arr)
        return name

    def encode(self, obj: Any, where: str = "<root>", depth: int = 0):
        if depth > _MAX_DEPTH:
            raise CheckpointError(f"object nested more than {_MAX_DEPTH} levels deep at {where}")
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, float)) and not isinstance(obj, np.generic):
            return obj
        if isinstance(obj, Tensor):  # device: copied to the host
            name = self._array(devices.host(obj.data), where)
            if type(obj).__name__ == "Parameter":  # nn.Parameter, without importing nn
                return {"parameter": [name, bool(obj.requires_grad)]}
            if obj.requires_grad and obj.is_leaf:  # loads requiring grad, as torch's
                return {"tensor_grad": name}
            return {"tensor": name}
        if isinstance(obj, np.ndarray):
            return {"ndarray": self._array(obj, where)}
        if isinstance(obj, np.generic):
            return {"scalar": self._array(np.asarray(obj), where)}
        if isinstance(obj, Mapping):
            items = []
            for k, v in obj.items():
                if isinstance(k, bool) or not isinstance(k, (str, int)):
                    raise CheckpointError(f"cannot save a dict key of type {type(k).__name__} "
                                          f"at {where}: keys must be str or int")
                items.append([k, self.encode(v, f"{where}[{k!r}]", depth + 1)])
            return {"dict": items}
        if isinstance(obj, (list, tuple)):
            tag = "list" if isinstance(obj, list) else "tuple"
            return {tag: [self.encode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj)]}
        hint = (" (a whole module or optimizer would need pickle: save its state_dict() and "
                "load it into a new instance)") if hasattr(obj, "state_dict") else ""
        raise CheckpointError(f"cannot save an object of type {type(obj).__name__} at {where}: "
                              "checkpoints hold tensors, arrays, numbers, strings, None and "
                              f"dicts, lists and tuples of them{hint}")


def _write_zip(fileobj, tree, arrays) -> None:
    meta = json.dumps({"format": _FORMAT, "version": _VERSION, "tree": tree}).encode()
    if len(meta) > _MAX_META:
        raise CheckpointError(f"the object's structure takes {len(meta)} bytes of metadata, "
                              f"more than the {_MAX_META} that rg.load accepts")
    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(_entry(_META), meta)
        for k, arr in enumerate(arrays):
            with zf.open(_entry(f"a{k}.npy"), "w", force_zip64=arr.nbytes > (1 << 30)) as f:
                np.lib.format.write_array(f, np.asarray(arr), allow_pickle=False)


def _entry(name: str) -> zipfile.ZipInfo:
    """A zip entry with a fixed date, so equal content gives byte-identical files."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    return info


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def save(obj: Any, path=None, pickle_module=None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False,
         *, f=None) -> None:
    """Write `obj` (e.g. a `state_dict()`) to exactly `path` (no suffix is added).

    The file is written to a temporary name beside `path` and renamed, so an
    interrupted save never leaves a half-written checkpoint. `path` may also be
    a writable binary file object. PyTorch's pickle arguments are accepted for its
    call spellings (`f=` names the file, as there); a `pickle_module` is refused, as
    nothing here is pickled.
    """
    path = _the_file("save", path, f)
    _no_pickle("save", pickle_module)
    enc = _Encoder()
    tree = enc.encode(obj)
    if hasattr(path, "write"):
        _write_zip(path, tree, enc.arrays)
        return
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        if os.path.exists(folder):
            raise NotADirectoryError(errno.ENOTDIR, f"rg.save: cannot write {path!r}: "
                                     f"{folder!r} is not a folder", path)
        raise FileNotFoundError(errno.ENOENT, f"rg.save: cannot write {path!r}: the folder "
                                f"{folder!r} does not exist", path)
    fd, tmp = tempfile.mkstemp(prefix=".rg-save-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            _write_zip(f, tree, enc.arrays)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes the file private; use the usual mode
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


# ---------------------------------------------------------------- load

def _fail(where: str, why: str) -> CheckpointError:
    return CheckpointError(f"{where}: {why}")


def _check_stored(info: zipfile.ZipInfo, where: str, limit: int | None = None) -> None:
    """Refuse an entry rg.save would not write, before reading a byte of it.

    rg.save stores entries uncompressed, so an entry's size is bounded by the
    file's; a compressed entry could inflate a small file into gigabytes.
    """
    if info.compress_type != zipfile.ZIP_STORED:
        raise _fail(where, f"entry {info.filename} is compressed (zip method "
                    f"{info.compress_type}); rg.save stores entries uncompressed and rg.load "
                    "refuses compressed ones, which could inflate to any size")
    if info.file_size != info.compress_size:
        raise _fail(where, f"entry {info.filename} declares {info.file_size} bytes but stores "
                    f"{info.compress_size}")
    if limit is not None and info.file_size > limit:
        raise _fail(where, f"entry {info.filename} holds {info.file_size} bytes, more than the "
                    f"{limit} allowed for checkpoint metadata")


def _read_npy(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> np.ndarray:
    """One `.npy` entry, read as raw bytes after checking its header (never unpickled)."""
    _check_stored(info, where)
    with zf.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise _fail(where, f"entry {info.filename} has unsupported .npy version {version}")
        if dtype.hasobject or dtype.kind not in _KINDS:
            raise _fail(where, f"entry {info.filename} has dtype {dtype}; refusing anything but "
                        "plain numeric arrays (object arrays would need pickle)")
        count = 1
        for s in shape:
            count *= int(s)
        nbytes = count * dtype.itemsize
        header = f.tell() if f.seekable() else None
        if header is not None and header + nbytes != info.file_size:
            raise _fail(where, f"entry {info.filename} declares {nbytes} bytes of data for shape "
                        f"{shape} but holds {info.file_size - header}")
        raw = f.read(nbytes + 1)
    if len(raw) != nbytes:
        raise _fail(where, f"entry {info.filename} is truncated ({len(raw)} of {nbytes} bytes)")
    arr = np.frombuffer(raw, dtype=dtype, count=count)
    return arr.reshape(shape, order="F" if fortran else "C").copy()


class _Decoder:
    def __init__(self, zf: zipfile.ZipFile, where: str) -> None:
        self.zf, self.where = zf, where
        self.infos = {i.filename: i for i in zf.infolist()}
        self.used: set[str] = set()

    def _array(self, name) -> np.ndarray:
        if not isinstance(name, str) or name not in self.infos or name == _META:
            raise _fail(self.where, f"the structure refers to a missing array entry {name!r}")
        if name in self.used:
            raise _fail(self.where, f"array entry {name!r} is referenced twice")
        self.used.add(name)
        return _read_npy(self.zf, self.infos[name], self.where)

    def decode(self, node, depth: int = 0):
        if depth > _MAX_DEPTH:
            raise _fail(self.where, f"structure nested more than {_MAX_DEPTH} levels deep")
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or len(node) != 1:
            raise _fail(self.where, f"malformed structure node {str(node)[:80]!r}")
        (tag, value), = node.items()
        if tag == "tensor":
            return Tensor._wrap(self._array(value))
        if tag == "tensor_grad":
            return Tensor._wrap(self._array(value)).requires_grad_()
        if tag == "parameter":
            if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], bool)):
                raise _fail(self.where, f"malformed parameter entry {str(value)[:80]!r}")
            from .nn.module import Parameter  # nn imports this module
            return Parameter(self._array(value[0]), requires_grad=value[1])
        if tag == "ndarray":
            return self._array(value)
        if tag == "scalar":
            arr = self._array(value)
            if arr.shape != ():
                raise _fail(self.where, f"scalar entry {value!r} has shape {arr.shape}")
            return arr[()]
        if tag in ("list", "tuple") and isinstance(value, list):
            items = [self.decode(v, depth + 1) for v in value]
            return items if tag == "list" else tuple(items)
        if tag == "dict" and isinstance(value, list):
            out = {}
            for pair in value:
                if not (isinstance(pair, list) and len(pair) == 2
                        and isinstance(pair[0], (str, int)) and not isinstance(pair[0], bool)):
                    raise _fail(self.where, f"malformed dict item {str(pair)[:80]!r}")
                out[pair[0]] = self.decode(pair[1], depth + 1)
            return out
        raise _fail(self.where, f"unknown structure tag {tag!r}")


def _sniff(head: bytes, where: str) -> None:
    """Refuse non-zip input early, with a useful message."""
    if head[:4] == b"PK\x03\x04":
        return
    if head[:1] == b"\x80":
        raise _fail(where, "this is a Python pickle, not a retrograd checkpoint; retrograd never "
                    "unpickles because unpickling can run arbitrary code")
    if head[:6] == b"\x93NUMPY":
        raise _fail(where, "this is a single .npy array, not a retrograd checkpoint "
                    "(load it with numpy.load)")
    if not head:
        raise _fail(where, "the file is empty")
    raise _fail(where, "not a retrograd checkpoint (not a zip archive; the file may be "
                "truncated, corrupted or of another format, and is never unpickled)")


def _no_pickle(fn: str, pickle_module) -> None:
    if pickle_module is not None:
        raise TypeError(f"rg.{fn}(): pickle_module is not supported: retrograd checkpoints hold "
                        "no pickle (only JSON and raw array bytes)")


def _the_file(fn: str, path, f):
    """The file a call names, positionally or as PyTorch's `f=`."""
    if path is None and f is None:
        raise TypeError(f"rg.{fn}() missing 1 required argument: 'f' (the file)")
    if path is not None and f is not None:
        raise TypeError(f"rg.{fn}() got the file twice (positionally and as f=)")
    return f if path is None else path


def load(path=None, map_location=None, pickle_module=None, *,
         weights_only: bool | None = None, mmap: bool | None = None, f=None,
         **pickle_load_args) -> Any:
    """Read a checkpoint written by `rg.save`; arrays saved as Tensors come back as Tensors,
    on the host or, with `map_location` ("cpu", "cuda:0"), on that device.

    PyTorch's `weights_only` and `mmap` are accepted: a retrograd checkpoint only
    ever holds data (weights_only=True is what every load does) and is read whole.

    Never executes code from the file. Raises `CheckpointError` (a ValueError)
    for anything that is not an intact retrograd checkpoint, and the usual
    `FileNotFoundError`/`PermissionError` when the file cannot be opened.
    """
    path = _the_file("load", path, f)
    _no_pickle("load", pickle_module)
    if pickle_load_args:
        raise TypeError(f"rg.load(): unexpected keyword argument {next(iter(pickle_load_args))!r}"
                        " (pickle arguments do not apply: nothing is unpickled)")
    if hasattr(path, "read"):
        data = path.read()
        where = getattr(path, "name", "<file object>")
    else:
        where = os.fspath(path)
        with open(where, "rb") as f:
            data = f.read()
    where = str(where)
    _sniff(data[:8], where)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = set(zf.namelist())
            if _META not in names:
                hint = " (it looks like a PyTorch file, which holds a pickle)" if any(
                    n.endswith(".pkl") for n in names) else ""
                raise _fail(where, f"not a retrograd checkpoint: no {_META} entry{hint}")
            info = zf.getinfo(_META)
            _check_stored(info, where, _MAX_META)
            meta_bytes = zf.read(info)
            meta = json.loads(meta_bytes.decode("utf-8"))
            if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
                raise _fail(where, "not a retrograd checkpoint (wrong format marker)")
            if meta.get("version") != _VERSION:
                raise _fail(where, f"checkpoint format version {meta.get('version')!r} is not "
                            f"supported (this retrograd reads version {_VERSION})")
            if "tree" not in meta:
                raise _fail(where, "checkpoint has no structure entry")
            dec = _Decoder(zf, where)
            obj = dec.decode(meta["tree"])
            extra = names - dec.used - {_META}
            if extra:
                raise _fail(where, f"unexpected entries {sorted(extra)[:5]} in the archive")
    except CheckpointError:
        raise
    except zipfile.BadZipFile as e:
        raise _fail(where, f"truncated or corrupted checkpoint ({e})") from None
    except (ValueError, KeyError, EOFError, OSError, RecursionError, OverflowError,
            NotImplementedError, TypeError, UnicodeDecodeError, MemoryError) as e:
        raise _fail(where, f"corrupted checkpoint ({type(e).__name__}: {e})") from None
    except Exception as e:  # noqa: BLE001 - zlib.error, struct.error and the like
        raise _fail(where, f"corrupted checkpoint ({type(e).__name__}: {e})") from None
    if map_location is not None:
        obj = _mapped(obj, _mover(map_location))
    return obj


def _moved(t: Tensor, target) -> Tensor:
    return t if t.device == target else Tensor._wrap(devices.to(t.data, target))


def _mover(map_location) -> Callable[[Tensor], Tensor]:
    """What `map_location` does to each loaded tensor, in PyTorch's three forms: a device
    (or its name) moves every tensor there; a dict maps a location to another ("cuda:0" to
    "cpu"); a function `f(storage, location)` returns the tensor it is given, moved or not,
    or None to keep it where it is (`lambda storage, loc: storage`, as older scripts
    write). Loaded tensors are on the host, so their location is "cpu"."""
    if isinstance(map_location, dict):
        table = {str(devices.device(k)): devices.device(v) for k, v in map_location.items()}

        def by_table(t: Tensor) -> Tensor:
            target = table.get(str(t.device))
            return t if target is None else _moved(t, target)
        return by_table
    if callable(map_location) and not isinstance(map_location, (str, devices.device)):
        def by_function(t: Tensor) -> Tensor:
            out = map_location(t, str(t.device))
            if out is None:
                return t
            if not isinstance(out, Tensor):
                raise TypeError(f"rg.load(): map_location returned {type(out).__name__}; it "
                                "must return the storage it is given (a Tensor, moved or "
                                "not) or None")
            return out
        return by_function
    target = devices.device(map_location)
    return lambda t: _moved(t, target)


def _mapped(obj, move: Callable[[Tensor], Tensor]):
    """`obj` with every Tensor in it passed through `move`."""
    if isinstance(obj, Tensor):
        return move(obj)
    if isinstance(obj, dict):
        return type(obj)((k, _mapped(v, move)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_mapped(v, move) for v in obj)
    return obj

