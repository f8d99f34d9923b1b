"""models/store.py is the one writer of model directories (issue 32): training saves through it,
fit's export and scripts/export_model.py copy through it, and the files' names live there."""

import ast
from pathlib import Path

import torch
from safetensors.torch import load_file

import denoisesum
from conftest import save_tiny_summarizer
from denoisesum.models.store import (
    CONFIG,
    RATING,
    RATING_REPORT,
    VOCAB,
    WEIGHTS,
    export_model_dir,
    load_denoisesum,
    read_settings,
    update_settings,
)
from denoisesum.summarizer import SummarizerConfig, load_model

PACKAGE = Path(denoisesum.__file__).parent
NAMES = {WEIGHTS, CONFIG, VOCAB, RATING, RATING_REPORT}
# where the names are defined: the model-directory format, and the rating model's own files
OWNERS = {PACKAGE / "models" / "store.py", PACKAGE / "models" / "rating.py"}


def test_export_copies_a_model_directory_byte_for_byte_with_its_new_settings(tmp_path):
    source = save_tiny_summarizer(tmp_path / "run", SummarizerConfig())
    (source / RATING).write_bytes(b"a rating model")
    config = read_settings(source)
    config["summarize"]["search"]["min_words"] = 7
    export_model_dir(source, tmp_path / "out", config)
    out = tmp_path / "out"
    for name in (WEIGHTS, VOCAB, RATING):
        assert (out / name).read_bytes() == (source / name).read_bytes()
    assert not (out / RATING_REPORT).exists()  # the source had none
    assert read_settings(out)["train"] == {"lr": 0.001}
    assert load_model(out)[2].search.min_words == 7


def test_fp16_export_halves_the_weights_and_loads_back_into_fp32(tmp_path):
    source = save_tiny_summarizer(tmp_path / "run", SummarizerConfig())
    export_model_dir(source, tmp_path / "half", fp16=True)
    half = load_file(str(tmp_path / "half" / WEIGHTS))
    assert {t.dtype for t in half.values() if t.is_floating_point()} == {torch.float16}
    assert (tmp_path / "half" / WEIGHTS).stat().st_size < 0.6 * (source / WEIGHTS).stat().st_size
    original, _, _ = load_denoisesum(source)
    model, _, config = load_denoisesum(tmp_path / "half")
    assert config == read_settings(source)
    for (name, p), q in zip(
        model.state_dict().items(), original.state_dict().values(), strict=True
    ):
        assert p.dtype == q.dtype, name
        assert torch.equal(p, q.half().float()), name


def test_update_settings_changes_only_the_keys_given(tmp_path):
    directory = save_tiny_summarizer(tmp_path / "run", SummarizerConfig())
    before = read_settings(directory)
    after = update_settings(directory, {"summarize": {"search": {"beam": 3}}})
    assert after == read_settings(directory)
    assert after["summarize"]["search"]["beam"] == 3
    before["summarize"]["search"]["beam"] = 3
    assert after == before


def bare_names(source: str) -> list[tuple[int, str]]:
    """(line, name) of each model-directory file name written as a string in `source`."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and node.value in NAMES
    ]


def test_no_module_but_the_store_spells_a_model_file_name():
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {name!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path not in OWNERS
        for line, name in bare_names(path.read_text())
    ]
    assert found == []


def test_the_check_sees_a_bare_name_but_not_one_in_a_sentence():
    assert bare_names('CONFIG = "config.json"\n"""Reads vocab.json."""\n') == [(1, "config.json")]
