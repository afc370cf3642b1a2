"""Batched rollouts: every response of a rollout set drawn in one padded batch.

The rows (prompt by prompt, then member by member: row = prompt_index * G + member) are
left-padded to a common prompt width W, so that every row's next token sits in the last
column. Each row carries an attention mask (1 on its real tokens) and position ids that
count its real tokens only (cumsum of the mask - 1), so a padded row sees exactly what it
would see alone. With sampling.use_kv_cache the prompt goes through once and each step
feeds one column; without it each step re-reads the whole padded batch (the full-prefix
forward of teacher-forced scoring).

Random stream, consumption order (fixed; resume relies on it): ONE torch.Generator.
At decoding step t = 0, 1, ... while any row is unfinished, one call
`torch.rand(B, dtype=float64, generator=...)` draws one uniform u[b] for EVERY row b in
row order, finished rows included (their draw is discarded), so the stream advances by
exactly B * (longest response) uniforms. Row b's token is the inverse-CDF draw: the first
token whose float64 cumulative probability (softmax of the row's float32 logits)
exceeds u[b] times the row total. Greedy decoding draws nothing (argmax).
Evaluation passes instead one generator per row (its own seed): row b then draws one
uniform from its own generator at each step while it is unfinished, so its response does
not depend on which rows share its batch.

A row stops at EOS or after tokens.max_response tokens. Its behaviour log-probs come from
the float32 log-softmax of the very logits its tokens were drawn from; the 2e-4 rescoring
check (rollout.verify_captured_logprobs) still runs before the first update.

The rows and groups have exactly the layout of rollout.generate / rollout.sample_group,
so every caller and every objective works unchanged. Each row's "seconds" is its share of
the batch's wall time: the rows of a batch sum to it.
"""

from __future__ import annotations

import contextlib
import time

import torch

from verifiable_grpo.core.model import synchronize
from verifiable_grpo.task import prompts
from verifiable_grpo.training.rollout import (
    Sampler,
    check_prompts,
    check_stream,
    decode_response,
    model_device,
    scored_group,
)


def left_padded(prompt_rows: list[list[int]], pad_id: int, device) -> tuple:
    """(ids [B, W], attention mask [B, W], position ids [B, W]) of left-padded prompts."""
    width = max(len(p) for p in prompt_rows)
    ids = torch.full((len(prompt_rows), width), int(pad_id), dtype=torch.long)
    mask = torch.zeros((len(prompt_rows), width), dtype=torch.long)
    for row, prompt in enumerate(prompt_rows):
        ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt) :] = 1
    return ids.to(device), mask.to(device), positions(mask).to(device)


def distinct_prompts(prompt_rows: list[list[int]]) -> tuple[list[list[int]], list[int]]:
    """(the distinct prompts in order of first appearance, each row's index among them)."""
    index: dict[tuple, int] = {}
    row_prompt = [index.setdefault(tuple(p), len(index)) for p in prompt_rows]
    return [list(p) for p in index], row_prompt


def positions(mask: torch.Tensor) -> torch.Tensor:
    """Position of each real token among its row's real tokens (0 on left padding)."""
    return (mask.long().cumsum(dim=1) - 1).clamp(min=0)


# Model types whose forward takes a prepared {layer type: mask} mapping (Qwen2). Llama's
# forward hands its mask to transformers' mask builder, which takes the 4D tensor as it is.
MASK_MAPPING_TYPES = ("qwen2",)


def full_forward_mask(mask: torch.Tensor, dtype, model=None) -> dict | torch.Tensor:
    """The additive [B, 1, T, T] attention mask of a forward over whole padded rows: causal,
    padding keys hidden, and each padding position attending to itself only.

    Why not the plain [B, T] mask: a left-padding query would see no key at all; its softmax
    row is then NaN once the model's weights are float64 (the library adds float64's min and
    takes the softmax in float32), and that NaN value reaches the real rows as 0 * NaN. For
    real positions this mask allows exactly what the plain one allows.
    """
    width = mask.shape[1]
    causal = torch.ones((width, width), dtype=torch.bool, device=mask.device).tril()
    allowed = causal[None] & mask.bool()[:, None, :]
    allowed = allowed | torch.eye(width, dtype=torch.bool, device=mask.device)[None]
    additive = torch.zeros(allowed.shape, dtype=dtype, device=mask.device)
    additive = additive.masked_fill(~allowed, torch.finfo(dtype).min)[:, None]
    if model is not None and model.config.model_type not in MASK_MAPPING_TYPES:
        return additive
    return {"full_attention": additive, "sliding_attention": additive}


