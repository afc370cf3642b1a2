"""Chat rendering: what the model reads, and which tokens a training row supervises.

The model sees one user turn (the statement and the formatting instruction) rendered by
the tokenizer's own chat template with the assistant header appended. A training row is
that prompt, then the response tokens, then the end-of-turn token (EOS); only the response
and its EOS are supervised. Nothing is ever truncated: an example over the token budget is
an error, because silently cutting it would train on a different task.
"""

from __future__ import annotations

from typing import Any

import torch

from verifiable_grpo.core.config import canonical_json, sha256_bytes
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.scoring import collate  # noqa: F401  (rows are built here, batched there)
from verifiable_grpo.task.statements import render_statement, user_message

# A fixed problem whose rendered prompt goes into every run identity: a changed chat
# template (e.g. another default system message) then changes the identity.
PROBE_PROBLEM = {"initial": 12, "deliveries": [5, 7], "withdrawals": [3, 4]}


def messages_for(statement: str, config: Profile | None = None) -> list[dict[str, str]]:
    """The conversation a problem is put to the model as (data.prompt of the config)."""
    if config is not None and config.data.prompt == "small-sums-2shot":
        from verifiable_grpo.task import small_sums

        return small_sums.messages(statement)
    if config is not None and "/" in config.data.prompt:  # FAMILY/TEMPLATE
        from verifiable_grpo.task import thinking_template

        family, template = config.data.prompt.split("/")
        return thinking_template.messages(family, statement, template)
    return [{"role": "user", "content": user_message(statement)}]


def _as_ids(rendered: Any) -> list[int]:
    """apply_chat_template returns a list or (transformers 5) a mapping; normalise to ids."""
    if hasattr(rendered, "keys") and "input_ids" in rendered:
        rendered = rendered["input_ids"]
    if isinstance(rendered, torch.Tensor):
        rendered = rendered.tolist()
    if rendered and isinstance(rendered[0], list):
        if len(rendered) != 1:
            raise ValueError("expected one rendered conversation")
        rendered = rendered[0]
    return [int(i) for i in rendered]


def render_ids(tokenizer, messages: list[dict], add_generation_prompt: bool) -> list[int]:
    return _as_ids(
        tokenizer.apply_chat_template(
            messages, add_generation_prompt=add_generation_prompt, tokenize=True, return_dict=False
        )
    )


def render_text(tokenizer, messages: list[dict], add_generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(
        messages, add_generation_prompt=add_generation_prompt, tokenize=False
    )


def eos_id(tokenizer, config: Profile) -> int:
    """The token that ends an assistant turn: the config's id when given, else the tokenizer's."""
    declared = config.model.eos_token_id
    value = tokenizer.eos_token_id if declared is None else int(declared)
    if value is None or tokenizer.convert_ids_to_tokens(value) is None:
        raise ValueError(f"EOS id {value!r} is not a token of this tokenizer")
    return int(value)


def prompt_ids(tokenizer, statement: str, config: Profile) -> list[int]:
    """The generation prompt (chat template + assistant header); ValueError if over budget."""
    ids = render_ids(tokenizer, messages_for(statement, config), add_generation_prompt=True)
    limit = config.tokens.max_prompt
    if not ids:
        raise ValueError("the chat template rendered an empty prompt")
    if len(ids) > limit:
        raise ValueError(
            f"prompt has {len(ids)} tokens, over tokens.max_prompt={limit}; "
            "examples are never truncated"
        )
    return ids


def response_ids(tokenizer, response_text: str, config: Profile) -> list[int]:
    """The supervised response: its tokens, then EOS; ValueError if over budget."""
    ids = tokenizer.encode(response_text, add_special_tokens=False) + [eos_id(tokenizer, config)]
    limit = config.tokens.max_response
    if len(ids) > limit:
        raise ValueError(
            f"response has {len(ids)} tokens with EOS, over "
            f"tokens.max_response={limit}; examples are never truncated"
        )
    return ids


def completion_row(tokenizer, statement: str, response_text: str, config: Profile) -> dict:
    """{"input_ids", "prompt_length", "response_mask", "response_tokens"} for one example.

    response_mask[t] is True exactly on response tokens (EOS included): position, not token
    value, decides, so a response that repeats a prompt token is still supervised correctly.
    """
    # Within max_prompt and max_response, the row fits max_total (a rule of the schema).
    prompt = prompt_ids(tokenizer, statement, config)
    response = response_ids(tokenizer, response_text, config)
    return {
        "input_ids": prompt + response,
        "prompt_length": len(prompt),
        "response_mask": [False] * len(prompt) + [True] * len(response),
        "response_tokens": len(response),
    }


def full_conversation_ids(tokenizer, statement: str, response_text: str) -> list[int]:
    """The template's own rendering of the whole conversation (with the assistant turn)."""
    messages = messages_for(statement) + [{"role": "assistant", "content": response_text}]
    return render_ids(tokenizer, messages, add_generation_prompt=False)


def check_row_rendering(
    tokenizer, statement: str, response_text: str, row: dict, config: Profile
) -> None:
    """A row must equal the template's rendering of the full conversation up to its EOS."""
    full = full_conversation_ids(tokenizer, statement, response_text)
    ids, eos = row["input_ids"], eos_id(tokenizer, config)
    if full[: len(ids)] != ids:
        raise ValueError(
            "training row differs from the chat template's rendering of the "
            "conversation; prompt and response would not match generation"
        )
    if ids[-1] != eos:
        raise ValueError("training row does not end with the EOS token")


def template_identity(tokenizer, config: Profile) -> dict:
    """The rendered probe prompt (text, ids, sha256): part of every run identity."""
    statement = render_statement(PROBE_PROBLEM, 0)
    messages = messages_for(statement, config)
    text = render_text(tokenizer, messages, add_generation_prompt=True)
    ids = prompt_ids(tokenizer, statement, config)
    return {
        "probe_statement": statement,
        "text": text,
        "ids": ids,
        "eos_id": eos_id(tokenizer, config),
        "sha256": sha256_bytes(canonical_json({"text": text, "ids": ids})),
    }
