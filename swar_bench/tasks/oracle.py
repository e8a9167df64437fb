"""The passkey_swar oracle: re-derive every label from the token stream alone.

Two readers of the same rules (docs/TASK.md, "Answer rule" and "Sanity checks"):

* :func:`verify_example` -- a plain forward scan over the tokens (obviously correct, O(T)
  Python); it checks structure, every answer, ``labels`` and ``answer_type`` and raises
  :class:`OracleError` naming the example, the position and the rule broken;
* :func:`annotate` -- the same rule vectorised with numpy, for the data pipeline: the answer
  kind (valid / stale / never-written / passkey) and the key age at each supervised position.

Neither imports the generator's randomness: they see only the tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from swar_bench.tasks.passkey_swar import (
    BOS,
    EOS,
    IGNORE_INDEX,
    NULL,
    PASSKEY_LEN,
    PK,
    PKQ,
    PasskeySwarParams,
    Q,
    W,
    vocab,
)

ANSWER_KINDS: tuple[str, ...] = (
    "none",
    "ar_valid",
    "ar_expired_stale",
    "ar_expired_never",
    "passkey",
)
"""Answer-kind codes (index = code): the task's ``ar_expired`` split into *stale* (written
earlier, idle for more than 2w writes) and *never-written* keys (docs/TASK.md, "Answer rule")."""

NONE, AR_VALID, AR_EXPIRED_STALE, AR_EXPIRED_NEVER, PASSKEY = range(len(ANSWER_KINDS))

HEAD_LEN = 2 + PASSKEY_LEN  # BOS PK p1..p4
TAIL_LEN = 2 + PASSKEY_LEN  # PKQ p1..p4 EOS
MIN_LEN = HEAD_LEN + TAIL_LEN


class OracleError(ValueError):
    """An example breaks a rule of the task (docs/TASK.md); the message names the example, position and rule."""


def _where(example_id: str, position: int | None = None) -> str:
    return example_id if position is None else f"{example_id}: position {position}"


def _example_id(example: Mapping[str, Any], index: int | None) -> str:
    parts = []
    if example.get("seed") is not None:
        parts.append(f"seed={int(example['seed'])}")
    if index is not None:
        parts.append(f"index={index}")
    return "example " + (" ".join(parts) if parts else "(no seed)")


def verify_example(
    example: Mapping[str, Any], params: PasskeySwarParams | None = None, index: int | None = None
) -> None:
    """Check one example against the task's rules (docs/TASK.md), from its tokens alone (a brute-force scan).

    Checks, in order: structure (``BOS PK p1..p4 <W k v | Q k a>* PKQ p1..p4 EOS``, every token
    in the vocabulary, whole triples, at least one write before the first query, ``n_writes``
    equal to the number of writes, ``labels`` as long as ``input_ids``); the passkey after
    ``PKQ`` equals the one after ``PK``; every query: no gray-zone key (``w < age <= 2w``),
    answer = value of the key's latest write if ``age <= w``, ``NULL`` if ``age > 2w`` or never
    written; ``labels`` = the answer token at each answer position and at the 4 passkey tokens
    after ``PKQ``, -100 elsewhere; ``answer_type`` one entry per supervised position, in order.

    Args:
        example: a dict with ``input_ids`` ([T] ints), ``labels`` ([T] ints), ``answer_type``
            (list of str) and optionally ``n_writes`` and ``seed`` (as :func:`make_example`).
        params: the parameters it was generated with (default: the release's, docs/TASK.md "Generation").
        index: the example's row in its split, quoted in errors.

    Raises:
        OracleError: the first violation, e.g. ``"example seed=2000032000005 index=5: position
            47: wrong answer: ..."``.
    """
    params = params or PasskeySwarParams()
    voc = vocab(params)
    ex_id = _example_id(example, index)
    for field in ("input_ids", "labels", "answer_type"):
        if field not in example or example[field] is None:
            raise OracleError(f"{ex_id}: bad structure: missing field {field!r}")
    ids = [int(t) for t in np.asarray(example["input_ids"]).reshape(-1).tolist()]
    labels = [int(t) for t in np.asarray(example["labels"]).reshape(-1).tolist()]
    answer_type = list(example["answer_type"])
    T = len(ids)

    # Structure
    for t, tok in enumerate(ids):
        if not 0 <= tok < voc.size or tok == voc.PAD:
            raise OracleError(
                f"{_where(ex_id, t)}: bad structure: token id {tok} is not in the vocabulary "
                f"(expected 1..{voc.size - 1})"
            )
    if T < MIN_LEN:
        raise OracleError(
            f"{ex_id}: bad structure: truncated example of {T} tokens (at least {MIN_LEN} expected)"
        )
    if len(labels) != T:
        raise OracleError(
            f"{ex_id}: bad structure: {len(labels)} labels for {T} input_ids (expected equal lengths)"
        )
    for pos, tok, name in (
        (0, BOS, "BOS"),
        (1, PK, "PK"),
        (T - TAIL_LEN, PKQ, "PKQ"),
        (T - 1, EOS, "EOS"),
    ):
        if ids[pos] != tok:
            raise OracleError(
                f"{_where(ex_id, pos)}: bad structure: expected {name}, found {voc.tokens[ids[pos]]} "
                "(missing BOS/PK/PKQ/EOS or truncated example)"
            )
    for pos in list(range(2, HEAD_LEN)) + list(range(T - TAIL_LEN + 1, T - 1)):
        if not voc.is_value(ids[pos]):
            raise OracleError(
                f"{_where(ex_id, pos)}: bad structure: passkey token must be a value v0..v{params.n_values - 1}, "
                f"found {voc.tokens[ids[pos]]}"
            )
    stream_len = T - HEAD_LEN - TAIL_LEN
    if stream_len % 3:
        raise OracleError(
            f"{ex_id}: bad structure: the stream between PK and PKQ has {stream_len} tokens, "
            "not whole W k v / Q k a triples (truncated example?)"
        )

    # The answer rule, by a forward scan
    expected_labels = [IGNORE_INDEX] * T
    expected_types: list[str] = []
    last_write: dict[int, int] = {}  # key token -> write number (1-based) of its latest write
    last_value: dict[int, int] = {}
    n_writes = 0
    for start in range(HEAD_LEN, T - TAIL_LEN, 3):
        op, key, val = ids[start : start + 3]
        if op not in (W, Q):
            raise OracleError(
                f"{_where(ex_id, start)}: bad structure: expected W or Q, found {voc.tokens[op]}"
            )
        if not voc.is_key(key):
            raise OracleError(
                f"{_where(ex_id, start + 1)}: bad structure: expected a key, found {voc.tokens[key]}"
            )
        if op == W:
            if not voc.is_value(val):
                raise OracleError(
                    f"{_where(ex_id, start + 2)}: bad structure: a write's value must be v0..v{params.n_values - 1}, "
                    f"found {voc.tokens[val]}"
                )
            n_writes += 1
            last_write[key], last_value[key] = n_writes, val
            continue
        if n_writes == 0:
            raise OracleError(
                f"{_where(ex_id, start)}: bad structure: query before the first write"
            )
        name = voc.tokens[key]
        if key not in last_write:
            answer, kind, rule = (
                NULL,
                "ar_expired",
                f"{name} was never written, so the answer is NULL",
            )
        else:
            age = n_writes - last_write[key] + 1
            if params.w < age <= 2 * params.w:
                raise OracleError(
                    f"{_where(ex_id, start)}: gray-zone query: {name} has age {age}, in "
                    f"(w, 2w] = ({params.w}, {2 * params.w}], which is never queried"
                )
            if age <= params.w:
                answer, kind = last_value[key], "ar_valid"
                rule = f"{name} has age {age} <= w={params.w}, so the answer is its latest value {voc.tokens[answer]}"
            else:
                answer, kind = NULL, "ar_expired"
                rule = f"{name} has age {age} > 2w={2 * params.w}, so the answer is NULL"
        if val != answer:
            raise OracleError(
                f"{_where(ex_id, start + 2)}: wrong answer: found {voc.tokens[val]}; {rule}"
            )
        expected_labels[start + 2] = answer
        expected_types.append(kind)
    if (
        "n_writes" in example
        and example["n_writes"] is not None
        and int(example["n_writes"]) != n_writes
    ):
        raise OracleError(
            f"{ex_id}: bad structure: n_writes={int(example['n_writes'])} but the stream has {n_writes} writes "
            "(truncated example?)"
        )
    for i in range(PASSKEY_LEN):
        pos = T - TAIL_LEN + 1 + i
        if ids[pos] != ids[2 + i]:
            raise OracleError(
                f"{_where(ex_id, pos)}: passkey mismatch: passkey token {i + 1} after PKQ is "
                f"{voc.tokens[ids[pos]]}, the passkey after PK has {voc.tokens[ids[2 + i]]}"
            )
        expected_labels[pos] = ids[pos]
        expected_types.append("passkey")

    # Labels and answer kinds
    for t in range(T):
        if labels[t] == expected_labels[t]:
            continue
        if expected_labels[t] == IGNORE_INDEX:
            raise OracleError(
                f"{_where(ex_id, t)}: label off an answer position: labels[{t}]={labels[t]}, expected "
                f"{IGNORE_INDEX} (only query answers and the passkey after PKQ are supervised)"
            )
        raise OracleError(
            f"{_where(ex_id, t)}: wrong label: labels[{t}]={labels[t]}, expected {expected_labels[t]} "
            f"({voc.tokens[expected_labels[t]]}, the answer token)"
        )
    if len(answer_type) != len(expected_types):
        raise OracleError(
            f"{ex_id}: answer_type length mismatch: {len(answer_type)} entries for "
            f"{len(expected_types)} supervised positions"
        )
    supervised = [t for t in range(T) if expected_labels[t] != IGNORE_INDEX]
    for i, (got, want) in enumerate(zip(answer_type, expected_types)):
        if got != want:
            raise OracleError(
                f"{_where(ex_id, supervised[i])}: wrong answer_type: entry {i} is {got!r}, expected {want!r}"
            )


def annotate(
    input_ids: Any, params: PasskeySwarParams | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Answer kind and key age at every position of one example (vectorised oracle).

    Args:
        input_ids: ``[T]`` token ids of one example (any integer dtype).
        params: generator parameters (default: the release's, docs/TASK.md "Generation"); only ``w`` and the vocabulary matter.

    Returns:
        ``(answer_kind, key_age)``: ``answer_kind`` ``int8 [T]`` with codes of
        :data:`ANSWER_KINDS` at the supervised positions (each query's answer token, the 4
        passkey tokens after ``PKQ``; the same positions as ``labels != -100``) and 0 elsewhere;
        ``key_age`` ``int32 [T]``, in writes, the age of the queried key at its answer position
        (the immediately preceding write has age 1), -1 elsewhere and for never-written keys.

    Raises:
        OracleError: malformed structure (length, BOS/PK/PKQ/EOS, W/Q triples) or a gray-zone
            query (``w < age <= 2w``).
    """
    params = params or PasskeySwarParams()
    voc = vocab(params)
    ids = np.asarray(input_ids).reshape(-1).astype(np.int64)
    T = ids.size
    if T < MIN_LEN or (T - MIN_LEN) % 3:
        raise OracleError(
            f"annotate: {T} tokens is not 12 + 3 * (writes + queries) (truncated example?)"
        )
    if ids[0] != BOS or ids[1] != PK or ids[T - TAIL_LEN] != PKQ or ids[T - 1] != EOS:
        raise OracleError("annotate: bad structure: expected BOS PK ... PKQ p1 p2 p3 p4 EOS")
    triples = ids[HEAD_LEN : T - TAIL_LEN].reshape(-1, 3)
    op, key = triples[:, 0], triples[:, 1]
    is_w, is_q = op == W, op == Q
    if not np.all(is_w | is_q):
        bad = int(np.flatnonzero(~(is_w | is_q))[0])
        raise OracleError(
            f"annotate: position {HEAD_LEN + 3 * bad}: bad structure: expected W or Q"
        )
    write_no = np.cumsum(is_w)  # writes so far, including this triple
    last = np.full(
        len(triples), -1, dtype=np.int64
    )  # write number of the queried key's latest write
    for k in np.unique(key[is_q]):
        w_idx = np.flatnonzero(is_w & (key == k))
        q_idx = np.flatnonzero(is_q & (key == k))
        if w_idx.size:
            prev = np.searchsorted(w_idx, q_idx) - 1
            last[q_idx] = np.where(prev >= 0, write_no[w_idx[np.maximum(prev, 0)]], -1)
    q_idx = np.flatnonzero(is_q)
    age = write_no[q_idx] - last[q_idx] + 1
    never = last[q_idx] < 0
    gray = ~never & (age > params.w) & (age <= 2 * params.w)
    if gray.any():
        g = int(q_idx[np.flatnonzero(gray)[0]])
        raise OracleError(
            f"annotate: position {HEAD_LEN + 3 * g}: gray-zone query: {voc.tokens[int(key[g])]} has age "
            f"{int(age[np.flatnonzero(gray)[0]])}, in (w, 2w] = ({params.w}, {2 * params.w}]"
        )
    answer_kind = np.zeros(T, dtype=np.int8)
    key_age = np.full(T, -1, dtype=np.int32)
    pos = HEAD_LEN + 3 * q_idx + 2
    answer_kind[pos] = np.where(
        never, AR_EXPIRED_NEVER, np.where(age <= params.w, AR_VALID, AR_EXPIRED_STALE)
    )
    key_age[pos] = np.where(never, -1, age)
    answer_kind[T - TAIL_LEN + 1 : T - 1] = PASSKEY
    return answer_kind, key_age
