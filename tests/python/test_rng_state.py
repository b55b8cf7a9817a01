"""get_rng_state / set_rng_state, Generator.get_state / set_state and
random.fork_rng: the draws after a saved state come again once it is put
back, for the host generator (rand, randn, randint, randperm) and the
engine's (dropout masks, on both devices); bad states are refused by name."""
import numpy as np
import pytest

import lazyscope
from lazyscope import nn

DEVICES = ["cpu", "lazy:0"]


def draws(device):
    x = lazyscope.ones(64, 32, device=device)
    mask = nn.functional.dropout(x, 0.5, training=True)
    return [lazyscope.rand(5).numpy(), lazyscope.randn(3, 4).numpy(), lazyscope.randint(0, 100, (6,)).numpy(),
            lazyscope.randperm(9).numpy(), mask.numpy()]


@pytest.mark.parametrize("device", DEVICES)
def test_draws_after_a_saved_state_come_again_once_it_is_put_back(device):
    lazyscope.manual_seed(123)
    draws(device)  # the state moves on from the seed
    state = lazyscope.get_rng_state()
    assert state.dtype == lazyscope.uint8 and state.dim() == 1 and str(state.device) == "cpu"
    first = draws(device)
    second = draws(device)
    assert not all(np.array_equal(a, b) for a, b in zip(first, second))  # the draws do move on
    lazyscope.set_rng_state(state)
    again = draws(device)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    # The state is a value: a copy of it restores as well, and it stays valid after more draws.
    lazyscope.set_rng_state(lazyscope.tensor(state.numpy().copy()))
    for a, b in zip(first, draws(device)):
        np.testing.assert_array_equal(a, b)


def test_manual_seed_initial_seed_and_seed():
    lazyscope.manual_seed(77)
    assert lazyscope.initial_seed() == 77
    a = lazyscope.rand(4).numpy()
    lazyscope.manual_seed(77)
    np.testing.assert_array_equal(a, lazyscope.rand(4).numpy())
    s = lazyscope.seed()
    assert lazyscope.initial_seed() == s and 0 <= s < 2**63


def test_fork_rng_leaves_the_generators_as_they_were_even_on_an_error():
    lazyscope.manual_seed(5)
    before = lazyscope.get_rng_state().numpy()
    with lazyscope.random.fork_rng():
        lazyscope.rand(100)
        nn.functional.dropout(lazyscope.ones(8, device="lazy:0"), 0.5).numpy()
    np.testing.assert_array_equal(lazyscope.get_rng_state().numpy(), before)
    with pytest.raises(KeyError):
        with lazyscope.random.fork_rng():
            lazyscope.rand(3)
            raise KeyError("inside")
    np.testing.assert_array_equal(lazyscope.get_rng_state().numpy(), before)
    with lazyscope.random.fork_rng(enabled=False):
        lazyscope.rand(3)
    assert not np.array_equal(lazyscope.get_rng_state().numpy(), before)


def test_a_generator_state_round_trips_and_leaves_the_default_alone():
    g = lazyscope.Generator().manual_seed(9)
    lazyscope.randperm(5, generator=g)
    state = g.get_state()
    a = lazyscope.randperm(20, generator=g).numpy()
    default_before = lazyscope.get_rng_state().numpy()
    g.set_state(state)
    np.testing.assert_array_equal(a, lazyscope.randperm(20, generator=g).numpy())
    np.testing.assert_array_equal(lazyscope.get_rng_state().numpy(), default_before)


@pytest.mark.parametrize("bad, message", [
    (lambda s: s.float(), "uint8"),
    (lambda s: s[:-1], r"\[56\]"),
    (lambda s: lazyscope.tensor(np.zeros(57, dtype=np.uint8)), "tagged"),
    (lambda s: s.reshape(3, 19), "uint8"),
])
def test_a_wrong_state_is_refused_and_changes_nothing(bad, message):
    lazyscope.manual_seed(1)
    state = lazyscope.get_rng_state()
    with pytest.raises(ValueError, match=message):
        lazyscope.set_rng_state(bad(state))
    np.testing.assert_array_equal(lazyscope.get_rng_state().numpy(), state.numpy())
    with pytest.raises(ValueError, match="Generator.set_state"):
        lazyscope.Generator().set_state(state)  # the default's state is not a generator's
