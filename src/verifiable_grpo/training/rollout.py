"""Rollouts: sample responses from the policy, keep what the update will need.

A response is drawn one token at a time at temperature 1 over the whole vocabulary.
The log-probability of each drawn token is taken, detached, from the float32
log-softmax of the very logits it was drawn from: these are the "old" (behaviour)
log-probs of the GRPO ratio, and nothing later replaces them. Before the first update
of a rollout set, `verify_captured_logprobs` rescores the full sequences in one
teacher-forced pass and insists the two agree within the configured tolerance.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from verifiable_grpo.core import scoring
from verifiable_grpo.core.config_schema import Profile
from verifiable_grpo.core.model import synchronize
from verifiable_grpo.task import prompts, verifier


def model_device(model) -> torch.device:
    return next(model.parameters()).device


@dataclass(frozen=True)
class Sampler:
    """A policy ready to draw responses: the model (in eval mode), its tokenizer, the
    profile that sets the sampling (token limits, KV cache, precision), and the seeded
    torch.Generator the draws come from (None: greedy decoding only; batched_rollout also
    takes a list, one generator per row). `policy_digest` names the weights the draws came
    from; it is written on every row, so a rollout file says which policy produced it."""

    model: torch.nn.Module
    tokenizer: object
    config: Profile
    generator: object = None
    policy_digest: str | None = None


def decode_response(tokenizer, response_ids: list[int], finish_reason: str) -> dict:
    """Text of a response (EOS excluded) and whether every generated id is a real token.

    A model's logits may be wider than its tokenizer (Qwen pads to 151,936 rows); a
    tokenizer decodes such an id to nothing, so it is flagged here instead of vanishing.
    """
    body = response_ids[:-1] if finish_reason == "eos" else response_ids
    size = len(tokenizer)
    undecodable = [
        i for i in response_ids if not 0 <= i < size or tokenizer.convert_ids_to_tokens(i) is None
    ]
    decodable = [i for i in body if i not in undecodable]
    # Special tokens stay in the text: dropping one could make broken output look like JSON.
    text = tokenizer.decode(
        decodable, skip_special_tokens=False, clean_up_tokenization_spaces=False
    )
    return {"text": text, "tokenization_valid": not undecodable, "undecodable_ids": undecodable}


def _next_logits(model, ids, step_ids, cache):
    """Logits (float32) for the token after `ids`; with a cache only the new ids are fed."""
    if cache is None:
        # The same full-prefix forward as teacher-forced scoring: one code path.
        out = model(input_ids=ids, use_cache=False)
    else:
        out = model(input_ids=step_ids, cache=cache, use_cache=True, logits_to_keep=1)
    return out.logits[0, -1].float()


def check_prompts(model, prompt_rows: list[list[int]], cfg: Profile) -> None:
    """Refuses a model in training mode, no prompts, and an empty or too long prompt."""
    if model.training:
        raise ValueError("generation needs the model in eval mode (dropout off); call model.eval()")
    if not prompt_rows:
        raise ValueError("no prompts to generate from")
    for prompt in prompt_rows:
        if not prompt:
            raise ValueError("empty prompt")
        if len(prompt) > cfg.tokens.max_prompt:
            raise ValueError(
                f"prompt of {len(prompt)} tokens exceeds tokens.max_prompt "
                f"{cfg.tokens.max_prompt}; prompts are never truncated"
            )


def check_stream(generator, device) -> None:
    """Refuses a sampler without a seeded torch.Generator on the model's device."""
    if not isinstance(generator, torch.Generator):
        raise ValueError("sampling needs a torch.Generator (seeded) for reproducible draws")
    if generator.device.type != device.type:
        raise ValueError(f"generator on {generator.device} but model on {device}")


def _checked_prompt(model, prompt_ids, cfg, generator, greedy: bool) -> tuple[list[int], object]:
    """(the prompt as ints, the model's device), checked (check_prompts, check_stream)."""
    prompt = [int(i) for i in prompt_ids]
    check_prompts(model, [prompt], cfg)
    device = model_device(model)
    if not greedy:
        check_stream(generator, device)
    return prompt, device


def _decode_tokens(
    sampler: Sampler, prompt: list[int], device, eos: int, greedy: bool
) -> tuple[list[int], list[float]]:
    """(response token ids, their behaviour log-probs): one token at a time until EOS or
    tokens.max_response tokens."""
    model, generator = sampler.model, sampler.generator
    max_response = sampler.config.tokens.max_response
    use_cache = sampler.config.sampling.use_kv_cache
    ids = torch.tensor([prompt], dtype=torch.long, device=device)
    step_ids = ids
    cache = None
    if use_cache:
        from transformers import DynamicCache  # transformers 5: passed as `cache=`

        cache = DynamicCache(config=model.config)
    response, behaviour = [], []
    for _ in range(max_response):
        logits = _next_logits(model, ids, step_ids, cache)
        if not torch.isfinite(logits).all():
            raise ValueError("non-finite logits during generation")
        logprobs = torch.log_softmax(logits, dim=-1)
        if greedy:
            token = int(torch.argmax(logits))
        else:
            token = int(torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator))
        response.append(token)
        behaviour.append(float(logprobs[token].detach()))
        if token == eos:
            break
        step_ids = torch.tensor([[token]], dtype=torch.long, device=device)
        ids = torch.cat([ids, step_ids], dim=1)
    return response, behaviour


