"""Every mechanism: the protocol, streaming-exact chunking, and state bytes."""

import inspect
import itertools
import random
import typing

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import swar_bench.mechanisms as mech
from swar_bench.mechanisms import ContextMechanism, measure_state_bytes

T_TEST = 40
SMALL = {"vocab_size": 40, "d_model": 16, "n_layers": 2}
LEARNED = {
    "ScalarDecayLinearAttention": {**SMALL, "decay": 0.9, "chunk_size": 16},
    "MultiScaleRetention": {**SMALL, "n_heads": 2, "decays": [0.9, 1.0], "chunk_size": 16},
    "DeltaNet": {**SMALL, "n_heads": 2, "chunk_size": 16},
    "GatedDeltaNet": {**SMALL, "n_heads": 2, "chunk_size": 16},
    "Mamba2": {**SMALL, "d_state": 8, "head_dim": 8, "chunk_size": 16},
    "RWKV7": {**SMALL, "n_heads": 2, "decay_rank": 4, "a_rank": 4, "gate_rank": 4, "chunk_size": 8},
    "Based": {**SMALL, "n_heads": 2, "feature_dim": 4, "window": 8, "chunk_size": 16},
    "GatedLinearAttention": {**SMALL, "n_heads": 2, "chunk_size": 16},
    "HGRN2": {**SMALL, "n_heads": 2, "chunk_size": 16},
    "KimiDeltaAttention": {**SMALL, "n_heads": 2, "chunk_size": 16},
    "GatedDeltaProduct": {**SMALL, "n_heads": 2, "chunk_size": 16},
    "mLSTM": {**SMALL, "n_heads": 2, "chunk_size": 16},
    "Mamba": {**SMALL, "d_state": 4, "chunk_size": 16},
    "LogLinearAttention": {**SMALL, "n_heads": 2, "chunk_size": 8},
    "GRU": {**SMALL},
    "LSTM": {**SMALL},
    "SlidingWindowAttention": {**SMALL, "n_heads": 2, "window": 8},
    "CausalAttention": {**SMALL, "n_heads": 2},
}
ALL = {**LEARNED, "Oracle": {"vocab_size": 40}}
# The short-convolution option in its non-default setting, so every test below covers both:
# on (conv_size 4, and 2 for one) for the mechanisms without one by default, off for the others.
CONV_OFF_BY_DEFAULT = (
    "ScalarDecayLinearAttention", "MultiScaleRetention", "GatedLinearAttention", "HGRN2", "Based",
)
CONV_ON_BY_DEFAULT = (
    "DeltaNet", "GatedDeltaNet", "GatedDeltaProduct", "KimiDeltaAttention", "mLSTM",
    "LogLinearAttention", "Mamba2", "Mamba",
)
VARIANTS = {
    **{f"{n}[conv4]": {**LEARNED[n], "conv_size": 4} for n in CONV_OFF_BY_DEFAULT},
    **{f"{n}[conv0]": {**LEARNED[n], "conv_size": 0} for n in CONV_ON_BY_DEFAULT},
    "GatedLinearAttention[conv2]": {**LEARNED["GatedLinearAttention"], "conv_size": 2},
    "ScalarDecayLinearAttention[tied,conv4]": {
        **LEARNED["ScalarDecayLinearAttention"], "learn_decay": True, "tie_decay": True,
        "conv_size": 4,
    },
}
CASES = {**ALL, **VARIANTS}
LEARNED_CASES = {**LEARNED, **VARIANTS}


def class_name(case):
    """The mechanism class of a case name (``DeltaNet[conv0]`` -> ``DeltaNet``)."""
    return case.split("[")[0]


def build(name):
    """The mechanism with weights at the scale of PyTorch's default init (std fan_in^-1/2,
    embeddings std 1), so the mixers, not the 0.02-std residual path, dominate the logits."""
    torch.manual_seed(0)
    model = getattr(mech, class_name(name))(**CASES[name]).eval()
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            torch.nn.init.normal_(module.weight, std=module.in_features**-0.5)
        elif isinstance(module, torch.nn.Embedding):
            torch.nn.init.normal_(module.weight)
    return model


def card_stream(T, seed, w=16):
    """A passkey_swar-shaped stream of T tokens (card, "Format"): BOS PK p1..p4, writes
    ``W k v`` over 4 keys and queries ``Q k a`` answered by the card's rule, then PKQ p1..p4 EOS."""
    rng = random.Random(seed)
    passkey = [rng.randrange(24, 40) for _ in range(4)]
    tokens, last, n_writes = [1, 3, *passkey], {}, 0
    while len(tokens) < T - 6:
        key = rng.randrange(8, 12)
        if rng.random() < 0.3:
            age = n_writes - last[key][0] + 1 if key in last else None
            tokens += [6, key, last[key][1] if age is not None and age <= w else 7]
        else:
            n_writes += 1
            last[key] = (n_writes, rng.randrange(24, 40))
            tokens += [5, key, last[key][1]]
    return (tokens + [4, *passkey, 2])[:T]


