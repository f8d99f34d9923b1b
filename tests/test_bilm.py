import math

import pytest
import torch

from denoisesum.data.vocab import BOS_ID, EOS_ID, PAD_ID
from denoisesum.models.bilm import BiLM, BiLMConfig, add_boundaries, reverse_within_length

V = 50


@pytest.fixture
def model():
    torch.manual_seed(0)
    return BiLM(
        BiLMConfig(vocab_size=V, embed_dim=8, hidden_dim=12, proj_dim=16, cutoffs=[20, 35])
    ).eval()


def test_add_boundaries():
    ids = torch.tensor([[5, 6, 7], [8, 9, 0]])
    out = add_boundaries(ids, torch.tensor([3, 2]))
    assert out.tolist() == [[BOS_ID, 5, 6, 7, EOS_ID], [BOS_ID, 8, 9, EOS_ID, PAD_ID]]


def test_reverse_within_length_is_an_involution():
    x = torch.arange(10).view(2, 5)
    lengths = torch.tensor([5, 3])
    rev = reverse_within_length(x, lengths)
    assert rev.tolist() == [[4, 3, 2, 1, 0], [7, 6, 5, 8, 9]]
    assert torch.equal(reverse_within_length(rev, lengths), x)


def test_shapes_and_normalised_distributions(model):
    ids = torch.randint(4, V, (3, 7))
    lengths = torch.tensor([7, 4, 1])
    log_probs = model.log_probs(ids, lengths)
    assert log_probs.shape == (3, 7, V)
    assert torch.allclose(log_probs.exp().sum(-1), torch.ones(3, 7), atol=1e-5)
    loss, n = model(ids, lengths)
    assert n == 12 and loss.dim() == 0 and math.isfinite(loss.item())


def test_padding_never_changes_a_prediction(model):
    short = torch.randint(4, V, (1, 4))
    alone = model.log_probs(short, torch.tensor([4]))
    padded = torch.cat([short, torch.randint(4, V, (1, 5))], dim=1)  # junk where padding goes
    batch = torch.cat([padded, torch.randint(4, V, (1, 9))])
    together = model.log_probs(batch, torch.tensor([4, 9]))
    assert torch.allclose(alone[0], together[0, :4], atol=1e-6)


def test_loss_ignores_padding(model):
    ids = torch.randint(4, V, (1, 5))
    loss_alone, _ = model(ids, torch.tensor([5]))
    junk = torch.cat([ids, torch.randint(4, V, (1, 3))], dim=1)
    loss_padded, n = model(junk, torch.tensor([5]))
    assert n == 5 and torch.allclose(loss_alone, loss_padded, atol=1e-6)


def test_prediction_at_j_never_sees_word_j(model):
    """Cloze property: changing word j leaves its own distribution alone, not its neighbours'."""
    ids = torch.randint(4, V, (1, 6))
    lengths = torch.tensor([6])
    before = model.log_probs(ids, lengths)
    changed = ids.clone()
    changed[0, 3] = (ids[0, 3] - 4 + 1) % (V - 4) + 4
    after = model.log_probs(changed, lengths)
    assert torch.allclose(before[0, 3], after[0, 3], atol=1e-6)
    for j in (0, 2, 4, 5):
        assert not torch.allclose(before[0, j], after[0, j], atol=1e-6)


def test_too_small_projection_is_a_config_error():
    from denoisesum.errors import ConfigError

    with pytest.raises(ConfigError, match="proj_dim"):
        BiLM(BiLMConfig(vocab_size=V, proj_dim=10, cutoffs=[20, 35]))


@pytest.mark.parametrize("vocab_size", [5, 12, 1500])
def test_a_vocabulary_below_every_cutoff_gets_an_output_layer_of_its_size(vocab_size):
    # a small corpus' vocabulary, with the default cutoffs [2000, 10000] (issue 33: it raised
    # "cutoffs should be a sequence of length larger than 0")
    model = BiLM(BiLMConfig(vocab_size=vocab_size, embed_dim=8, hidden_dim=8, proj_dim=16))
    ids = torch.randint(4, vocab_size, (2, 6))
    lengths = torch.tensor([6, 3])
    assert model.log_probs(ids, lengths).shape == (2, 6, vocab_size)
    loss, n = model(ids, lengths)
    assert n == 9 and math.isfinite(loss.item())
