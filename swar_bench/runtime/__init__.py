"""What a run needs below the harness, on torch and Lightning's file layer: checkpoints read
weights-only and written atomically (``checkpoint_io``), DDP / FSDP sharding (``distributed``),
whether a mechanism's parameters fit in memory (``memory``) and SLURM resume (``slurm``). They
import ``swar_bench.utils`` and each other."""
