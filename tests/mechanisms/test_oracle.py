"""The Oracle answers by the card's rules and reaches 100% on generated examples."""

import numpy as np
import pytest
import torch

from swar_bench.mechanisms import Oracle
from swar_bench.mechanisms.oracle import BOS, EOS, NULL, PK, PKQ, Q, W

K0, V0 = 8, 24  # first key id, first value id (card, "Vocabulary")


def predictions(model, tokens):
    x = torch.tensor([tokens])
    logits, _ = model(x, model.init_state(1))
    probs = logits.softmax(-1)[0]
    return probs.argmax(-1).tolist(), probs.max(-1).values.tolist()


def test_handwritten_stream():
    passkey = [V0 + 3, V0 + 1, V0 + 4, V0 + 1]
    tokens = [BOS, PK, *passkey]
    tokens += [W, K0 + 2, V0 + 9]  # write 1: k2 = v9
    tokens += [Q, K0 + 2, V0 + 9]  # age 1 -> v9
    tokens += [Q, K0 + 5, NULL]  # never written -> NULL
    tokens += [W, K0 + 2, V0 + 7]  # write 2 overwrites k2
    for i in range(15):  # writes 3..17 on other keys
        tokens += [W, K0 + 3 + i % 4, V0 + i]
    tokens += [Q, K0 + 2, V0 + 7]  # age 16 = w -> latest value v7
    tokens += [W, K0 + 3, V0]  # write 18
    tokens += [Q, K0 + 2, NULL]  # age 17 > w -> NULL
    tokens += [PKQ, *passkey, EOS]
    preds, conf = predictions(Oracle(), tokens)
    # the answer to "Q k" is predicted at k's position
    query_keys = [i + 1 for i, t in enumerate(tokens) if t == Q]
    for pos in query_keys:
        assert preds[pos] == tokens[pos + 1]
        assert conf[pos] > 0.9999
    pkq = tokens.index(PKQ)
    assert [preds[pkq + j] for j in range(4)] == passkey
    # elsewhere the prediction is uniform
    others = set(range(len(tokens))) - set(query_keys) - {pkq + j for j in range(4)}
    assert len(query_keys) == 4
    assert all(abs(conf[i] - 1 / 40) < 1e-6 for i in others)


def test_vocab_size_must_match_parameters():
    with pytest.raises(ValueError, match="vocab_size=41"):
        Oracle(vocab_size=41)

    class Params:
        w, n_keys, n_values = 8, 4, 4

    assert Oracle(vocab_size=16, params=Params()).w == 8


def test_all_labels_of_generated_examples():
    ps = pytest.importorskip("swar_bench.tasks.passkey_swar")
    model = Oracle()
    for n_writes in (32, 128):
        examples = ps.generate_examples(
            [ps.example_seed("test", n_writes, i) for i in range(4)], n_writes
        )
        for ex in examples:
            ids = torch.tensor(ex["input_ids"].astype(np.int64))[None]
            labels = torch.tensor(ex["labels"].astype(np.int64))[None]
            # stream in chunks of 7 tokens with the state carried
            state, outs = model.init_state(1), []
            for a in range(0, ids.shape[1], 7):
                logits, state = model(ids[:, a : a + 7], state)
                outs.append(logits)
            pred = torch.cat(outs, 1)[:, :-1].argmax(-1)
            target = labels[:, 1:]
            mask = target != -100
            assert mask.sum() == len(ex["answer_type"])
            assert torch.equal(pred[mask], target[mask])


def test_non_default_card_parameters():
    ps = pytest.importorskip("swar_bench.tasks.passkey_swar")
    params = ps.PasskeySwarParams(w=8, n_keys=8, n_values=12, active_min=3, active_max=4)
    model = Oracle(vocab_size=ps.vocab(params).size, params=params)
    assert (model.w, model.n_keys, model.n_values, model.vocab_size) == (8, 8, 12, 28)
    for i in range(3):
        ex = ps.make_example(ps.example_seed("validation", 64, i), 64, params)
        ids = torch.tensor(ex["input_ids"].astype(np.int64))[None]
        target = torch.tensor(ex["labels"].astype(np.int64))[None, 1:]
        pred = model(ids, None)[0][:, :-1].argmax(-1)
        mask = target != -100
        assert torch.equal(pred[mask], target[mask])
