"""Does a mechanism fit the task's data: its vocabulary holds the task's tokens, and the rules a
mechanism reads (``task_params``, e.g. the Oracle's) are the data's.

Checked by ``TBPTTModule.setup`` and the CLI before a run starts, and by the conformance check's
``task fit`` row (``swar_bench.mechanisms.conformance``). It reads the mechanism and the data's
parameters by attribute only, so it depends on neither the module nor the datamodules.
"""

from __future__ import annotations

import torch


def check_task_fits(mechanism: torch.nn.Module, params=None, mqar=None) -> None:
    """Raise ValueError (one line) when ``mechanism`` cannot be run on the task's data: passkey_swar
    generated with ``params`` (the task's defaults when None), or MQAR when ``mqar`` (a
    ``swar_bench.datamodules.mqar.MQARData``) is given:

    - ``mechanism.vocab_size`` is smaller than the task's vocabulary (passkey_swar: 40 tokens for
      the release's parameters, 8 specials + keys + values, docs/TASK.md, "Vocabulary"; MQAR: its
      ``vocab_size``); a larger vocabulary is allowed (the extra logits are never targets);
    - a mechanism that reads the task's rules (``task_params``, e.g. the Oracle) was built with a
      window ``w``, ``n_keys`` or ``n_values`` other than the data's, or is given MQAR data.
    """
    if mqar is not None:
        have = int(getattr(mechanism, "vocab_size", mqar.vocab_size))
        if have < mqar.vocab_size:
            raise ValueError(
                f"vocab_size={have} of {type(mechanism).__name__} is too small for MQAR; expected >= "
                f"{mqar.vocab_size} (--data.mqar.vocab_size)"
            )
        if getattr(mechanism, "task_params", None) is not None:
            raise ValueError(
                f"{type(mechanism).__name__} reads passkey_swar's rules; expected a learned mechanism for --data.task=mqar"
            )
        return
    from swar_bench.tasks.passkey_swar import PasskeySwarParams, vocab

    params = params or PasskeySwarParams()
    need = vocab(params).size
    have = int(getattr(mechanism, "vocab_size", need))
    if have < need:
        raise ValueError(
            f"vocab_size={have} of {type(mechanism).__name__} is too small for passkey_swar; expected >= {need} "
            f"(8 specials + n_keys + n_values)"
        )
    rules = getattr(mechanism, "task_params", None)
    if rules is not None:
        differ = [f for f in ("w", "n_keys", "n_values") if getattr(rules, f) != getattr(params, f)]
        if differ:
            built = ", ".join(f"{f}={getattr(rules, f)}" for f in differ)
            data = ", ".join(f"{f}={getattr(params, f)}" for f in differ)
            raise ValueError(
                f"{type(mechanism).__name__} reads the stream with {built} but the data have {data}; expected "
                "--model.mechanism.init_args.params to match --data.task_params (or the data folder's params.json)"
            )
