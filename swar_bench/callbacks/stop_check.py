"""``StopCheck``: a recorded Ctrl-C raised again at every batch boundary."""

from __future__ import annotations

from typing import Any

from lightning.pytorch.callbacks import Callback

from swar_bench.utils import interrupts


class StopCheck(Callback):
    """Raises a recorded Ctrl-C again at every batch boundary (``swar_bench.utils.interrupts``): a
    ``KeyboardInterrupt`` lost inside a finalizer or a library's broad ``except`` would otherwise
    let training go on. Lightning then shuts down as for any Ctrl-C."""

    def on_train_batch_start(self, *args: Any, **kwargs: Any) -> None:
        interrupts.raise_if_stopped()

    on_train_batch_end = on_validation_batch_end = on_test_batch_end = on_predict_batch_end = on_train_batch_start
