"""Lab 1's data: five families of synthetic engineering requests with exactly checkable
replies, the hand-written ChatML rendering, assistant-only labels, batches and the loss.

Families (each reply follows from its prompt by one rule):
- conversion: a quantity in a kilo-unit, asked in the base unit (times 1000);
- addition: the sum of two two-digit numbers;
- extraction: the bearing temperature copied out of a log line whose fields are shuffled;
- limit: PASS when a reading is at most its alarm limit, otherwise FAIL;
- sorting: three component names in alphabetical order.

Because every reply is short and exact, a held-out score is string equality. The chat
format is written out by hand rather than taken from a chat template, so the same bytes
reach a model with or without one. Training targets are the reply and the `<|im_end|>`
after it; everything before (system turn, user turn, assistant header) is context only.
"""

from __future__ import annotations

import random
from typing import TypedDict

import torch
from torch.nn import functional as F

START_OF_TURN = "<|im_start|>"  # a ChatML turn opens with this and its role name
END_OF_TURN = "<|im_end|>"  # and closes with this; a reply is trained to end on it
END_ID, START_ID, PAD_ID = 2, 1, 0  # SmolLM2's ids of <|im_end|>, <|im_start|>, <|endoftext|>
IGNORE = -100  # the label cross_entropy skips
SYSTEM = "You are an engineering assistant. Give only the answer, with no explanation."

TRAIN_PER_FAMILY = {True: 48, False: 80}  # QUICK, FULL
HELD_OUT_PER_FAMILY = 10
TRAIN_SEED, HELD_OUT_SEED = 1, 2
DRAWS_PER_ROW = 10_000  # attempts at an unused prompt before giving up


# --- The families -----------------------------------------------------------------------

KILO_UNITS = {"kW": "W", "kg": "g", "MPa": "kPa", "L": "mL", "km": "m", "kN": "N"}  # large: small
PARTS = (
    "gasket",
    "impeller",
    "rotor",
    "stator",
    "nozzle",
    "damper",
    "actuator",
    "coupling",
    "bushing",
    "manifold",
)


def _conversion(rng: random.Random) -> tuple[str, str]:
    tenths = rng.randint(1, 250)  # 0.1 to 25.0 in the large unit; the reply stays an integer
    large = rng.choice(sorted(KILO_UNITS))
    small = KILO_UNITS[large]
    return f"Express {tenths / 10:g} {large} in {small}.", f"{tenths * 100} {small}"


def _addition(rng: random.Random) -> tuple[str, str]:
    first = rng.randint(10, 99)
    second = rng.randint(10, 99)
    return f"Add {first} and {second}.", str(first + second)


def _extraction(rng: random.Random) -> tuple[str, str]:
    celsius = rng.randint(45, 115)
    fields = [
        f"bearing {celsius} C",
        f"flow {rng.randint(12, 60)} m3/h",
        f"vibration {rng.randint(5, 45) / 10:g} mm/s",
    ]
    rng.shuffle(fields)  # the wanted field is not always in the same place
    tag = f"{rng.choice('PKC')}-{rng.randint(10, 39)}"
    return f"Log {tag}: {'; '.join(fields)}. Give the bearing temperature.", f"{celsius} C"


def _limit(rng: random.Random) -> tuple[str, str]:
    alarm = rng.randint(65, 105)
    measured = alarm + rng.randint(-30, 30)  # near the limit on both sides
    verdict = "FAIL" if measured > alarm else "PASS"
    return f"Alarm limit {alarm} C, measured {measured} C. Answer PASS or FAIL.", verdict


def _sorting(rng: random.Random) -> tuple[str, str]:
    chosen = rng.sample(PARTS, 3)
    return f"Put these in alphabetical order: {', '.join(chosen)}.", ", ".join(sorted(chosen))


MAKERS = {
    "conversion": _conversion,
    "addition": _addition,
    "extraction": _extraction,
    "limit": _limit,
    "sorting": _sorting,
}
FAMILIES = tuple(MAKERS)


class ChatRow(TypedDict):
    """One question and its answer (what the data sets hold and the evaluation scores)."""

    family: str
    user: str
    reply: str


class EncodedRow(TypedDict):
    """A ChatRow as token ids, with the labels the loss reads (what the trainer, the loss and
    the evaluation take)."""

    ids: list[int]
    labels: list[int]  # IGNORE where no loss is taken
    prompt_length: int  # the system, user and assistant-header tokens


def example(family: str, rng: random.Random) -> ChatRow:
    """One row of `family` drawn with `rng`: {"family", "user", "reply"}."""
    maker = MAKERS.get(family)
    if maker is None:
        raise ValueError(f"unknown family {family!r}; the families are {', '.join(FAMILIES)}")
    user, reply = maker(rng)
    return ChatRow(family=family, user=user, reply=reply)


# --- Data sets ----------------------------------------------------------------------------


def prompts(rows: list[ChatRow]) -> set[str]:
    return {row["user"] for row in rows}


