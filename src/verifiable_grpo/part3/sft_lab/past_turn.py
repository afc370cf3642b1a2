"""Lab 1, "Try this": let generation run past the end of the turn. Does a model trained on
every token (--no-mask) go on to write the user's next turn?

Greedy, the 50 QUICK held-out prompts, 48 new tokens, and generation stops only at
<|endoftext|>, so an emitted <|im_end|> no longer ends the reply. What follows it is scored:
a new turn opened (<|im_start|>), and one opened for the user. The masked run never trained
on a user turn; the unmasked one trained on 240 of them, each right after a system line.
"""

from __future__ import annotations

from verifiable_grpo.core.config import resolve, shown_path
from verifiable_grpo.models import smollm2 as loader
from verifiable_grpo.part3.sft_lab import masked_sft
from verifiable_grpo.part3.sft_lab.settings import PastTurnSettings
from verifiable_grpo.part3.smollm2 import chat_data, evaluation, records

NAME = "sft-past-turn"
MAX_NEW_TOKENS = 48
POLICIES = {
    "masked (lab sft)": "runs/part3/sft",
    "every token (lab sft --no-mask)": "runs/part3/sft-no-mask",
}
USER_TURN = "<|im_start|>user"


def after_turn(text: str) -> str | None:
    """What a continuation holds after its first <|im_end|> (None: the marker never came)."""
    head, marker, tail = text.partition(chat_data.END_OF_TURN)
    return tail if marker else None


def summarise(texts: list[str]) -> dict:
    """Counts over continuations: emitted <|im_end|>, then opened any turn, a user turn."""
    tails = [after_turn(t) for t in texts]
    ended = [t for t in tails if t is not None]
    return {
        "n": len(texts),
        "ended_turn": len(ended),
        "opened_turn": sum("<|im_start|>" in t for t in ended),
        "opened_user_turn": sum(USER_TURN in t for t in ended),
    }


def continuations(model, tokenizer, prompts: list[str]) -> list[str]:
    generated = evaluation.greedy_ids(
        model, tokenizer, prompts, max_new_tokens=MAX_NEW_TOKENS, eos_id=chat_data.PAD_ID
    )  # <|endoftext|> only
    return [
        tokenizer.decode(ids, skip_special_tokens=False).replace("<|endoftext|>", "")
        for ids in generated
    ]


def run(out, cache=None, log=print) -> dict:
    from transformers import AutoModelForCausalLM

    done = records.finished(out, NAME)
    if done is not None:
        log(f"{out}/{NAME}-metrics.json exists: finished there (use another --out)")
        return done
    folders = {label: resolve(folder) / masked_sft.POLICY for label, folder in POLICIES.items()}
    for label, folder in folders.items():
        if not (folder / "config.json").is_file():
            options = " --no-mask --out runs/part3/sft-no-mask" if "no-mask" in label else ""
            raise FileNotFoundError(
                f"no fine-tuned model in {folder}: run `python -m "
                f"verifiable_grpo lab sft{options}` first"
            )
    started = records.start()
    _, tokenizer = loader.load(cache)
    _, held_out = chat_data.split(quick=True)
    prompts = [chat_data.render_prompt(r["user"]) for r in held_out]
    results = {}
    for label, folder in folders.items():
        texts = continuations(
            AutoModelForCausalLM.from_pretrained(str(folder)).eval(), tokenizer, prompts
        )
        results[label] = {**summarise(texts), "continuations": texts}
        log(f"{label}: {results[label]['opened_user_turn']}/{len(texts)} open a user turn")
    settings = {
        "max_new_tokens": MAX_NEW_TOKENS,
        "stop": "<|endoftext|>",
        "policies": {label: shown_path(f) for label, f in folders.items()},
    }
    metrics = {"held_out": held_out, "results": results}
    path = records.write(out, NAME, settings, metrics, started, cache)
    log(f"wrote {path}")
    return records.finished(out, NAME)


def run_lab(out, settings: PastTurnSettings, cache=None) -> dict:
    """`python -m verifiable_grpo lab sft-past-turn [--out DIR]` (after lab sft and lab sft --no-mask)."""
    return run(out, cache=cache)


def summary(metrics: dict) -> str:
    return "\n".join(
        f"{label}: ended the turn {r['ended_turn']}/{r['n']}, then opened a turn "
        f"{r['opened_turn']}, a user turn {r['opened_user_turn']}"
        for label, r in metrics["results"].items()
    )
