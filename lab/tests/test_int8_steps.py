"""lab/studies/int8_steps.py: int8 products that match F.linear closely and do not depend on the
rows beside them, and a summarizer switched between its fp16 and int8 steps."""

import pytest
import torch
import torch.nn.functional as F

from conftest import save_tiny_summarizer, synthetic_sets
from denoisesum.inference.beam import SearchConfig
from denoisesum.models import packed
from denoisesum.models.store import export_model_dir
from denoisesum.summarizer import Summarizer, SummarizerConfig
from lab.studies.int8_steps import Int8Linear, check_rows_alone, stepping


def summaries(summarizer, sets):
    return [r.summary for r in summarizer.summarize_results(sets)]


pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.skipif(not packed.available(), reason="this PyTorch has no fbgemm (an x86 build)"),
]


def test_int8_products_are_close_and_each_row_its_own():
    torch.manual_seed(1)
    weight, bias = torch.randn(200, 32) * 0.1, torch.randn(200)
    x = torch.rand(9, 3, 32) * 4 - 2  # within the bound of 2
    got = Int8Linear(weight, bias, bound=2.0)(x)
    want = F.linear(x, weight, bias)
    assert got.shape == want.shape
    assert (got - want).abs().max() < 0.03 * want.abs().max()
    assert check_rows_alone()


def test_a_summarizer_switched_to_int8_steps_and_back(tmp_path):
    settings = SummarizerConfig(
        max_review_tokens=12, max_reviews=4, search=SearchConfig(beam=3, max_words=12)
    )
    tiny = save_tiny_summarizer(tmp_path / "tiny", settings)
    export_model_dir(tiny, tmp_path / "fp16", fp16=True)
    summarizer = Summarizer.from_pretrained(tmp_path / "fp16")
    sets = synthetic_sets(3)
    fp16 = summaries(summarizer, sets)
    decoder = summarizer.model.doc.decoder
    with stepping(summarizer, "int8", keep_ih=False):
        assert all(isinstance(decoder.packed[k], Int8Linear) for k in ("ih", "hh", "state"))
        assert all(summaries(summarizer, sets))
        # kept through the search (not repacked), the output layer's rows int8 too
        assert all(isinstance(p, Int8Linear) for p in decoder.packed.values())
    with stepping(summarizer, "int8", keep_ih=True):
        assert not isinstance(decoder.packed["ih"], Int8Linear)
    with stepping(summarizer, "fp16", keep_ih=False):
        assert summaries(summarizer, sets) == fp16
        assert not any(isinstance(p, Int8Linear) for p in decoder.packed.values())