@torch.no_grad()
def generate(sampler: Sampler, prompt_ids, greedy: bool = False) -> dict:
    """One response to one prompt: sampled at temperature 1 (or greedy), with its
    behaviour log-probs captured at the actual prefixes.

    Stops at EOS (finish_reason "eos"; EOS counted in response_tokens, not in the text)
    or after tokens.max_response tokens ("length"). The model must be in eval mode.
    Reading the config checks it: any sampling but temperature 1 over the full vocabulary
    is refused there (config_schema.Sampling).
    """
    cfg, tokenizer = sampler.config, sampler.tokenizer
    prompt, device = _checked_prompt(sampler.model, prompt_ids, cfg, sampler.generator, greedy)
    # The schema holds max_prompt + max_response <= max_total, so the whole sequence fits.
    eos = prompts.eos_id(tokenizer, cfg)
    use_cache = cfg.sampling.use_kv_cache

    synchronize(device)
    start = time.perf_counter()
    response, behaviour = _decode_tokens(sampler, prompt, device, eos, greedy)
    synchronize(device)
    seconds = time.perf_counter() - start

    finish_reason = "eos" if response[-1] == eos else "length"
    decoded = decode_response(tokenizer, response, finish_reason)
    return {
        "prompt_ids": prompt,
        "response_ids": response,
        "text": decoded["text"],
        "finish_reason": finish_reason,
        "behaviour_logprobs": behaviour,
        "tokenization_valid": decoded["tokenization_valid"],
        "undecodable_ids": decoded["undecodable_ids"],
        "response_tokens": len(response),
        "seconds": seconds,
        "greedy": bool(greedy),
        "kv_cache": use_cache,
        "policy_digest": sampler.policy_digest,
    }


@torch.no_grad()
def sample_group(sampler: Sampler, example: dict, group_size: int, group_id: str) -> dict:
    """G responses to one prompt, scored by the verifier: their rewards, not advantages.

    `example` is a learning example (statement + problem). A group whose rewards are all
    equal is recorded as zero-variance. The advantages are the objective's business
    (objectives.with_advantages); under Part I's a zero-variance group gets exactly 0.
    """
    if type(group_size) is not int or group_size < 2:
        raise ValueError(f"a group needs at least 2 sampled responses, got {group_size!r}")
    prompt = prompts.prompt_ids(sampler.tokenizer, example["statement"], sampler.config)
    responses = [generate(sampler, prompt, greedy=False) for _ in range(group_size)]
    return scored_group(example, prompt, group_id, responses, sampler.policy_digest)


def scored_group(
    example: dict, prompt: list[int], group_id: str, responses: list[dict], policy_digest
) -> dict:
    """The group record of `responses` drawn for `prompt`: each row gets its rollout id and
    the verifier's verdict on the example's problem (pure Python: no draw, no tensor)."""
    for member, row in enumerate(responses):
        row["rollout_id"] = f"{group_id}/response-{member:02d}"
        row["verifier"] = verifier.score_generated_json(
            row["text"], row["finish_reason"], example["problem"], row["tokenization_valid"]
        )
    scores = [float(r["verifier"]["reward"]) for r in responses]
    return {
        "group_id": group_id,
        "document_id": example["document_id"],
        "prompt_ids": prompt,
        "policy_digest": policy_digest,
        "responses": responses,
        "rewards": scores,
        "zero_variance": len(set(scores)) == 1,
    }


def response_slice(prompt_length: int, response_length: int) -> slice:
    """Positions of [B, T-1] next-token scores that score the response tokens."""
    return slice(prompt_length - 1, prompt_length - 1 + response_length)


@torch.no_grad()
def verify_captured_logprobs(model, rows: list[dict], tolerance: float) -> dict:
    """Rescore each full sequence (teacher forcing) and compare with the captured log-probs.

    rows: generated responses (prompt_ids, response_ids, behaviour_logprobs). Raises a
    ValueError with the measured maximum difference when it exceeds `tolerance`.
    """
    if model.training:
        raise ValueError("verification needs the model in eval mode (dropout off)")
    if not rows:
        raise ValueError("no responses to verify")
    device = model_device(model)
    differences = []
    for row in rows:
        prompt, response = row["prompt_ids"], row["response_ids"]
        if len(row["behaviour_logprobs"]) != len(response):
            raise ValueError(
                f"{row.get('rollout_id')}: {len(row['behaviour_logprobs'])} captured "
                f"log-probs for {len(response)} response tokens"
            )
        ids = torch.tensor([prompt + response], dtype=torch.long, device=device)
        rescored = scoring.token_logprobs(model, ids, torch.ones_like(ids))[0]
        rescored = rescored[response_slice(len(prompt), len(response))].double().cpu()
        captured = torch.tensor(row["behaviour_logprobs"], dtype=torch.float64)
        differences.append(float((rescored - captured).abs().max()))
    return captured_verdict(differences, rows, tolerance)


def captured_verdict(differences: list[float], rows: list[dict], tolerance: float) -> dict:
    """The check's report from each response's max |rescored - captured|; raises a
    ValueError naming the worst response when it exceeds `tolerance` (both paths)."""
    worst = max(differences)
    if not worst <= tolerance:
        index = differences.index(worst)
        raise ValueError(
            f"captured behaviour log-probs disagree with full-sequence rescoring: "
            f"max |difference| {worst:.3e} > tolerance {tolerance:g} "
            f"(response {rows[index].get('rollout_id', index)})"
        )
    return {
        "max_abs_difference": worst,
        "tolerance": tolerance,
        "responses": len(rows),
        "per_response": differences,
    }