def inverse_cdf_draw(probabilities: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """One token per row: the first index whose float64 cumulative probability exceeds
    u * total. probabilities [B, V] (non-negative), uniforms [B] in [0, 1)."""
    cumulative = probabilities.double().cumsum(dim=-1)
    targets = (uniforms.double() * cumulative[:, -1]).unsqueeze(-1)
    tokens = torch.searchsorted(cumulative, targets, right=True).squeeze(-1)
    # u * total can round up to the total: fall back on the last token with mass.
    last = (probabilities > 0).long().cumsum(dim=-1).argmax(dim=-1)
    return torch.minimum(tokens, last)


def _check(model, prompt_rows, config, generator, greedy, device):
    check_prompts(model, prompt_rows, config)
    if not greedy:
        streams = generator if isinstance(generator, (list, tuple)) else [generator]
        if isinstance(generator, (list, tuple)) and len(streams) != len(prompt_rows):
            raise ValueError(
                f"{len(streams)} generators for {len(prompt_rows)} prompt rows: "
                "pass one generator, or one per row"
            )
        for stream in streams:
            check_stream(stream, device)
    return config


def _uniforms(generator, finished: torch.Tensor, device) -> torch.Tensor:
    """This step's uniforms [B] in the documented order (see the module docstring)."""
    if isinstance(generator, torch.Generator):
        return torch.rand(
            finished.shape[0], dtype=torch.float64, generator=generator, device=device
        )
    values = torch.zeros(finished.shape[0], dtype=torch.float64, device=device)
    for row in (~finished).nonzero().flatten().tolist():
        values[row] = torch.rand(1, dtype=torch.float64, generator=generator[row], device=device)[0]
    return values


@torch.no_grad()
def generate_batch(
    sampler: Sampler,
    prompt_rows: list[list[int]],
    greedy: bool = False,
    share_prompts: bool = False,
) -> list[dict]:
    """One response per prompt row, all rows decoded together; rows as rollout.generate's.
    `sampler.generator`: one torch.Generator for the batch, or a list with one per row.
    share_prompts (with the KV cache): identical prompt rows are read once and their cache
    copied to each row; the random stream is consumed exactly as without it."""
    device = model_device(sampler.model)
    prompt_rows = [[int(i) for i in p] for p in prompt_rows]
    cfg = _check(sampler.model, prompt_rows, sampler.config, sampler.generator, greedy, device)
    eos = prompts.eos_id(sampler.tokenizer, cfg)
    use_cache = cfg.sampling.use_kv_cache
    batch = len(prompt_rows)

    synchronize(device)
    start = time.perf_counter()
    with _sampler_precision(cfg.sampling.precision, device):
        decoded = _decode(sampler, prompt_rows, greedy, eos, share_prompts, device)
    synchronize(device)
    seconds = time.perf_counter() - start

    return _response_rows(
        sampler.tokenizer,
        prompt_rows,
        decoded,
        eos,
        {
            "seconds": seconds / batch,
            "greedy": bool(greedy),
            "kv_cache": use_cache,
            "policy_digest": sampler.policy_digest,
        },
    )


def _sampler_precision(precision: str, device):
    """bfloat16: autocast the sampler's forward passes (its log-probs then differ from the
    float32 trainer's: a training-inference mismatch made on purpose)."""
    if precision == "float32":
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)


