"""Lab 1's data: five families of synthetic engineering instructions, ChatML rendering,
assistant-only labels, batching and the masked token-mean loss.

Every reply is short and exactly checkable, so a held-out score is string equality. The
rendering is written by hand (not a chat template) so the same bytes reach a base model
without a template and an instruct model with one. Only the reply and its closing
`<|im_end|>` are targets: the system line, the user turn and the assistant header are
context the model reads but is never trained to produce.
"""
from __future__ import annotations

import random

import torch
from torch.nn import functional as F

FAMILIES = ("conversion", "addition", "extraction", "limit", "sorting")
COMPONENTS = ("valve", "pump", "seal", "bearing", "shaft", "motor", "filter", "pipe", "flange",
              "sensor")
UNITS = (("MPa", "kPa"), ("kN", "N"), ("m", "mm"), ("km", "m"))
SYSTEM = "You are a concise engineering assistant. Reply with the answer only."
END_OF_TURN = "<|im_end|>"
END_ID, START_ID, PAD_ID = 2, 1, 0  # <|im_end|>, <|im_start|>, <|endoftext|> in SmolLM2
IGNORE = -100  # cross_entropy's ignore_index


def example(family: str, rng: random.Random) -> dict:
    """One (family, user prompt, reply) drawn with `rng`."""
    if family == "conversion":
        value, (src, tgt) = rng.randint(1, 80) / 4, rng.choice(UNITS)
        user, reply = f"Convert {value:g} {src} to {tgt}.", f"{1000 * value:g} {tgt}"
    elif family == "addition":
        a, b = rng.randint(10, 99), rng.randint(10, 99)
        user, reply = f"What is {a} + {b}?", str(a + b)
    elif family == "extraction":
        temp, pump, vib = rng.randint(50, 110), rng.randint(100, 109), rng.randint(1, 40) / 10
        user = (f"Log P-{pump}: bearing {temp} C; vibration {vib:g} mm/s. "
                "Extract the bearing temperature.")
        reply = f"{temp} C"
    elif family == "limit":
        limit, reading = rng.randint(60, 100), rng.randint(40, 120)
        user = f"Limit: {limit} C. Reading: {reading} C. Reply PASS or FAIL."
        reply = "PASS" if reading <= limit else "FAIL"
    elif family == "sorting":
        parts = rng.sample(COMPONENTS, 3)
        user, reply = f"Sort alphabetically: {', '.join(parts)}.", ", ".join(sorted(parts))
    else:
        raise ValueError(f"unknown family {family!r}; the families are {', '.join(FAMILIES)}")
    return {"family": family, "user": user, "reply": reply}


def make_data(per_family: int, seed: int, exclude: set[str] = frozenset()) -> list[dict]:
    """`per_family` rows of each family with distinct prompts, none in `exclude`, round-robin
    over the families so any prefix of the list is balanced."""
    rng, seen, rows = random.Random(seed), set(exclude), []
    counts = dict.fromkeys(FAMILIES, 0)
    while min(counts.values()) < per_family:
        for family in FAMILIES:
            if counts[family] == per_family:
                continue
            for _ in range(10_000):  # every family has far more distinct prompts than asked for
                row = example(family, rng)
                if row["user"] not in seen:
                    break
            else:
                raise ValueError(f"cannot draw {per_family} distinct {family} prompts")
            seen.add(row["user"])
            rows.append(row)
            counts[family] += 1
    return rows


def split(quick: bool) -> tuple[list[dict], list[dict]]:
    """(train, held-out): 48 (QUICK) or 80 per family with seed 1; 10 per family with seed 2,
    disjoint from train by prompt."""
    train = make_data(48 if quick else 80, seed=1)
    held_out = make_data(10, seed=2, exclude={r["user"] for r in train})
    assert not {r["user"] for r in train} & {r["user"] for r in held_out}
    return train, held_out


def render_prompt(user: str, system: str = SYSTEM) -> str:
    """ChatML up to and including the assistant header the reply follows."""
    return (f"<|im_start|>system\n{system}{END_OF_TURN}\n<|im_start|>user\n{user}{END_OF_TURN}\n"
            "<|im_start|>assistant\n")


def encode(tokenizer, row: dict, mask_prompt: bool = True, system: str = SYSTEM) -> dict:
    """Token ids of prompt + reply + <|im_end|> and their labels (-100 where not a target).

    Tokenising the whole text at once could merge the last prompt token with the first
    reply token (a BPE merge across the boundary); then the prompt tokens seen in training
    would differ from the ones seen at generation time. That is refused here."""
    prompt = render_prompt(row["user"], system)
    prompt_ids = tokenizer.encode(prompt, add_special_tokens=False)
    ids = tokenizer.encode(prompt + row["reply"] + END_OF_TURN, add_special_tokens=False)
    if ids[:len(prompt_ids)] != prompt_ids:
        raise ValueError(f"BPE changed the response boundary of {row['user']!r}: the prompt's "
                         "tokens are not a prefix of the conversation's; end the prompt on a "
                         "token boundary (the assistant header's newline does)")
    if ids[-1] != END_ID:
        raise ValueError(f"{END_OF_TURN} is not token {END_ID} for this tokenizer")
    labels = ([IGNORE] * len(prompt_ids) + ids[len(prompt_ids):]) if mask_prompt else list(ids)
    return {"ids": ids, "labels": labels, "prompt_length": len(prompt_ids)}


def collate(encoded: list[dict]) -> dict:
    """Right-padded ids (pad 0), labels (-100 on padding) and the attention mask."""
    width = max(len(e["ids"]) for e in encoded)
    ids = torch.full((len(encoded), width), PAD_ID, dtype=torch.long)
    labels = torch.full((len(encoded), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(encoded), width), dtype=torch.long)
    for i, e in enumerate(encoded):
        n = len(e["ids"])
        ids[i, :n], labels[i, :n], mask[i, :n] = torch.tensor(e["ids"]), torch.tensor(e["labels"]), 1
    return {"input_ids": ids, "labels": labels, "attention_mask": mask}


def batch_loss(model, encoded: list[dict]) -> tuple[torch.Tensor, int]:
    """(summed next-token NLL over target positions, number of targets): the caller divides,
    so a loss over several batches is a token mean, not a mean of batch means."""
    batch = collate(encoded)
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    targets = batch["labels"][:, 1:]
    total = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                            targets.reshape(-1), ignore_index=IGNORE, reduction="sum")
    return total, int((targets != IGNORE).sum())


def trained_fraction(encoded: list[dict]) -> float:
    """Share of the shifted (next-token) positions that are targets."""
    targets = sum(sum(1 for label in e["labels"][1:] if label != IGNORE) for e in encoded)
    return targets / sum(len(e["ids"]) - 1 for e in encoded)


def token_table(tokenizer, encoded: dict) -> list[dict]:
    """Per token of one conversation: position, id, its text, and whether it is a target."""
    return [{"position": i, "id": token, "token": tokenizer.decode([token]),
             "target": encoded["labels"][i] != IGNORE} for i, token in enumerate(encoded["ids"])]