def stream_tokens(B, T, seed):
    return torch.tensor([card_stream(T, seed * 100 + b) for b in range(B)])


def run_chunked(model, x, cuts):
    state = model.init_state(x.shape[0])
    outs = []
    bounds = [0, *sorted(set(cuts)), x.shape[1]]
    for a, b in itertools.pairwise(bounds):
        if b > a:
            logits, state = model(x[:, a:b], state)
            outs.append(logits)
    return torch.cat(outs, dim=1), state


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=4, deadline=None, derandomize=True)
@given(cuts=st.lists(st.integers(1, T_TEST - 1), max_size=6), seed=st.integers(0, 3))
def test_one_call_equals_any_chunking(name, cuts, seed):
    model = build(name)
    x = stream_tokens(2, T_TEST, seed)
    with torch.no_grad():
        full, full_state = model(x, model.init_state(2))
        chunked, chunked_state = run_chunked(model, x, cuts)
    assert full.shape == (2, T_TEST, 40)
    # float32 rounding, relative to the logits' scale (LogLinearAttention without its conv: 1.2e-5
    # at logits of ~4)
    assert (full - chunked).abs().max().item() <= 1e-5 * max(1.0, full.abs().max().item())
    for a, b in zip(mech.iter_state_tensors(full_state), mech.iter_state_tensors(chunked_state)):
        assert a.shape == b.shape
        # relative for states that are unnormalised sums (Based's sum phi(k) v^T grows with T)
        if a.numel():  # (an empty conv state, conv_size=0, has no entries to compare)
            assert (a.float() - b.float()).abs().max() <= 1e-5 * max(1.0, a.abs().max().item())


@pytest.mark.parametrize("name", sorted(CASES))
def test_token_by_token_equals_one_call(name):
    model = build(name)
    x = stream_tokens(1, 24, seed=7)
    with torch.no_grad():
        full, _ = model(x, model.init_state(1))
        stepped, _ = run_chunked(model, x, list(range(1, 24)))
    assert (full - stepped).abs().max().item() <= 1e-5