def _decode(sampler: Sampler, prompt_rows, greedy, eos, share_prompts, device):
    """The token-by-token loop: (tokens, behaviour log-probs, lengths), each [B, ...]."""
    model, cfg, generator = sampler.model, sampler.config, sampler.generator
    batch = len(prompt_rows)
    use_cache = cfg.sampling.use_kv_cache
    ids, mask, position = left_padded(prompt_rows, eos, device)
    cache = None
    if use_cache:
        from transformers import DynamicCache  # transformers 5: passed as `cache=`

        cache = DynamicCache(config=model.config)
    dtype = next(model.parameters()).dtype
    shared = use_cache and share_prompts  # step 0 then reads the distinct prompts instead
    step_ids, step_positions = ids, position
    step_mask = None if shared else full_forward_mask(mask, dtype, model)
    tokens = torch.empty((batch, 0), dtype=torch.long, device=device)
    behaviour = torch.empty((batch, 0), dtype=torch.float32, device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    lengths = torch.zeros(batch, dtype=torch.long, device=device)
    if share_prompts and not use_cache:
        raise ValueError(
            "share_prompts needs sampling.use_kv_cache (the shared prompt lives in the cache)"
        )
    for step in range(cfg.tokens.max_response):
        if shared and step == 0:
            logits = _shared_prefill(model, prompt_rows, eos, dtype, cache)
        elif use_cache:
            out = model(
                input_ids=step_ids,
                attention_mask=step_mask,
                position_ids=step_positions,
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
            logits = out.logits[:, -1].float()
        else:
            out = model(
                input_ids=ids,
                attention_mask=full_forward_mask(mask, dtype, model),
                position_ids=position,
                use_cache=False,
                logits_to_keep=1,
            )
            logits = out.logits[:, -1].float()
        live = ~finished
        if not torch.isfinite(logits[live]).all():
            raise ValueError("non-finite logits during generation")
        logprobs = torch.log_softmax(logits, dim=-1)
        if greedy:
            drawn = torch.argmax(logits, dim=-1)
        else:
            uniforms = _uniforms(generator, finished, device)
            drawn = inverse_cdf_draw(torch.softmax(logits, dim=-1), uniforms)
        drawn = torch.where(finished, torch.full_like(drawn, eos), drawn)
        tokens = torch.cat([tokens, drawn[:, None]], dim=1)
        behaviour = torch.cat([behaviour, logprobs.gather(1, drawn[:, None])], dim=1)
        lengths = lengths + live.long()
        finished = finished | (drawn == eos)
        if bool(finished.all()):
            break
        # Finished rows keep a real column (their outputs are never read).
        step_ids = drawn[:, None]
        step_positions = position[:, -1:] + 1
        ids = torch.cat([ids, step_ids], dim=1)
        mask = torch.cat([mask, torch.ones_like(step_ids)], dim=1)
        step_mask = mask  # a real query: the plain [B, T] mask is safe from here on
        position = torch.cat([position, step_positions], dim=1)
    return tokens, behaviour, lengths


def _response_rows(tokenizer, prompt_rows, decoded: tuple, eos, shared: dict) -> list[dict]:
    """The decoded batch (_decode's tokens, behaviour log-probs and lengths) as
    rollout.generate's rows (`shared`: what every row repeats)."""
    tokens, behaviour, lengths = decoded
    rows = []
    for row, prompt in enumerate(prompt_rows):
        n = int(lengths[row])
        response = tokens[row, :n].tolist()
        finish_reason = "eos" if response[-1] == eos else "length"
        decoded = decode_response(tokenizer, response, finish_reason)
        rows.append(
            {
                "prompt_ids": prompt,
                "response_ids": response,
                "text": decoded["text"],
                "finish_reason": finish_reason,
                "behaviour_logprobs": behaviour[row, :n].tolist(),
                "tokenization_valid": decoded["tokenization_valid"],
                "undecodable_ids": decoded["undecodable_ids"],
                "response_tokens": n,
                **shared,
            }
        )
    return rows


def _shared_prefill(model, prompt_rows, pad_id, dtype, cache) -> torch.Tensor:
    """Step 0 with shared prompts: the distinct prompts go through once, then the cache
    and the last column's float32 logits [B, V] are gathered to every row."""
    distinct, row_prompt = distinct_prompts(prompt_rows)
    device = model_device(model)
    ids, mask, position = left_padded(distinct, pad_id, device)
    out = model(
        input_ids=ids,
        attention_mask=full_forward_mask(mask, dtype, model),
        position_ids=position,
        cache=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    index = torch.tensor(row_prompt, dtype=torch.long, device=device)
    cache.reorder_cache(index)
    return out.logits[:, -1].float().index_select(0, index)


@torch.no_grad()
def sample_groups(
    sampler: Sampler,
    examples: list[dict],
    group_size: int,
    group_ids: list[str],
    prompt_rows: list[list[int]] | None = None,
) -> list[dict]:
    """G responses to each example, all P x G in one batch; groups as rollout.sample_group's
    (rewards from the verifier, no advantages), in the order of `examples`. With
    grpo.share_prompts and the KV cache, each prompt is read once for its G rows.
    prompt_rows: each example's prompt ids when a task renders its own (default: the
    package's one-turn prompt of each statement)."""
    if type(group_size) is not int or group_size < 2:
        raise ValueError(f"a group needs at least 2 sampled responses, got {group_size!r}")
    if len(group_ids) != len(examples):
        raise ValueError(f"{len(group_ids)} group ids for {len(examples)} examples")
    cfg = sampler.config
    if prompt_rows is None:
        prompt_rows = [prompts.prompt_ids(sampler.tokenizer, e["statement"], cfg) for e in examples]
    if len(prompt_rows) != len(examples):
        raise ValueError(f"{len(prompt_rows)} prompts for {len(examples)} examples")
    rows = generate_batch(
        sampler,
        [p for p in prompt_rows for _ in range(group_size)],
        greedy=False,
        share_prompts=cfg.grpo.share_prompts and cfg.sampling.use_kv_cache,
    )
    return [
        scored_group(
            example,
            prompt,
            group_id,
            rows[index * group_size : (index + 1) * group_size],
            sampler.policy_digest,
        )
        for index, (example, prompt, group_id) in enumerate(zip(examples, prompt_rows, group_ids))
    ]