def _unused(family: str, rng: random.Random, used: set[str]) -> ChatRow:
    for _ in range(DRAWS_PER_ROW):
        row = example(family, rng)
        if row["user"] not in used:
            used.add(row["user"])
            return row
    raise ValueError(f"no unused {family} prompt after {DRAWS_PER_ROW} draws: ask for fewer rows")


def make_data(per_family: int, seed: int, exclude: set[str] = frozenset()) -> list[ChatRow]:
    """`per_family` rows of every family, all prompts distinct and none in `exclude`.

    Rows come in rounds of one per family, so every prefix of the list stays balanced."""
    rng = random.Random(seed)
    used = set(exclude)  # grows with every row drawn
    return [_unused(family, rng, used) for _ in range(per_family) for family in FAMILIES]


def split(quick: bool) -> tuple[list[ChatRow], list[ChatRow]]:
    """(train, held-out): 48 (QUICK) or 80 (FULL) rows per family drawn with seed 1, then 10
    per family with seed 2 whose prompts avoid every training prompt."""
    train = make_data(TRAIN_PER_FAMILY[bool(quick)], TRAIN_SEED)
    held_out = make_data(HELD_OUT_PER_FAMILY, HELD_OUT_SEED, exclude=prompts(train))
    assert prompts(train).isdisjoint(prompts(held_out))
    return train, held_out


# --- A sixth family, kept apart: how many letters a word has ------------------------------
# Its own words, split once by a seeded shuffle, so no held-out word is ever trained on (the
# five families' data sets above stay as they were). The reply is the word's length.

LETTER_WORDS = (
    "valve",
    "pump",
    "gear",
    "shaft",
    "rotor",
    "stator",
    "bearing",
    "gasket",
    "flange",
    "nozzle",
    "piston",
    "turbine",
    "boiler",
    "chiller",
    "damper",
    "spindle",
    "bushing",
    "coupling",
    "manifold",
    "impeller",
    "actuator",
    "sensor",
    "relay",
    "fuse",
    "cable",
    "conduit",
    "bracket",
    "hinge",
    "rivet",
    "washer",
    "spring",
    "lever",
    "pulley",
    "sprocket",
    "chain",
    "belt",
    "clutch",
    "brake",
    "caliper",
    "gauge",
    "meter",
    "thermostat",
    "compressor",
    "condenser",
    "evaporator",
    "radiator",
    "exhaust",
    "intake",
    "throttle",
    "cylinder",
    "crankshaft",
    "camshaft",
    "gearbox",
    "axle",
    "hub",
    "strut",
    "beam",
    "truss",
    "girder",
    "column",
    "anchor",
    "bolt",
    "nut",
    "screw",
)
LETTERS_FAMILY = "letters"
LETTERS_SEED, LETTERS_HELD_OUT = 4, 10


def letters_row(word: str) -> ChatRow:
    return ChatRow(
        family=LETTERS_FAMILY,
        user=f"How many letters are in the word {word}?",
        reply=str(len(word)),
    )


def letters_split(train_rows: int = 48) -> tuple[list[ChatRow], list[ChatRow]]:
    """(train, held-out) letter-counting rows: the words shuffled with LETTERS_SEED, the first
    LETTERS_HELD_OUT held out, the next `train_rows` trained on; no word is in both."""
    words = list(LETTER_WORDS)
    random.Random(LETTERS_SEED).shuffle(words)
    if not 0 < train_rows <= len(words) - LETTERS_HELD_OUT:
        raise ValueError(
            f"train_rows must be between 1 and {len(words) - LETTERS_HELD_OUT} "
            f"(the words not held out), got {train_rows}"
        )
    held_out, train = (
        words[:LETTERS_HELD_OUT],
        words[LETTERS_HELD_OUT : LETTERS_HELD_OUT + train_rows],
    )
    return [letters_row(w) for w in train], [letters_row(w) for w in held_out]


def split_with_letters(quick: bool) -> tuple[list[ChatRow], list[ChatRow]]:
    """split(quick) with the letters family as a sixth: one letters row after each round of
    the five families (so every prefix stays balanced), and its 10 held-out rows last."""
    train, held_out = split(quick)
    per_family = TRAIN_PER_FAMILY[bool(quick)]
    letters_train, letters_held = letters_split(
        min(per_family, len(LETTER_WORDS) - LETTERS_HELD_OUT)
    )
    rounds = [train[i : i + len(FAMILIES)] for i in range(0, len(train), len(FAMILIES))]
    mixed = [
        row
        for round_, extra in zip(rounds, letters_train + [None] * len(rounds))
        for row in round_ + ([extra] if extra else [])
    ]
    return mixed, held_out + letters_held


# --- Rendering and labels -------------------------------------------------------------------


def turn(role: str, content: str) -> str:
    """One finished ChatML turn."""
    return f"{START_OF_TURN}{role}\n{content}{END_OF_TURN}\n"


