"""Parallelism applied to a plain mechanism from outside (torchtitan style).

The mechanisms know nothing about FSDP: ``parallelize_mechanism`` shards each entry of
``mechanism.blocks`` with FSDP2 (``torch.distributed.fsdp.fully_shard``), then the root (the
embedding, final norm and head), exactly as torchtitan's ``parallelize_*`` functions do.
``TBPTTModule.configure_model`` calls it under Lightning's ``ModelParallelStrategy``.
``wrap_blocks_fsdp1`` does the same per-block wrapping for Lightning's ``FSDPStrategy`` (FSDP1,
offered for CUDA in ``configs/fsdp_cuda.yaml``).
"""

from __future__ import annotations

import torch


def _blocks(mechanism: torch.nn.Module) -> list[torch.nn.Module]:
    blocks = getattr(mechanism, "blocks", None)
    return list(blocks) if blocks is not None else []


def parallelize_mechanism(
    mechanism: torch.nn.Module,
    mesh,
    reshard_after_forward: bool = True,
    mp_policy=None,
) -> torch.nn.Module:
    """Shard ``mechanism`` in place with FSDP2 over ``mesh``: every block, then the root.

    Args:
        mechanism: a ContextMechanism ``nn.Module``; its layers, if any, in ``mechanism.blocks``
            (an ``nn.ModuleList``). A mechanism without ``blocks`` is sharded as one unit; one
            without parameters (the Oracle) is left alone.
        mesh: a 1-D ``DeviceMesh`` over the data-parallel ranks (e.g.
            ``LightningModule.device_mesh["data_parallel"]``).
        reshard_after_forward: free the gathered parameters after each block's forward (ZeRO-3)
            or keep them until backward (ZeRO-2); passed to ``fully_shard``.
        mp_policy: an optional ``torch.distributed.fsdp.MixedPrecisionPolicy``.

    Returns:
        the same module object, now an FSDP module (its parameters are ``DTensor`` shards).
        Calling it again is a no-op.
    """
    from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard

    if isinstance(mechanism, FSDPModule) or not any(True for _ in mechanism.parameters()):
        return mechanism
    kwargs = {"mesh": mesh, "reshard_after_forward": reshard_after_forward}
    kwargs["mp_policy"] = mp_policy if mp_policy is not None else MixedPrecisionPolicy()
    for block in _blocks(mechanism):
        fully_shard(block, **kwargs)
    fully_shard(mechanism, **kwargs)
    return mechanism


def wrap_blocks_fsdp1(mechanism: torch.nn.Module) -> torch.nn.Module:
    """Wrap each entry of ``mechanism.blocks`` with FSDP1 (``torch.distributed.fsdp.wrap.wrap``).

    Must run inside Lightning's ``FSDPStrategy`` model-sharding context (``configure_model``),
    which supplies the wrapper class and its arguments; Lightning then wraps the root. Returns
    the same module; blocks already wrapped are left as they are.
    """
    from torch.distributed.fsdp import FullyShardedDataParallel
    from torch.distributed.fsdp.wrap import wrap

    blocks = getattr(mechanism, "blocks", None)
    if blocks is None:
        return mechanism
    for i, block in enumerate(blocks):
        if not isinstance(block, FullyShardedDataParallel):
            blocks[i] = wrap(block)
    return mechanism


_EXIT_HOOK_REGISTERED = False


def destroy_process_group_at_exit() -> None:
    """Destroy the default process group when the interpreter exits, for every backend.

    Lightning registers this teardown only for NCCL. Without it, a gloo (CPU) run can abort at
    interpreter shutdown ("terminate called without an active exception", exit status 134) after
    training finished: gloo's worker threads still hold tensors while Python is being torn down
    (pytorch/pytorch#190489). The hook runs while the interpreter is still whole, does nothing if
    the group is already gone, and is registered at most once per process.
    """
    global _EXIT_HOOK_REGISTERED
    if _EXIT_HOOK_REGISTERED or not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return
    import atexit

    def _destroy() -> None:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()

    atexit.register(_destroy)
    _EXIT_HOOK_REGISTERED = True
