from dataclasses import dataclass, field

import pytest

from denoisesum.config import load_config
from denoisesum.data.tokenizer import Tokenizer
from denoisesum.data.vocab import SPECIALS, UNK_ID, Vocab
from denoisesum.errors import ConfigError, InputError


def test_vocab_from_counts_min_count_max_size(tmp_path):
    counts = {"the": 10, "food": 5, "good": 5, "rare": 1, "<s>": 99}
    vocab = Vocab.from_counts(counts, min_count=2)
    assert vocab.tokens == [*SPECIALS, "the", "food", "good"]  # ties broken alphabetically
    assert len(Vocab.from_counts(counts, max_size=5)) == 5
    assert vocab.encode(["the", "rare"]) == [4, UNK_ID]
    assert vocab.decode([2, 4, 5, 3]) == ["the", "food"]
    vocab.save(tmp_path / "v.json")
    loaded = Vocab.load(tmp_path / "v.json")
    assert loaded.tokens == vocab.tokens and loaded.counts == vocab.counts
    assert loaded.tokenizer == Tokenizer()


def test_vocab_load_rejects_other_files(tmp_path):
    (tmp_path / "v.json").write_text('{"tokens": []}')
    with pytest.raises(InputError, match="not a denoisesum vocabulary"):
        Vocab.load(tmp_path / "v.json")


@dataclass
class Inner:
    lr: float = 0.001
    steps: int = 10


@dataclass
class Outer:
    name: str = "x"
    train: Inner = field(default_factory=Inner)


def test_config_defaults_toml_and_overrides(tmp_path):
    assert load_config(Outer) == Outer()
    path = tmp_path / "c.toml"
    path.write_text('name = "y"\n[train]\nsteps = 20\n')
    cfg = load_config(Outer, path, ["train.lr=0.5"])
    assert (cfg.name, cfg.train.steps, cfg.train.lr) == ("y", 20, 0.5)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.lrr=1", "unknown config key 'train.lrr'"),
        ("train.steps=many", "config key 'train.steps'"),
        ("train=3", "must be a table"),
        ("novalue", "key=value"),
    ],
)
def test_config_errors_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(Outer, None, [override])


def test_config_bad_toml(tmp_path):
    (tmp_path / "c.toml").write_text("name = \n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(Outer, tmp_path / "c.toml")


def test_a_derived_key_is_refused_not_overwritten(tmp_path):
    from denoisesum.training.denoiser_config import SummarizerRunConfig

    path = tmp_path / "run.toml"
    path.write_text("[data]\nmax_review_tokens = 80\n[summarize]\nmax_review_tokens = 150\n")
    with pytest.raises(
        ConfigError,
        match=r"'summarize\.max_review_tokens' is set by "
        r"'data\.max_review_tokens'",
    ):
        load_config(SummarizerRunConfig, path)
    with pytest.raises(ConfigError, match="is set by"):
        load_config(SummarizerRunConfig, None, ["summarize.max_review_tokens=9"])
    cfg = load_config(SummarizerRunConfig, None, ["data.max_review_tokens=80"])
    assert cfg.data.max_review_tokens == 80


def test_an_unreadable_config_file_is_one_error(tmp_path):
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe lr = 1")
    with pytest.raises(ConfigError, match=r"binary\.toml: not UTF-8 text \(byte 0\)"):
        load_config(Outer, binary)
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(Outer, tmp_path)
