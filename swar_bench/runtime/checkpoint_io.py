"""The one way swar_bench reads and writes checkpoints: weights only, written beside the destination.

A checkpoint is a pickle, and unpickling may run code named in the file (a ``__reduce__``
payload). Every checkpoint swar_bench reads, local or remote (``http://``, ``https://``,
``file://``, any fsspec URL), goes through :func:`load_checkpoint`, which reads it with
``torch.load(weights_only=True)`` (PyTorch, "Serialization semantics", weights-only unpickler:
tensors, primitive types, dicts, lists, tuples and the globals registered with
``torch.serialization.add_safe_globals``) and refuses anything else in one line; the payload is
never run. Lightning reads checkpoints through its strategy's ``CheckpointIO`` and loads remote
ones with ``weights_only=False`` (``lightning.fabric.utilities.cloud_io._load``):
:class:`SafeCheckpointIO` replaces it in the CLI's Trainer (``swar_bench.lightning_cli``), so
``--ckpt_path`` of any spelling, ``last`` and ``hpc`` included, is read weights-only.

Writing: Lightning's ``TorchCheckpointIO`` writes through an fsspec transaction, which puts a
local file in ``$TMPDIR`` and moves it over the destination, a copy when ``$TMPDIR`` is another
file system (a full disk leaves a half-written checkpoint; a kill during the copy destroys the
previous one). :class:`SafeCheckpointIO` writes a local checkpoint into a temporary file beside
the destination, flushed to disk, then renamed onto it (``swar_bench.utils.files.atomic_write``): a
checkpoint file is the old one or the new one, never a part.
"""

from __future__ import annotations

import io
import os
import pickle
from typing import Any

from lightning.fabric.plugins.io.torch_io import TorchCheckpointIO

__all__ = ["CheckpointRefusedError", "SafeCheckpointIO", "is_remote", "load_checkpoint", "refusal_reason"]


class CheckpointRefusedError(ValueError):
    """A checkpoint that ``torch.load(weights_only=True)`` will not read: it holds objects other
    than tensors and plain values (a pickled payload), or it is not a pickle at all. The message is
    one line naming the path and the reason (also kept as ``path`` and ``reason``)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"{path}: refused: not loadable with torch.load(weights_only=True) ({reason}); expected a checkpoint of "
            "tensors and plain values as swar-bench fit writes"
        )
        self.path, self.reason = path, reason


def is_remote(path: str | os.PathLike) -> bool:
    """True for a URL (``scheme://...``: ``http://``, ``s3://``, ``file://``), False for a path."""
    return "://" in os.fspath(path)


def refusal_reason(err: BaseException) -> str:
    """The reason in torch's weights-only error, in a few words and without its advice to load
    with ``weights_only=False``: ``unsupported global io.open`` (a class or function the file
    would call), ``unsupported pickle operand 149`` (not a torch pickle), else the first sentence
    after ``WeightsUnpickler error:``, else the exception's type name."""
    import re

    text = str(err)
    found = re.search(r"GLOBAL ([\w.]+)", text)
    if found:
        return f"unsupported global {found.group(1).rstrip('.')}"
    found = re.search(r"Unsupported operand (\d+)", text)
    if found:
        return f"unsupported pickle operand {found.group(1)}"
    found = re.search(r"WeightsUnpickler error:\s*([^\n]+?)(?:\.\s|\n|$)", text)
    return found.group(1).strip() if found and found.group(1).strip() else type(err).__name__


def _read_bytes(url: str) -> bytes:
    """The bytes at ``url`` through fsspec (``http(s)://`` needs aiohttp, as Lightning's own
    remote loading does). Raises FileNotFoundError (a missing file, HTTP 404) or OSError."""
    import fsspec

    with fsspec.open(url, "rb") as handle:
        return handle.read()


def load_checkpoint(path: str | os.PathLike, map_location: Any = "cpu", *, mmap: bool = False) -> Any:
    """Read the checkpoint at ``path`` (a local path, or a URL read through fsspec) with
    ``torch.load(weights_only=True)``.

    Args:
        path: a local file (relative, absolute, with spaces) or a URL (``http://host/x.ckpt``,
            ``file:///abs/x.ckpt``, ``s3://...``).
        map_location: as ``torch.load``'s (default ``"cpu"``: tensors on the CPU).
        mmap: memory-map a local file (``torch.load(mmap=True)``: only the tensors read are paged
            in; zip-format checkpoints only). Ignored for URLs, which are read whole.

    Returns:
        The unpickled object (a Lightning checkpoint is a ``dict`` with ``state_dict``).

    Raises:
        CheckpointRefusedError: the file holds anything the weights-only unpickler refuses (a
            ``__reduce__`` payload, an arbitrary class) or is not a pickle; the payload is not run.
        FileNotFoundError / OSError: the file or URL cannot be read.
        RuntimeError: torch cannot read the file (e.g. a truncated zip archive).
    """
    import torch

    text = os.fspath(path)
    try:
        if is_remote(text):
            return torch.load(io.BytesIO(_read_bytes(text)), map_location=map_location, weights_only=True)
        return torch.load(text, map_location=map_location, weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as err:
        raise CheckpointRefusedError(text, refusal_reason(err)) from None


class SafeCheckpointIO(TorchCheckpointIO):
    """Lightning's ``TorchCheckpointIO`` reading every checkpoint weights-only
    (:func:`load_checkpoint`, whatever ``weights_only`` Lightning asks for) and writing a local
    checkpoint atomically beside its destination (temporary file in the same folder, fsync,
    ``os.replace``). Remote destinations are written by Lightning's own code.

    Raises (``load_checkpoint``): CheckpointRefusedError as :func:`load_checkpoint`;
    FileNotFoundError when ``path`` does not exist. (``save_checkpoint``): OSError naming
    ``path`` when the folder cannot be written (a full disk: ``errno.ENOSPC``); the previous file
    at ``path`` is then left as it was.
    """

    def load_checkpoint(self, path: Any, map_location: Any = None, weights_only: bool | None = None) -> dict[str, Any]:
        text = os.fspath(path)
        if not is_remote(text) and not os.path.exists(text):
            raise FileNotFoundError(f"Checkpoint file not found: {text}")
        return load_checkpoint(text, map_location=map_location if map_location is not None else "cpu")

    def save_checkpoint(self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None) -> None:
        text = os.fspath(path)
        if is_remote(text) and not text.startswith("file://"):
            super().save_checkpoint(checkpoint, path, storage_options=storage_options)
            return
        if storage_options is not None:
            raise TypeError(f"SafeCheckpointIO.save_checkpoint: storage_options are not supported, got {storage_options!r}")
        import torch

        from swar_bench.utils.files import atomic_write

        atomic_write(text.removeprefix("file://"), lambda handle: torch.save(checkpoint, handle), binary=True)
