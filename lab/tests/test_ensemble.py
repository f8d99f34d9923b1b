"""lab/studies/ensemble.py: several summarizers of one vocabulary decoding as one (their word
distributions averaged), under the package's beam search."""

import pytest
import torch

from denoisesum.data.batch import inference_batch
from denoisesum.data.vocab import BOS_ID
from denoisesum.inference.beam import DecodeConfig, beam_search
from lab.studies.ensemble import EnsembleModel
from test_beam import OpaqueModel, tiny_model_and_review_sets

pytestmark = pytest.mark.usefixtures("one_thread")


def test_an_ensemble_of_one_model_twice_decodes_as_the_model():
    model, sets = tiny_model_and_review_sets(2, (3, 2, 4))
    cfg = DecodeConfig(beam_size=3, min_length=2, max_length=12)
    alone = beam_search(model, inference_batch(sets), cfg)
    twice = beam_search(EnsembleModel([model, model]), inference_batch(sets), cfg)
    for a, b in zip(alone, twice, strict=True):
        assert [h.tokens for h in a] == [h.tokens for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)


def test_an_ensemble_step_is_the_mean_of_the_models_probabilities():
    sets = tiny_model_and_review_sets(3, (2, 3))[1]
    models = [tiny_model_and_review_sets(seed, (1,))[0] for seed in (3, 4)]
    batch, prev = inference_batch(sets), torch.full((2,), BOS_ID)
    ensemble = EnsembleModel(models)
    mixed, _ = ensemble.decode_step(ensemble.encode(batch), prev)
    each = [m.decode_step(m.encode(batch), prev)[0].exp() for m in models]
    assert torch.allclose(mixed.exp(), (each[0] + each[1]) / 2, atol=1e-6)
    assert not torch.allclose(each[0], each[1], atol=1e-3)  # the two models differ


def test_an_ensemble_state_is_reordered_like_a_plain_one():
    """Its per-model states sit in a tuple: beam search's skipping of static encoder tensors
    must walk into it (a tuple it did not walk would keep the LSTM states unreordered)."""
    sets = tiny_model_and_review_sets(5, (2, 4, 1))[1]
    models = [tiny_model_and_review_sets(seed, (1,))[0] for seed in (5, 6)]
    cfg = DecodeConfig(beam_size=4, min_length=2, max_length=12)
    fast = beam_search(EnsembleModel(models), inference_batch(sets), cfg)
    plain = beam_search(OpaqueModel(EnsembleModel(models)), inference_batch(sets), cfg)
    assert [[(h.tokens, h.score) for h in hyps] for hyps in fast] == [
        [(h.tokens, h.score) for h in hyps] for hyps in plain
    ]


def test_an_empty_ensemble_is_refused():
    with pytest.raises(ValueError, match="at least one model"):
        EnsembleModel([])
