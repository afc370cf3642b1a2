"""Lab 4, Try this, on a real model: on-policy preference pairs from SmolLM2-135M-Instruct.

The model samples several replies to each of Lab 1's training prompts; a checker scores
each reply; a prompt with at least one passing and one failing sample gives one pair
(the first passing sample is chosen, the first failing one rejected). The checker is
Lab 1's exact match (`exact_answer`: the reply stops and is the expected answer); a
looser one (`answer_given`: the answer appears as a whole word) is reported beside it.

A pair keeps the sampled token ids as they were generated, so the log-probabilities DPO
compares are those of the very sequences the model produced: a sample that did not stop
ends where the token limit cut it, with no <|im_end|> added.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import TypedDict

import torch

from verifiable_grpo.part3.smollm2.chat_data import END_ID, IGNORE, PAD_ID, ChatRow, render_prompt


class Pair(TypedDict):
    family: str
    user: str
    expected: str
    prompt_ids: list[int]
    chosen_ids: list[int]  # the reply's sampled ids, up to and including <|im_end|>
    rejected_ids: list[int]
    chosen: str  # decoded, for the reader
    rejected: str


def cut(new_ids: list[int]) -> tuple[list[int], bool]:
    """The sampled ids up to and including the first <|im_end|>; whether it was emitted."""
    if END_ID in new_ids:
        return new_ids[: new_ids.index(END_ID) + 1], True
    return list(new_ids), False


def answer_given(expected: str, text: str, stopped: bool) -> bool:
    """The checker: the reply stopped and holds `expected` as a whole word (not inside a
    longer number or word: "60" is not found in "160" or "600")."""
    pattern = r"(?<![\w.])" + re.escape(expected) + r"(?![\w])"
    return stopped and re.search(pattern, text) is not None


def exact_answer(expected: str, text: str, stopped: bool) -> bool:
    """The pair checker, Lab 1's rule: the reply stopped and is exactly the answer."""
    return stopped and text == expected


def check_pairs(pairs: list[Pair]) -> None:
    """Refuse malformed pairs before any training: no pairs, an empty reply, identical
    replies, or a chosen reply that fails (or a rejected one that passes) the checker."""
    if not pairs:
        raise ValueError("no preference pairs: sample more replies or more prompts")
    for index, pair in enumerate(pairs):
        if not pair["chosen_ids"] or not pair["rejected_ids"]:
            raise ValueError(f"pair {index} ({pair['user']!r}) has an empty reply")
        if pair["chosen_ids"] == pair["rejected_ids"]:
            raise ValueError(f"pair {index} ({pair['user']!r}): chosen and rejected are identical")
        for role, wanted in (("chosen", True), ("rejected", False)):
            ids = pair[f"{role}_ids"]
            if exact_answer(pair["expected"], pair[role], ids[-1] == END_ID) != wanted:
                raise ValueError(
                    f"pair {index} ({pair['user']!r}): the {role} reply "
                    f"{pair[role]!r} {'fails' if wanted else 'passes'} the checker"
                )


@dataclass(frozen=True)
class ReplySampling:
    """How replies are sampled for pairs: replies per prompt, temperature, reply budget and
    the seed of the first prompt (prompt k uses seed + k)."""

    samples: int = 4
    temperature: float = 1.0
    max_new_tokens: int = 24
    seed: int = 0


@torch.no_grad()
def sample_replies(
    model, tokenizer, prompts: list[str], sampling: ReplySampling
) -> list[list[list[int]]]:
    """`samples` sampled replies (new ids, uncut) per prompt, one seeded batch per prompt."""
    samples, temperature, seed = sampling.samples, sampling.temperature, sampling.seed
    max_new_tokens = sampling.max_new_tokens
    out = []
    for index, prompt in enumerate(prompts):
        torch.manual_seed(seed + index)  # a prompt's samples do not depend on the others
        ids = torch.tensor([tokenizer.encode(prompt, add_special_tokens=False)] * samples)
        generated = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            do_sample=True,
            temperature=temperature,
            top_p=None,
            top_k=None,
            max_new_tokens=max_new_tokens,
            eos_token_id=END_ID,
            pad_token_id=PAD_ID,
        )
        out.append([g[ids.shape[1] :].tolist() for g in generated])
    return out


def collect_pairs(
    model,
    tokenizer,
    rows: list[ChatRow],
    wanted: int,
    sampling: ReplySampling = ReplySampling(),
    log=print,
) -> tuple[list[Pair], int]:
    """(up to `wanted` pairs, prompts sampled): rows are tried in order until enough pairs."""
    pairs, tried = [], 0
    for row in rows:
        if len(pairs) == wanted:
            break
        prompt = render_prompt(row["user"])
        this_prompt = dataclasses.replace(sampling, seed=sampling.seed + tried)
        replies = sample_replies(model, tokenizer, [prompt], this_prompt)[0]
        tried += 1
        scored = []
        for new_ids in replies:
            ids, stopped = cut(new_ids)
            text = tokenizer.decode(ids[:-1] if stopped else ids, skip_special_tokens=False).strip()
            scored.append((ids, text, exact_answer(row["reply"], text, stopped)))
        good = [s for s in scored if s[2]]
        bad = [s for s in scored if not s[2]]
        if good and bad and good[0][0] != bad[0][0]:
            pairs.append(
                Pair(
                    family=row["family"],
                    user=row["user"],
                    expected=row["reply"],
                    prompt_ids=tokenizer.encode(prompt, add_special_tokens=False),
                    chosen_ids=good[0][0],
                    rejected_ids=bad[0][0],
                    chosen=good[0][1],
                    rejected=bad[0][1],
                )
            )
            if len(pairs) % 16 == 0:
                log(f"{len(pairs)} pairs from {tried} prompts")
    return pairs, tried


def sequence_logprobs(
    model, prompt_ids: list[list[int]], reply_ids: list[list[int]]
) -> torch.Tensor:
    """log pi(reply | prompt), summed over the reply's tokens, one value per row (right-padded
    batch; the prompt and the padding carry no label)."""
    rows = [p + r for p, r in zip(prompt_ids, reply_ids)]
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), PAD_ID, dtype=torch.long)
    labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (p, r) in enumerate(zip(prompt_ids, reply_ids)):
        ids[i, : len(p) + len(r)] = torch.tensor(p + r)
        labels[i, len(p) : len(p) + len(r)] = torch.tensor(r)
        mask[i, : len(p) + len(r)] = 1
    logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
    targets = labels[:, 1:]
    picked = torch.log_softmax(logits, dim=-1).gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    return (picked * (targets != IGNORE)).sum(dim=1)
