"""The small recurrent policy that Labs 4 and 5 train: it answers "a + b" for two digits.

Vocabulary: token ids 0-9 are the digits and id 10 (EOS) ends a reply; EOS is also the
token fed in before the first reply token. A reply occupies MAXLEN slots, EOS included,
so it carries one to four digits. The network (24,043 parameters) turns the two prompt
digits into the GRU's starting state and then reads the reply one token at a time.

The frozen reference is fitted to answers that are right only 45% of the time, which makes
its samples mostly wrong although its argmax answer is always right: that gap is what the
preference and RL labs then work on. Every random draw below (parameter initialisation,
numpy noise, one multinomial per position) happens in the order the post-training module
makes it, which is why the labs reproduce its printed figures.
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import torch
from torch import nn
from torch.nn.functional import log_softmax

EOS = 10
MAXLEN = 5
VOCAB = 11
# The 100 prompts (a, b), a-major: (0, 0), (0, 1), ..., (9, 9).
ALL_PROMPTS = torch.cartesian_prod(torch.arange(10), torch.arange(10))

_EMBED = 32  # width of a token embedding
_STATE = 64  # GRU state width (also two concatenated prompt embeddings)


class DigitPolicy(nn.Module):
    """Two prompt-digit embeddings, concatenated, set the GRU's initial state."""

    def __init__(self):
        nn.Module.__init__(self)
        # Creation order fixes which torch draws initialise which weights: keep it.
        self.token_vectors = nn.Embedding(VOCAB, _EMBED)
        self.prompt_to_state = nn.Linear(2 * _EMBED, _STATE)
        self.recurrent = nn.GRU(_EMBED, _STATE, batch_first=True)  # (N, T, features)
        self.readout = nn.Linear(_STATE, VOCAB)

    def start_state(self, prompts: torch.Tensor) -> torch.Tensor:
        """(N, 2) digits -> (1, N, STATE) starting state of the GRU."""
        both_digits = self.token_vectors(prompts).flatten(1)
        return self.prompt_to_state(both_digits).tanh()[None]

    def forward(self, prompts: torch.Tensor, previous: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: logits (N, T, VOCAB) for the tokens that follow `previous`."""
        states, _ = self.recurrent(self.token_vectors(previous), self.start_state(prompts))
        return self.readout(states)

    def step(self, previous: torch.Tensor, hidden: torch.Tensor):
        """One decoding step: logits (N, VOCAB) for the next token and the new state."""
        states, hidden = self.recurrent(self.token_vectors(previous)[:, None], hidden)
        return self.readout(states.squeeze(1)), hidden


def parameter_count(policy: nn.Module) -> int:
    return sum(weight.numel() for weight in policy.parameters())


# --------------------------------------------------------------------------- text and ids
def encode_responses(replies: list[str]) -> torch.Tensor:
    """Reply strings -> (N, MAXLEN) long ids: the digits, one EOS, then EOS padding."""
    rows = []
    for text in replies:
        if not text.isdigit() or len(text) > MAXLEN - 1:
            raise ValueError(
                f"response {text!r} must be 1 to {MAXLEN - 1} digits "
                f"(EOS takes the last of {MAXLEN} slots)"
            )
        rows.append([int(ch) for ch in text] + [EOS] * (MAXLEN - len(text)))
    return torch.tensor(rows, dtype=torch.long).reshape(len(replies), MAXLEN)


def decode(targets: torch.Tensor) -> list[str]:
    """(N, MAXLEN) ids -> text of the digits before the first EOS (a reply with no EOS
    keeps all MAXLEN tokens)."""
    texts = []
    for ids in targets.tolist():
        digits = []
        for token in ids:
            if token == EOS:
                break
            digits.append(str(token))
        texts.append("".join(digits))
    return texts


def answers(prompts: torch.Tensor) -> list[str]:
    """The correct reply text for each (a, b) prompt."""
    return [str(a + b) for a, b in prompts.tolist()]


# --------------------------------------------------------------------------- likelihoods
def _through_first_eos(targets: torch.Tensor) -> torch.Tensor:
    """1.0 at every slot up to and including the first EOS, 0.0 on the padding after it."""
    is_eos = (targets == EOS).long()
    eos_strictly_before = is_eos.cumsum(1) - is_eos
    return (eos_strictly_before == 0).float()


def token_logprobs(policy, prompts, targets):
    """(log pi(token) at each slot, mask): the first EOS counts (stopping is learnt), the
    padding after it does not enter any likelihood."""
    start = torch.full((targets.shape[0], 1), EOS)
    inputs = torch.cat((start, targets[:, :-1]), 1)  # shifted right by one
    log_probs = log_softmax(policy(prompts, inputs), dim=-1)
    picked = torch.gather(log_probs, -1, targets[..., None])[..., 0]
    return picked, _through_first_eos(targets)


def sequence_logprob(policy, prompts, targets):
    """log pi(whole reply) = the masked sum of its token log-probabilities."""
    per_token, keep = token_logprobs(policy, prompts, targets)
    return torch.sum(per_token * keep, dim=1)


def masked_nll(policy, prompts, targets):
    """The SFT loss: negative log-likelihood averaged over every kept token of the batch."""
    per_token, keep = token_logprobs(policy, prompts, targets)
    kept = per_token * keep
    return -kept.sum() / keep.sum()


# --------------------------------------------------------------------------- decoding
@torch.no_grad()
def sample(policy, prompts, greedy: bool = False) -> torch.Tensor:
    """Generate (N, MAXLEN) replies at temperature 1, or by argmax with `greedy`.

    Randomness comes only from torch's global generator, one multinomial call per slot for
    the whole batch, so a manual_seed before the call fixes the replies. Once a row has
    produced EOS, all its later slots are EOS."""
    policy.eval()
    count = prompts.shape[0]
    state = policy.start_state(prompts)
    fed = torch.full((count,), EOS)
    finished = torch.zeros(count, dtype=torch.bool)
    columns = []
    for _ in range(MAXLEN):
        logits, state = policy.step(fed, state)
        if greedy:
            drawn = logits.argmax(dim=-1)
        else:
            drawn = torch.multinomial(logits.softmax(dim=-1), 1)[:, 0]
        drawn = drawn.masked_fill(finished, EOS)
        columns.append(drawn)
        finished = finished | (drawn == EOS)
        fed = drawn
    return torch.stack(columns, dim=1)


# --------------------------------------------------------------------------- reference
_CORRECT, _NEAR_MISS, _HEDGED = 0.45, 0.75, 0.85  # cumulative branch thresholds


def _one_noisy_reply(total: int, rng: np.random.Generator) -> str:
    """One draw decides the kind of reply; near misses and random numbers draw again."""
    u = rng.random()
    if u < _CORRECT:
        return str(total)
    if u < _NEAR_MISS:  # off by one or two, kept in 0..18
        offsets = [total + d for d in (-2, -1, 1, 2)]
        return str(rng.choice([v for v in offsets if 0 <= v <= 18]))
    if u < _HEDGED:  # the answer, then another number
        return f"{total}{total - 1 if total else 1}"
    return str(rng.integers(0, 19))  # anything from 0 to 18


def noisy_replies(prompts: torch.Tensor, rng: np.random.Generator) -> list[str]:
    """Training replies for the reference: 45% right, 30% near misses, 10% hedged (the
    answer with digits appended), 15% uniform in 0..18."""
    return [_one_noisy_reply(a + b, rng) for a, b in prompts.tolist()]


@functools.lru_cache(maxsize=1)
def _fitted_reference(steps: int, batch: int, seed: int) -> DigitPolicy:
    torch.manual_seed(seed)  # before construction: it draws the weights
    model = DigitPolicy()
    noise = np.random.default_rng(seed)
    adam = torch.optim.Adam(model.parameters(), 3e-3)
    for _ in range(steps):
        digits = torch.tensor(noise.integers(0, 10, (batch, 2)))
        replies = encode_responses(noisy_replies(digits, noise))
        adam.zero_grad(set_to_none=True)
        masked_nll(model, digits, replies).backward()
        adam.step()
    model.eval()
    return model


def _copy_with_grad(model: DigitPolicy, trainable: bool) -> DigitPolicy:
    duplicate = copy.deepcopy(model)
    duplicate.requires_grad_(trainable)
    return duplicate


def train_reference(steps: int = 600, batch: int = 256, seed: int = 0) -> DigitPolicy:
    """The frozen reference policy (Adam, lr 3e-3, on noisy replies). Training happens
    once per process and settings; every call returns a fresh frozen copy."""
    return _copy_with_grad(_fitted_reference(steps, batch, seed), False)


def trainable_copy(reference: DigitPolicy) -> DigitPolicy:
    """A copy of `reference` whose weights take gradients (the policy to train)."""
    return _copy_with_grad(reference, True)


# --------------------------------------------------------------------------- evaluation
@torch.inference_mode()
def task_metrics(policy, reference, per_prompt: int = 16, seed: int = 88) -> dict:
    """Exact-match accuracy of sampled replies, a sampled sequence KL and the mean reply
    length, over `per_prompt` samples of each of the 100 prompts.

    The evaluation seeds a forked generator, so it leaves the training draws untouched.
    The KL figure averages log pi - log pi_ref over the policy's own samples: unbiased for
    KL(pi || pi_ref) per reply, and able to dip slightly below zero by chance."""
    prompts = ALL_PROMPTS.repeat_interleave(per_prompt, 0)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        replies = sample(policy, prompts)
        texts = decode(replies)
        hits = [text == truth for text, truth in zip(texts, answers(prompts))]
        log_ratio = sequence_logprob(policy, prompts, replies) - sequence_logprob(
            reference, prompts, replies
        )
        return {
            "accuracy": float(np.mean(hits)),
            "kl": float(log_ratio.mean()),
            "length": float(np.mean([len(text) for text in texts])),
        }


def greedy_accuracy(policy) -> float:
    """Fraction of the 100 prompts whose argmax reply is right."""
    texts = decode(sample(policy, ALL_PROMPTS, greedy=True))
    return float(np.mean([text == truth for text, truth in zip(texts, answers(ALL_PROMPTS))]))