def test_every_exported_mechanism_is_tested():
    assert set(ALL) == set(mech.MECHANISMS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_protocol_and_state_bytes(name):
    model = build(name)
    assert isinstance(model, ContextMechanism)
    assert model.vocab_size == 40
    assert model.n_params == sum(p.numel() for p in model.parameters())
    embedding = model.vocab_size * CASES[name].get("d_model", 0)
    assert model.flops_per_token >= 2 * (model.n_params - embedding)
    if not mech.is_fixed_size(model):
        return  # see test_causal_attention_state_grows_with_tokens
    for B in (1, 3):
        assert model.state_bytes(B) == measure_state_bytes(model.init_state(B)) > 0
        bf16 = model.init_state(B, dtype=torch.bfloat16)
        assert model.state_bytes(B, dtype=torch.bfloat16) == measure_state_bytes(bf16)
    with torch.no_grad():
        for T in (64, 4096):
            _, state = model(stream_tokens(1, T, seed=T), model.init_state(1))
            assert (
                measure_state_bytes(state)
                == model.state_bytes(1)
                == mech.state_bytes_at(model, 1, T)
            )


def test_causal_attention_state_grows_with_tokens():
    model = build("CausalAttention")
    assert model.fixed_size_state is False and not mech.is_fixed_size(model)
    d_model, n_layers = 16, 2
    assert model.state_bytes(2) == measure_state_bytes(model.init_state(2)) == 0
    with torch.no_grad():
        for T in (64, 1000):
            _, state = model(stream_tokens(2, T, seed=T), model.init_state(2))
            expected = 2 * n_layers * 2 * T * d_model * 4  # K and V, float32
            assert measure_state_bytes(state) == model.state_bytes(2, seq_len=T) == expected
            assert mech.state_bytes_at(model, 2, T) == expected


@pytest.mark.parametrize("name", sorted(LEARNED_CASES))
def test_gradients_flow_through_carried_state_and_detach_cuts_them(name):
    model = build(name).train()
    x = stream_tokens(2, 12, seed=1)
    _, state = model(x[:, :6], model.init_state(2))
    # (an empty conv state, conv_size=0, carries nothing to differentiate)
    leaves = [t for t in mech.iter_state_tensors(state) if t.is_floating_point() and t.numel()]
    assert leaves and all(t.requires_grad for t in leaves)
    detached = model.detach_state(state)
    assert not any(t.requires_grad for t in mech.iter_state_tensors(detached))
    logits, _ = model(x[:, 6:], detached)
    logits.sum().backward()
    assert model.embedding.weight.grad is not None


@pytest.mark.parametrize("name", sorted(LEARNED))
def test_blocks_are_a_module_list_for_per_block_sharding(name):
    model = build(name)
    assert isinstance(model.blocks, torch.nn.ModuleList)
    assert len(model.blocks) == ALL[name]["n_layers"]


@pytest.mark.parametrize("name", sorted(LEARNED))
def test_bad_sizes_raise_one_line_value_errors(name):
    cls = getattr(mech, name)
    with pytest.raises(ValueError, match="d_model"):
        cls(d_model=0)
    with pytest.raises(ValueError, match="batch_size"):
        cls(**LEARNED[name]).init_state(0)
    with pytest.raises(ValueError, match="input_ids"):
        cls(**LEARNED[name])(torch.zeros(2, 3, 4, dtype=torch.long), None)


def test_heads_must_divide_width():
    with pytest.raises(ValueError, match="n_heads=3 must divide d_model=16"):
        mech.GatedDeltaNet(d_model=16, n_heads=3)


def test_the_reported_width_heads_do_not_divide_is_refused_as_a_width():
    # reported: d_model=-3 was refused as "n_heads=2 must divide d_model=-3"
    with pytest.raises(ValueError) as err:
        mech.GatedDeltaNet(d_model=-3, n_heads=2)
    assert str(err.value) == "d_model must be a positive integer, got -3"


def _size_args(name):
    """(argument, default) of the mechanism's size arguments: its int (or optional int) init args,
    but ``conv_size`` (0 = no convolution; tests/mechanisms/test_conv_size.py)."""
    cls = getattr(mech, name)
    hints = typing.get_type_hints(cls.__init__)
    params = inspect.signature(cls.__init__).parameters
    return [
        (arg, params[arg].default)
        for arg, hint in hints.items()
        if (hint is int or hint == int | None) and arg != "conv_size"
    ]


SIZE_ARGS = [(name, arg) for name in mech.MECHANISMS for arg, _ in _size_args(name)]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(SIZE_ARGS), st.integers(max_value=0), st.data())
def test_a_non_positive_size_is_refused_by_its_own_name_before_any_relation(case, value, data):
    # the other sizes positive but drawn small, so heads need not divide the width (n_heads=3,
    # d_model=4) nor head_dim expand * d_model: the positive-integer checks come first
    name, arg = case
    others = {
        other: data.draw(st.integers(1, 9), label=other)
        for other, default in _size_args(name)
        if other != arg and default is not None
    }
    if "decays" in inspect.signature(getattr(mech, name).__init__).parameters:
        others["decays"] = [0.9] * max(1, others.get("n_heads", 1))
    with pytest.raises(ValueError) as err:
        getattr(mech, name)(**others, **{arg: value})
    assert str(err.value) == f"{arg} must be a positive integer, got {value}"


def test_outputs_and_states_are_not_views():
    # FSDP2 registers backward hooks on a sharded block's outputs; a view would lose them.
    for name in LEARNED_CASES:
        model = build(name)
        x = stream_tokens(2, 20, seed=0)
        if getattr(model, "tie_decay", False):  # what the model's forward sets before the blocks
            for block in model.blocks:
                block.mixer.tied_log_decay = torch.nn.functional.logsigmoid(model.decay_logit)
        for block, state in zip(model.blocks, model.init_state(2)):
            y, new_state = block(model.embedding(x), state)
            assert all(t._base is None for t in [y, *mech.iter_state_tensors(new_state)]), name


def test_fully_shard_per_block_keeps_the_logits(tmp_path):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or dist.is_initialized():
        pytest.skip("needs a fresh torch.distributed")
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    try:
        mesh = init_device_mesh("cpu", (1,))
        x = stream_tokens(2, 20, seed=0)
        for name in LEARNED:
            reference, model = build(name), build(name)
            for block in model.blocks:
                fully_shard(block, mesh=mesh)
            fully_shard(model, mesh=mesh)
            expected, _ = reference(x, reference.init_state(2))
            logits, _ = model(x, model.init_state(2))
            logits.sum().backward()
            assert (logits - expected).abs().max().item() <= 1e-6, name
            assert model.n_params == reference.n_params
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("value", [0, -5])
def test_the_oracle_refuses_a_non_positive_vocab_size_as_a_size(value):
    """The size property test's draw: Oracle(vocab_size=0) is a size fault first, then the task's rule."""
    from swar_bench.mechanisms.oracle import Oracle

    with pytest.raises(ValueError) as err:
        Oracle(vocab_size=value)
    assert str(err.value) == f"vocab_size must be a positive integer, got {value}"
    with pytest.raises(ValueError, match=r"vocab_size=41 does not match the task's vocabulary of 40 tokens"):
        Oracle(vocab_size=41)