def render_prompt(user: str, system: str = SYSTEM) -> str:
    """System and user turns, then the open assistant header the reply is written after."""
    return turn("system", system) + turn("user", user) + f"{START_OF_TURN}assistant\n"


def encode(tokenizer, row: ChatRow, mask_prompt: bool = True, system: str = SYSTEM) -> EncodedRow:
    """Ids of the prompt, the reply and <|im_end|>, with labels (IGNORE on the prompt unless
    `mask_prompt` is False).

    The labels are found by tokenising the prompt alone and the whole conversation. A BPE
    merge across the seam (the prompt's last characters fused with the reply's first) would
    make the prompt tokens of training differ from those the model sees when it generates,
    so such a row is refused rather than silently mislabelled."""
    prompt = render_prompt(row["user"], system)
    conversation = f"{prompt}{row['reply']}{END_OF_TURN}"
    context = tokenizer.encode(prompt, add_special_tokens=False)
    ids = tokenizer.encode(conversation, add_special_tokens=False)
    n = len(context)
    if ids[:n] != context:
        raise ValueError(
            f"tokenising {row['user']!r} with its reply changed the prompt's tokens "
            "(a BPE merge across the prompt/reply seam); the prompt must end on a "
            "token boundary, as the assistant header's newline does"
        )
    if ids[-1] != END_ID:
        raise ValueError(f"this tokenizer does not encode {END_OF_TURN} as id {END_ID}")
    labels = [IGNORE] * n + ids[n:] if mask_prompt else list(ids)
    return EncodedRow(ids=ids, labels=labels, prompt_length=n)


def collate(encoded: list[EncodedRow]) -> dict:
    """Right-padded tensors: ids (PAD_ID), labels (IGNORE) and the attention mask."""
    rows, width = len(encoded), max(len(e["ids"]) for e in encoded)
    ids = torch.full((rows, width), PAD_ID, dtype=torch.long)
    labels = torch.full((rows, width), IGNORE, dtype=torch.long)
    mask = torch.zeros((rows, width), dtype=torch.long)
    for row, e in enumerate(encoded):
        length = len(e["ids"])
        ids[row, :length] = torch.tensor(e["ids"])
        labels[row, :length] = torch.tensor(e["labels"])
        mask[row, :length] = 1
    return {"input_ids": ids, "labels": labels, "attention_mask": mask}


def batch_loss(model, encoded: list[EncodedRow]) -> tuple[torch.Tensor, int]:
    """(sum of next-token NLL over the target positions, how many there are).

    Returning the sum lets the caller divide once over many batches: a token mean, not a
    mean of batch means."""
    batch = collate(encoded)
    wanted = batch["labels"][:, 1:].flatten()  # position t predicts token t + 1
    targets = wanted != IGNORE
    output = model.get_output_embeddings()
    if torch.is_grad_enabled() and output.weight.requires_grad:
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        total = F.cross_entropy(
            logits[:, :-1].flatten(0, 1).float(), wanted, ignore_index=IGNORE, reduction="sum"
        )
    else:
        total = _target_positions_loss(model, output, batch, wanted, targets)
    return total, int(targets.sum())


def _target_positions_loss(model, output, batch, wanted, targets) -> torch.Tensor:
    """batch_loss with logits at the target positions only (about a tenth of Lab 1's).

    The output layer and the vocabulary-wide softmax then cost a tenth: a LoRA update takes
    about a third less time on a 2-core CPU. The per-token losses go back to their places and
    nll_loss sums them with the same skipped positions as cross_entropy over all logits, so
    in the same order: on SmolLM2 the loss and the gradients of everything below the output
    layer keep their bits. The output weight's own gradient would not (its sum over
    positions loses the zero rows), hence batch_loss takes this path only when that weight
    is frozen (Lab 2) or no gradient is taken (evaluation)."""
    hidden = model.get_decoder()(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
    ).last_hidden_state
    logits = output(hidden[:, :-1].flatten(0, 1)[targets]).float()
    per_token = F.cross_entropy(logits, wanted[targets], reduction="none")
    # one column of -loss per position (0 where skipped): nll_loss picks column 0 back out
    placed = per_token.new_zeros(len(wanted), 1).masked_scatter(targets[:, None], -per_token)
    return F.nll_loss(placed, torch.where(targets, 0, IGNORE), ignore_index=IGNORE, reduction="sum")


def trained_fraction(encoded: list[EncodedRow]) -> float:
    """The share of next-token positions (every position but the first) that are targets."""
    positions = sum(len(e["ids"]) - 1 for e in encoded)
    targets = sum(label != IGNORE for e in encoded for label in e["labels"][1:])
    return targets / positions


def token_table(tokenizer, encoded: EncodedRow) -> list[dict]:
    """One conversation token by token: position, id, decoded text, whether it is a target."""
    return [
        {
            "position": position,
            "id": token,
            "token": tokenizer.decode([token]),
            "target": label != IGNORE,
        }
        for position, (token, label) in enumerate(zip(encoded["ids"], encoded["labels"]))
    ]
