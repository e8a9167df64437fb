"""YAML that refuses a key given twice in one mapping (PyYAML keeps the last without a word:
``trainer: {max_steps: 5, max_steps: 7}`` trains 7 steps). Used for every file of options the
commands read: ``--config`` of fit / validate / test / predict / demo and the referee, study files."""

from __future__ import annotations

from typing import Any


class DuplicateKey(ValueError):
    """A key given twice in one mapping of a YAML file (YAML keeps the last without a word)."""


def unique_key_loader() -> type:
    """A ``yaml.SafeLoader`` that raises :class:`DuplicateKey` (one line naming the key and both
    lines, 1-based) for a key given twice in one mapping. Merge keys (``<<: *base``) are not
    duplicates of the keys they bring in: a key after a merge overrides it, as YAML means."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the constructor refuses it itself
                    continue
                if first is not None:
                    raise DuplicateKey(f"key {key!r} appears twice (lines {first} and {line}); expected each "
                                       "key once (YAML would keep the last without a word)")
                seen[key] = line
            return super().construct_mapping(node, deep=deep)

    return Loader


def load_unique(stream: Any) -> Any:
    """``yaml.safe_load(stream)``, refusing a key given twice in one mapping (:class:`DuplicateKey`,
    a ValueError). Raises what ``yaml.safe_load`` raises otherwise."""
    import yaml

    return yaml.load(stream, Loader=unique_key_loader())


def json_unique(text: str) -> Any:
    """``json.loads(text)``, refusing a key given twice in one object (:class:`DuplicateKey`: JSON,
    like YAML, keeps the last value without a word: ``--params '{"w": 8, "w": 9}'`` generated w=9).
    Raises ``json.JSONDecodeError`` as ``json.loads`` does otherwise."""
    import json

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise DuplicateKey(f"key {key!r} appears twice; expected each key once (JSON would keep the last "
                                   "without a word)")
            seen[key] = value
        return seen

    return json.loads(text, object_pairs_hook=unique)
