"""Packed fp16 weights for CPU decoding (models/packed.py, Decoder.pack)."""

import pytest
import torch
import torch.nn.functional as F

from conftest import grouped_reviews, save_tiny_summarizer, summaries
from denoisesum.data.batch import inference_batch
from denoisesum.data.vocab import BOS_ID, SPECIALS
from denoisesum.inference.beam import SearchConfig
from denoisesum.models import packed
from denoisesum.models.store import export_model_dir
from denoisesum.summarizer import Summarizer, SummarizerConfig

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.skipif(
        not packed.available(), reason="this PyTorch has no fbgemm fp16 GEMM (an x86 build)"
    ),
]
SETTINGS = SummarizerConfig(
    max_review_tokens=12, max_reviews=4, search=SearchConfig(beam=3, max_words=12)
)


def fp16_numbers(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).half().float()


@pytest.fixture
def summarizer(tmp_path) -> Summarizer:
    """A tiny model exported with fp16 weights, as the packaged one is."""
    export_model_dir(
        save_tiny_summarizer(tmp_path / "tiny", SETTINGS), tmp_path / "fp16", fp16=True
    )
    return Summarizer.from_pretrained(tmp_path / "fp16")


def review_sets() -> list[list[str]]:
    return list(grouped_reviews(4, 5, seed=3).values())


def test_a_product_is_the_fp32_one_up_to_summation_order():
    w, b, x = fp16_numbers(300, 64), fp16_numbers(300, seed=1), torch.randn(2, 5, 64)
    out = packed.pack(w, b)(x)
    assert out.shape == (2, 5, 300)
    torch.testing.assert_close(out, F.linear(x, w, b), rtol=1e-6, atol=1e-5)


def test_weights_fp16_would_change_are_not_packed():
    w = fp16_numbers(8, 4)
    assert packed.pack(w) is not None
    assert packed.pack(w + 1e-4) is None  # not fp16 numbers: packing would round them
    assert packed.pack(w.double()) is None


def test_the_lstm_cell_is_torchs():
    w_ih, w_hh, b_ih, b_hh = (
        fp16_numbers(48, 12, seed=1),
        fp16_numbers(48, 12, seed=2),
        fp16_numbers(48, seed=3),
        fp16_numbers(48, seed=4),
    )
    x, h, c = torch.randn(5, 12), torch.randn(5, 12), torch.randn(5, 12)
    got = packed.lstm_cell(x, h, c, packed.pack(w_ih, b_ih), packed.pack(w_hh, b_hh))
    want = torch.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shortlist", [0, 20])
def test_summaries_are_the_same_packed_or_not(summarizer, shortlist):
    summarizer.config.shortlist = shortlist
    sets = review_sets()
    summarizer.config.packed_fp16 = False
    plain = summaries(summarizer, sets)
    assert not summarizer.model.seg.decoder.packed
    summarizer.config.packed_fp16 = True
    fast = summaries(summarizer, sets)
    assert set(summarizer.model.doc.decoder.packed) >= {"ih", "hh", "state"}
    assert fast == plain


def test_the_freshness_check_reads_every_weight_of_a_decoder(summarizer):
    """_versions reads the decoder's modules' own parameters, not the whole tree: it must still
    see every weight (a module nested deeper would go unseen, its packs read stale)."""
    for name in ("seg", "doc"):
        decoder = getattr(summarizer.model, name).decoder
        assert len(decoder._versions()) == len(list(decoder.parameters()))


def test_a_weight_changed_after_packing_is_read_as_it_is_now(summarizer):
    """A step never reads packs of weights that changed since (a training step, a load)."""
    model = summarizer.model
    summaries(summarizer, review_sets()[:1])
    assert model.pack()
    batch = inference_batch([summarizer.encode_reviews(review_sets()[0])])

    def step() -> torch.Tensor:
        return model.decode_step(model.encode(batch), torch.full((1,), BOS_ID))[0]

    with torch.no_grad():
        before = step()
        model.doc.decoder.lstm.weight_hh_l0.mul_(2)  # still fp16 numbers
        assert model.doc.decoder.packed  # stale now: a shortlist's rows are not read from it
        assert isinstance(model.doc.decoder.out_rows(torch.arange(5)), tuple)
        after = step()
        assert not model.doc.decoder.packed  # dropped at that step, which read fp32
        model.pack(False)
        fp32 = step()
    assert not torch.allclose(before, fp32, atol=1e-3)
    torch.testing.assert_close(after, fp32, rtol=1e-5, atol=1e-5)
    assert model.pack()  # packs the weights as they are now


def test_a_model_with_weights_fp16_would_change_decodes_in_fp32(tmp_path):
    s = Summarizer.from_pretrained(save_tiny_summarizer(tmp_path / "tiny", SETTINGS))
    assert summaries(s, review_sets()[:2])[0]
    assert not s.model.seg.decoder.packed and not s.model.pack()


def test_shortlist_rows_share_one_packed_head(summarizer):
    """A shortlist's leading words (specials, most frequent) are packed once for every batch."""
    decoder = summarizer.model.doc.decoder
    assert summarizer.model.pack()
    hidden = torch.randn(3, 1, decoder.out.in_features)
    v = decoder.out.out_features
    heads = []
    for rows in (torch.tensor([*range(10), 14, v - 1]), torch.tensor([*range(10), 12])):
        out = decoder.out_rows(rows)(hidden)
        torch.testing.assert_close(out, decoder.out(hidden)[..., rows], rtol=1e-6, atol=1e-5)
        heads.append(decoder.packed["out:head"])
    assert heads[0] is heads[1]  # the second batch packed only its word 12
    decoder.out_rows(torch.arange(6))  # a shorter run: the head becomes it
    assert decoder.packed["out:head"].out_features == 6


def test_warm_packs_what_every_shortlist_reads_before_the_first_summary(summarizer):
    """What the service's workers share when it forks them (serve --workers): the decoders'
    weights and the rows every shortlist starts with, packed once, and summaries unchanged."""
    summarizer.config.shortlist = 20
    cold = summaries(summarizer, review_sets())
    warmed = Summarizer.from_pretrained(summarizer.path)
    warmed.config.shortlist = 20
    warmed.warm()
    decoders = [b.decoder for b in warmed.model.branches().values()]
    heads = [d.packed["out:head"] for d in decoders]
    assert all(h.out_features == len(SPECIALS) + 20 for h in heads)
    assert summaries(warmed, review_sets()) == cold
    assert [d.packed["out:head"] for d in decoders] == heads  # read, not packed again
