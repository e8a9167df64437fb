"""swar_bench: the passkey_swar benchmark, a mechanism zoo and a Lightning harness for fixed-size-state sequence models."""

__version__ = "0.1.0"
