"""The digit-addition policy shared by Labs 4 and 5: a 24,043-parameter GRU language model.

The task: a prompt is two digits (a, b); a response is the decimal string of a + b followed
by EOS. The vocabulary is the ten digits plus EOS (id 10), which also serves as the
beginning-of-response input. Responses hold at most MAXLEN tokens, EOS included.

The reference policy is trained on deliberately noisy answers (45% correct), so that its
sampled accuracy (about 48%) is far below its greedy accuracy (100%): preference and RL
methods then have something to reshape. The operations and their order follow the
post-training module exactly, so its printed figures reproduce to the digit.
"""
from __future__ import annotations

import copy
import functools

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

EOS = 10
MAXLEN = 5
VOCAB = 11
ALL_PROMPTS = torch.tensor([(a, b) for a in range(10) for b in range(10)])


class DigitPolicy(nn.Module):
    """Prompt embeddings -> initial GRU state; the GRU then reads the previous token."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, 32)
        self.context = nn.Linear(64, 64)
        self.gru = nn.GRU(32, 64, batch_first=True)
        self.head = nn.Linear(64, VOCAB)

    def initial(self, prompts):
        context = self.embedding(prompts).reshape(-1, 64)
        return torch.tanh(self.context(context)).unsqueeze(0)

    def forward(self, prompts, previous):
        hidden, _ = self.gru(self.embedding(previous), self.initial(prompts))
        return self.head(hidden)

    def step(self, previous, hidden):
        output, hidden = self.gru(self.embedding(previous).unsqueeze(1), hidden)
        return self.head(output[:, 0]), hidden


def parameter_count(policy: nn.Module) -> int:
    return sum(p.numel() for p in policy.parameters())


# --------------------------------------------------------------------------- text <-> ids
def encode_responses(replies: list[str]) -> torch.Tensor:
    """Digit strings -> (N, MAXLEN) ids, EOS-terminated and EOS-padded."""
    targets = torch.full((len(replies), MAXLEN), EOS, dtype=torch.long)
    for i, reply in enumerate(replies):
        if not reply.isdigit() or len(reply) >= MAXLEN:
            raise ValueError(f"response {reply!r} must be 1 to {MAXLEN - 1} digits "
                             f"(EOS takes the last of {MAXLEN} slots)")
        targets[i, :len(reply) + 1] = torch.tensor([int(c) for c in reply] + [EOS])
    return targets


def decode(targets: torch.Tensor) -> list[str]:
    """(N, MAXLEN) ids -> the digits before the first EOS (all MAXLEN if none)."""
    replies = []
    for row in targets.tolist():
        end = row.index(EOS) if EOS in row else MAXLEN
        replies.append("".join(str(token) for token in row[:end]))
    return replies


def answers(prompts: torch.Tensor) -> list[str]:
    return [str(int(p.sum())) for p in prompts]


# --------------------------------------------------------------------------- likelihoods
def token_logprobs(policy, prompts, targets):
    """Per-token log-probabilities and the mask that keeps tokens up to the first EOS.

    The first EOS is a target (the model must learn to stop); positions after it are
    padding and drop out of every likelihood."""
    previous = torch.cat([torch.full((len(prompts), 1), EOS), targets[:, :-1]], dim=1)
    logp = F.log_softmax(policy(prompts, previous), dim=-1)
    chosen = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    end = (targets == EOS).long()
    mask = (end.cumsum(1) - end == 0).float()     # 1 up to and including the first EOS
    return chosen, mask


def sequence_logprob(policy, prompts, targets):
    chosen, mask = token_logprobs(policy, prompts, targets)
    return (chosen * mask).sum(1)


def masked_nll(policy, prompts, targets):
    """Token-mean negative log-likelihood over the batch (the SFT loss)."""
    logp, mask = token_logprobs(policy, prompts, targets)
    return -(logp * mask).sum() / mask.sum()


@torch.no_grad()
def sample(policy, prompts, greedy: bool = False) -> torch.Tensor:
    """Temperature-1 ancestral sampling (or argmax); after EOS every token is EOS.

    Draws one torch.multinomial per position for the whole batch: the global torch RNG
    is the only source of randomness, so seeding it fixes the samples."""
    policy.eval()
    hidden = policy.initial(prompts)
    previous = torch.full((len(prompts),), EOS)
    result = torch.full((len(prompts), MAXLEN), EOS, dtype=torch.long)
    alive = torch.ones(len(prompts), dtype=torch.bool)
    for t in range(MAXLEN):
        logits, hidden = policy.step(previous, hidden)
        if greedy:
            token = logits.argmax(-1)
        else:
            token = torch.multinomial(F.softmax(logits, dim=-1), 1).squeeze(1)
        token = torch.where(alive, token, EOS)
        result[:, t] = token
        alive &= token != EOS
        previous = token
    return result


# --------------------------------------------------------------------------- reference
def noisy_replies(prompts: torch.Tensor, rng: np.random.Generator) -> list[str]:
    """45% correct, 30% off by one or two, 10% hedged (the answer followed by another
    digit string), 15% a uniform number 0..18. One rng.random() per prompt decides."""
    replies = []
    for a, b in prompts.tolist():
        correct, branch = a + b, rng.random()
        if branch < 0.45:
            reply = str(correct)
        elif branch < 0.75:
            near = [v for v in (correct - 2, correct - 1, correct + 1, correct + 2) if 0 <= v <= 18]
            reply = str(rng.choice(near))
        elif branch < 0.85:
            reply = str(correct) + str(correct - 1 if correct else 1)
        else:
            reply = str(rng.integers(0, 19))
        replies.append(reply)
    return replies


@functools.lru_cache(maxsize=1)
def _trained_reference(steps: int, batch: int, seed: int) -> DigitPolicy:
    torch.manual_seed(seed)
    policy, rng = DigitPolicy(), np.random.default_rng(seed)
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    for _ in range(steps):
        prompts = torch.tensor(rng.integers(0, 10, (batch, 2)))
        targets = encode_responses(noisy_replies(prompts, rng))
        optimizer.zero_grad(set_to_none=True)
        masked_nll(policy, prompts, targets).backward()
        optimizer.step()
    return policy.eval()


def train_reference(steps: int = 600, batch: int = 256, seed: int = 0) -> DigitPolicy:
    """The frozen reference (Adam 3e-3 on noisy replies). Cached per process: Labs 4 and
    5 rebuild the same weights, so a second call returns a frozen copy of the first."""
    reference = copy.deepcopy(_trained_reference(steps, batch, seed))
    for parameter in reference.parameters():
        parameter.requires_grad_(False)
    return reference


def trainable_copy(reference: DigitPolicy) -> DigitPolicy:
    policy = copy.deepcopy(reference)
    for parameter in policy.parameters():
        parameter.requires_grad_(True)
    return policy


# --------------------------------------------------------------------------- metrics
@torch.inference_mode()
def task_metrics(policy, reference, per_prompt: int = 16, seed: int = 88) -> dict:
    """Sampled exact accuracy, a Monte Carlo sequence KL and mean length on all prompts.

    The global RNG is forked, so evaluating never changes later training samples. The KL
    is the mean of log pi(y) - log pi_ref(y) over the policy's own samples: an unbiased
    estimate of KL(pi || pi_ref) per sequence, which can come out slightly negative."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        prompts = ALL_PROMPTS.repeat_interleave(per_prompt, 0)
        targets = sample(policy, prompts)
        replies = decode(targets)
        correct = [reply == answer for reply, answer in zip(replies, answers(prompts))]
        kl = (sequence_logprob(policy, prompts, targets)
              - sequence_logprob(reference, prompts, targets)).mean()
        return dict(accuracy=float(np.mean(correct)), kl=float(kl),
                    length=float(np.mean([len(r) for r in replies])))


def greedy_accuracy(policy) -> float:
    replies = decode(sample(policy, ALL_PROMPTS, greedy=True))
    return float(np.mean([r == a for r, a in zip(replies, answers(ALL_PROMPTS))]))
