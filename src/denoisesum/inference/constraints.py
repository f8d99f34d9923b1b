"""What beam search may not say next (docs/method.md §2 "Decoding"): one step's ban mask.

The released code's constraints, applied by setting log-probabilities to -inf: special tokens
other than `</s>` never appear (so no `<unk>`: the model can copy it from the source); no `</s>`
before min_words words; no word right after itself; no repeated n-gram (a word that would
complete an n-gram already in the hypothesis is banned; n = 3, trigram blocking); and optionally
any word the caller lists (`WordLists.banned`, e.g. first-person pronouns).

Two more, beyond the released code, against the repetition n-gram blocking lets through ("the
pool was clean and clean"): they apply to the words the caller lists as content words
(`WordLists.content`; the Summarizer passes alphabetic non-stopwords). `no_repeat_in_sentence`
bans a content word already used in the current sentence (since the last of
`WordLists.sentence_ends`); `max_word_repeats` = k bans a content word once the hypothesis holds
it k times. And one against restated sentences ("the staff is friendly . the staff is very
friendly"): with `restate_overlap` = s, a sentence may not end (no sentence end, no `</s>`) while
it has at least two content words and a share s of them were all in one earlier sentence, the
measure of `evaluation.style.restated_sentences`; the hypothesis must go on to say something
new, or lose to one that does.

Those three read each hypothesis' content words sentence by sentence. A search keeps them per
beam as it goes (`Said`, a word at a time) rather than recomputing them from the whole history
each step: over [N, t] and [N, V] tensors that took 14% of a service step, in a few dozen
small ops whose fixed cost dominates at the service's 10-40 beams.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch

from denoisesum.data.vocab import EOS_ID, SPECIALS


class DecodeSettings(Protocol):
    """The settings of beam.SearchConfig that the constraints read (beam.py imports this
    module, so not the class itself)."""

    min_words: int
    max_words: int
    no_repeat_ngram: int
    no_immediate_repeat: bool
    no_repeat_in_sentence: bool
    max_word_repeats: int
    restate_overlap: float
    end_at_sentence: bool


@dataclass
class WordLists:
    """Word ids (in the model's output space) that the constraints treat specially."""

    banned: Sequence[int] = ()  # never produced (e.g. first-person pronouns)
    content: Sequence[int] = ()  # for no_repeat_in_sentence, max_word_repeats, restate_overlap
    sentence_ends: Sequence[int] = ()  # a sentence ends after one of these (. ! ?)


@dataclass
class WordMasks:
    """WordLists as [V] bool masks, built once the vocabulary size is known."""

    always: torch.Tensor  # banned at every step: specials but </s>, and WordLists.banned
    content: torch.Tensor
    ends: torch.Tensor
    # content and ends as sets of ids, for Said (made on first use)
    _sets: tuple[frozenset[int], frozenset[int]] | None = field(default=None, repr=False)

    @classmethod
    def build(cls, words: WordLists, vocab_size: int, device) -> WordMasks:
        def mask(ids: Sequence[int] | torch.Tensor) -> torch.Tensor:
            out = torch.zeros(vocab_size, dtype=torch.bool, device=device)
            if not isinstance(ids, torch.Tensor):
                ids = torch.tensor(list(ids), dtype=torch.long)
            out[ids.to(device)] = True
            return out

        always = mask(words.banned)
        always[: len(SPECIALS)] = True
        always[EOS_ID] = False
        return cls(always, mask(words.content), mask(words.sentence_ends))

    def fields(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.always, self.content, self.ends

    def sets(self) -> tuple[frozenset[int], frozenset[int]]:
        """(content ids, sentence-end ids)."""
        if self._sets is None:
            content, ends = (frozenset(m.nonzero().flatten().tolist()) for m in self.fields()[1:])
            self._sets = content, ends
        return self._sets


@dataclass(frozen=True)
class SaidRules:
    """What Said tracks: the content words, the sentence ends, and which constraints are on."""

    content: frozenset[int]
    ends: frozenset[int]
    repeats: int  # max_word_repeats (0: no limit)
    restate: bool  # restate_overlap > 0: keep each finished sentence's words

    @classmethod
    def of(cls, masks: WordMasks, config: DecodeSettings) -> SaidRules:
        content, ends = masks.sets()
        return cls(content, ends, config.max_word_repeats, config.restate_overlap > 0)


def reads_said(config: DecodeSettings) -> bool:
    return bool(config.no_repeat_in_sentence or config.max_word_repeats or config.restate_overlap)


class Said:
    """The content words one hypothesis has said, as the sentence constraints read them.

    Immutable: a beam's continuations share their parent's and extend it by one word each.
    """

    __slots__ = ("capped", "earlier", "overlap", "sentence", "uses")

    def __init__(
        self,
        sentence: frozenset[int] = frozenset(),
        earlier: tuple[frozenset[int], ...] = (),
        overlap: tuple[int, ...] = (),
        uses: dict[int, int] | None = None,
        capped: frozenset[int] = frozenset(),
    ) -> None:
        self.sentence = sentence  # distinct content words of the unfinished sentence
        self.earlier = earlier  # each finished sentence's content words (with restate only)
        self.overlap = overlap  # how many of `sentence` each finished sentence has
        self.uses = uses or {}  # content word -> times said (with max_word_repeats only)
        self.capped = capped  # content words said max_word_repeats times

    @classmethod
    def of_history(cls, history: torch.Tensor, rules: SaidRules) -> list[Said]:
        """One per row of history [N, t], word by word (<pad>s are neither content nor ends)."""
        out = []
        for row in history.tolist():
            said = EMPTY
            for word in row:
                said = said.extend(word, rules)
            out.append(said)
        return out

    def extend(self, word: int, rules: SaidRules) -> Said:
        """What the hypothesis has said once `word` follows."""
        content = word in rules.content
        uses, capped = self.uses, self.capped
        if content and rules.repeats:
            uses = {**uses, word: uses.get(word, 0) + 1}
            if uses[word] >= rules.repeats:
                capped = capped | {word}
        if word in rules.ends:  # the sentence ends, with `word` in it
            earlier = self.earlier
            if rules.restate:
                earlier = (*earlier, self.sentence | {word} if content else self.sentence)
            return Said(frozenset(), earlier, (0,) * len(earlier), uses, capped)
        sentence, overlap = self.sentence, self.overlap
        if content and word not in sentence:
            sentence = sentence | {word}
            overlap = tuple(n + (word in e) for n, e in zip(overlap, self.earlier, strict=True))
        elif uses is self.uses:
            return self
        return Said(sentence, self.earlier, overlap, uses, capped)

    def restates(self, share: float) -> bool:
        """The unfinished sentence has >= 2 content words, at least `share` of which one
        finished sentence has (evaluation.style.restated_sentences, to the float)."""
        size = len(self.sentence)
        return size >= 2 and any(n >= share * size for n in self.overlap)

    def moved(self, cols: list[int]) -> Said:
        """The same words at other positions: word p is now cols[p] (_Search.in_columns)."""
        return Said(
            frozenset(cols[w] for w in self.sentence),
            tuple(frozenset(cols[w] for w in e) for e in self.earlier),
            self.overlap,
            {cols[w]: n for w, n in self.uses.items()},
            frozenset(cols[w] for w in self.capped),
        )


EMPTY = Said()


def _mark(ban: torch.Tensor, ids: torch.Tensor, hit: torch.Tensor) -> None:
    """ban[i, ids[i, j]] = True wherever hit[i, j]; ids, hit [N, W]. A max, not a scatter: the
    same word may be both hit and not hit at two places (bool as bytes: scatter_reduce has no
    bool kernel)."""
    ban.view(torch.uint8).scatter_reduce_(1, ids, hit.view(torch.uint8), "amax")


def constraint_mask(
    history: torch.Tensor,
    masks: WordMasks,
    config: DecodeSettings,
    bounds: tuple[torch.Tensor, torch.Tensor] | None = None,
    lengths: torch.Tensor | None = None,
    said: Sequence[Said] | None = None,
) -> torch.Tensor:
    """True where a next word is banned. history [N, t] words so far -> [N, V] bool.
    bounds: per-row (min_words [N], max_words [N]) instead of the config's.
    lengths: per-row words so far [N] (with bounds), where a row's history is its words after
    t - length leading <pad>s (a search that others joined later: _Search.join); <pad> is
    always banned, so no n-gram or repeat of it can ban a word.
    said: each row's Said, where the caller keeps them (else they are read from history)."""
    n, t = history.shape
    ban = masks.always.expand(n, -1).clone()  # [N, V]
    low, high = (config.min_words, config.max_words) if bounds is None else bounds
    if bounds is None and t >= high:  # only </s> is left
        ban.fill_(True)
        ban[:, EOS_ID] = False
        return ban
    length = t if lengths is None else lengths
    eos: list[torch.Tensor] = []  # [N] rows whose </s> is banned: set once, at the end
    if isinstance(low, torch.Tensor):  # per row
        eos.append(length < low)
    elif t < low:
        ban[:, EOS_ID] = True
    if config.end_at_sentence and t > 0:
        ends = masks.ends[history[:, -1]]
        eos.append(~ends if lengths is None else ~ends & (lengths > 0))
    if config.no_immediate_repeat and t > 0:
        ban.scatter_(1, history[:, -1:], True)
    size = config.no_repeat_ngram
    if size > 0 and t >= size:
        windows = history.unfold(1, size, 1)  # [N, W, size], every n-gram so far
        prefix = history[:, t - size + 1 :]  # [N, size-1], what the next word would extend
        match = (windows[:, :, :-1] == prefix.unsqueeze(1)).all(-1)  # [N, W]
        _mark(ban, windows[:, :, -1], match)
    if t > 0 and reads_said(config):
        if said is None:
            said = Said.of_history(history, SaidRules.of(masks, config))
        restated = _ban_said(ban, said, masks, config)
        if restated is not None:
            eos.append(restated)
    column = ban[:, EOS_ID]  # a view: in place, one op per condition
    for rows in eos:
        column |= rows
    if bounds is not None:  # rows at their max_words: only </s> is left
        full = length >= high  # [N] (no boolean indexing: no device sync)
        # as a [N, V] copy: an | broadcast along V runs bool by bool, 8x slower than the copy
        ban |= full.unsqueeze(1).expand_as(ban).contiguous()
        column &= ~full
    return ban


def _ban_said(
    ban: torch.Tensor, said: Sequence[Said], masks: WordMasks, config: DecodeSettings
) -> torch.Tensor | None:
    """Ban what each row's Said rules out: the content words of its unfinished sentence
    (no_repeat_in_sentence), those said max_word_repeats times, and the sentence ends of a
    row whose sentence restates an earlier one. Returns those rows [N] (for </s>), or None."""
    rows: list[int] = []
    words: list[int] = []
    restated: list[int] = []
    in_sentence, share = config.no_repeat_in_sentence, config.restate_overlap
    for i, s in enumerate(said):
        for group in (s.sentence, s.capped) if in_sentence else (s.capped,):
            rows += [i] * len(group)
            words += group
        if share and s.restates(share):
            restated.append(i)
    device = ban.device
    if words:
        ban[torch.tensor(rows, device=device), torch.tensor(words, device=device)] = True
    if not restated:
        return None
    rows_restated = torch.tensor(restated, device=device)
    ban[rows_restated] |= masks.ends
    flags = torch.zeros(len(said), dtype=torch.bool, device=device)
    flags[rows_restated] = True
    return flags
