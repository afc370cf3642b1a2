"""Exercise (chapter 6): write the GRPO loop, sample -> verify -> advantages -> two updates.

The learner writes fn(policy, reference, optimizer, task, group_size, epsilon, beta,
updates) for ONE iteration and returns {"rewards": [P, G], "advantages": [P, G],
"losses": one float per update}. The checker runs it for ITERATIONS iterations on the
micro policy and toy task of micro_task.py, and runs the package's iteration
(`grpo_iteration`, built from training/losses.py) from the same seeds: same weights, same
sampling generator, same optimiser. After every iteration it compares the rewards, the
advantages, the loss of every update and every weight of the policy, each element within
TOLERANCE = 1e-5 of the package's, absolute below 1 and relative above
(checking.element_gaps): a loop without centring meets groups whose rewards are all 1, std
0, advantages of 1e8 and losses near 3e7, where float64 rounding alone is 1e-8 absolute.

When the learner's loop differs, the checker runs the package's iteration again with each
common mistake seeded in (MISTAKES) and names the mistake whose whole trace the learner's
reproduces within TOLERANCE, provided every other trace (the correct one included) lies at
least checking.MARGIN x TOLERANCE = 1e-3 away; otherwise it says where the two loops first
part. Measured (scripts/measure_checker_margins.py; ATEN_CPU_CAPABILITY default, avx2 and
avx512, one and two threads): a loop written as a learner would (tests/exercises) lies at
most 5e-14 from its own trace (the micro policy is float64 throughout), rewards kept in
float32 7e-8 from the correct one, while the nearest other trace lies 2.0e-2 away or more
(the KL's sign, whose beta = 0.02 moves little): a margin of 2,000 tolerances.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import torch

from verifiable_grpo.exercises import checking
from verifiable_grpo.exercises.checking import CheckResult, show_value
from verifiable_grpo.exercises.micro_task import MicroTask, micro_policy
from verifiable_grpo.training import losses

ITERATIONS = 3
GROUP_SIZE = 4
EPSILON = 0.2
BETA = 0.02
UPDATES = 2
LEARNING_RATE = 0.02
TOLERANCE = 1e-5  # two correct float64 loops agree to ~1e-14; float32 rewards to ~7e-8
ADVANTAGE_EPSILON = 1e-8
QUANTITIES = ("rewards", "advantages", "losses", "weights")

# A seeded mistake -> the hint that names it.
MISTAKES = {
    "sample_std": "the advantages use the sample std (divide by G - 1, torch.std's default); "
    "GRPO here divides by the population std (correction=0)",
    "no_centring": "the advantages are not centred: subtract each group's mean reward first",
    "clip_wrong_side": "the clipped surrogate takes the max of rho*A and clip(rho)*A: take the "
    "min, the pessimistic side, so the clip removes the gain of a ratio "
    "pushed past the interval",
    "kl_sign": "the KL is subtracted: it is a penalty, + beta * KL in the loss",
    "old_recomputed": "the old log-probs are recomputed from the current policy at each update "
    "(every ratio is 1, nothing can clip): use the log-probs captured at "
    "sampling time, fixed for both updates",
    "one_update": "one update per rollout set: make `updates` (two) updates on the same samples",
    "batch_token_mean": "one mean over all the tokens of the batch: take each response's token "
    "mean first, then the mean over its group, then over prompts",
    "no_zero_grad": "gradients are never zeroed: call optimizer.zero_grad() before each "
    "update, or each step adds the earlier gradients again",
}


# --------------------------------------------------------------------------- the reference
def _advantages(rewards: torch.Tensor, mistake: str | None) -> torch.Tensor:
    correction = 1 if mistake == "sample_std" else 0
    advantages, _, std = losses.group_advantages(rewards, ADVANTAGE_EPSILON, correction)
    if mistake == "no_centring":
        return rewards / (std + ADVANTAGE_EPSILON)
    return advantages


def _padded(rows: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    values = torch.nn.utils.rnn.pad_sequence(rows, batch_first=True)
    mask = torch.nn.utils.rnn.pad_sequence(
        [torch.ones(len(r), dtype=torch.bool) for r in rows], batch_first=True
    )
    return values, mask


@dataclass(frozen=True)
class Step:
    """One update's clip range, KL weight and the mistake seeded in (None: the reference)."""

    epsilon: float
    beta: float
    mistake: str | None


def _rollout_loss(policy, reference, task, samples, advantages, step: Step):
    """The scalar loss of one update on the whole rollout set (responses prompt by prompt)."""
    epsilon, beta, mistake = step.epsilon, step.beta, step.mistake
    pairs = [
        (prompt, response) for prompt, group in zip(task.prompts, samples) for response, _ in group
    ]
    captured = [old for group in samples for _, old in group]
    with torch.no_grad():
        reference_logits = task.logits_of_many(reference, pairs)
    current_rows, old_rows, kl_rows = [], [], []
    for (_, response), old, logits, frozen in zip(
        pairs, captured, task.logits_of_many(policy, pairs), reference_logits
    ):
        current = torch.log_softmax(logits, dim=-1)[torch.arange(len(response)), response]
        current_rows.append(current)
        old_rows.append(current.detach() if mistake == "old_recomputed" else old)
        kl_rows.append(losses.exact_prefix_kl(logits, frozen))
    current, mask = _padded(current_rows)
    old, kl = _padded(old_rows)[0], _padded(kl_rows)[0]
    flat_advantages = advantages.reshape(-1)
    if mistake not in ("clip_wrong_side", "batch_token_mean"):
        coefficient = -beta if mistake == "kl_sign" else beta
        return losses.grpo_objective(
            losses.TokenLogProbs(current, old, mask),
            flat_advantages,
            kl,
            advantages.shape[1],
            losses.ClipRange(epsilon),
            coefficient,
        )[0]
    if mistake == "clip_wrong_side":
        ratio = losses.importance_ratio(current, old, mask)
        a = flat_advantages.unsqueeze(1)
        per_token = -torch.maximum(ratio * a, ratio.clamp(1 - epsilon, 1 + epsilon) * a)
    else:
        per_token = losses.clipped_surrogate_tokens(
            losses.TokenLogProbs(current, old, mask), flat_advantages, losses.ClipRange(epsilon)
        )[0]
    per_token = torch.where(mask, per_token + beta * kl, torch.zeros_like(per_token))
    if mistake == "batch_token_mean":
        return per_token.sum() / mask.sum()
    per_response = losses.masked_token_mean(per_token, mask)
    return losses.reduce_responses_then_prompts(per_response, advantages.shape[1])


def grpo_iteration(
    policy,
    reference,
    optimizer,
    task,
    group_size: int = GROUP_SIZE,
    epsilon: float = EPSILON,
    beta: float = BETA,
    updates: int = UPDATES,
    mistake: str | None = None,
) -> dict:
    """One GRPO iteration: G samples per prompt (old log-probs captured), verified rewards,
    population-std group advantages, then `updates` AdamW updates of the clipped surrogate
    plus beta times the exact prefix KL, reduced token -> response -> prompt.

    task: micro_task.MicroTask or stock_task.StockTask. `mistake` (a key of MISTAKES)
    seeds one common error, for the checker's diagnosis.
    """
    if mistake is not None and mistake not in MISTAKES:
        raise ValueError(f"unknown mistake {mistake!r}: use one of {sorted(MISTAKES)}")
    samples = [[task.sample(policy, prompt) for _ in range(group_size)] for prompt in task.prompts]
    rewards = torch.tensor(
        [
            [task.reward(prompt, response) for response, _ in group]
            for prompt, group in zip(task.prompts, samples)
        ],
        dtype=torch.float64,
    )
    advantages = _advantages(rewards, mistake)
    recorded = []
    for _ in range(1 if mistake == "one_update" else updates):
        if mistake != "no_zero_grad":
            optimizer.zero_grad()
        step = Step(epsilon, beta, mistake)
        loss = _rollout_loss(policy, reference, task, samples, advantages, step)
        loss.backward()
        optimizer.step()
        recorded.append(float(loss.detach()))
    return {"rewards": rewards, "advantages": advantages, "losses": recorded}


# --------------------------------------------------------------------------- running a loop
@dataclass
class Trace:
    """What a loop produced, iteration by iteration (weights flattened, after the iteration)."""

    rewards: list = field(default_factory=list)
    advantages: list = field(default_factory=list)
    losses: list = field(default_factory=list)
    weights: list = field(default_factory=list)
    reference_changed: bool = False


def _flat_weights(model) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1).clone() for p in model.parameters()])


def run_loop(iteration_fn, iterations: int = ITERATIONS) -> Trace:
    """Run iteration_fn on a fresh micro policy, its frozen reference, an AdamW and the
    toy task, all from the fixed seeds; exceptions of iteration_fn propagate."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a micro model gains nothing from threads; a shared CPU loses
    try:
        return _run_loop(iteration_fn, iterations)
    finally:
        torch.set_num_threads(threads)


def _run_loop(iteration_fn, iterations: int) -> Trace:
    policy = micro_policy()
    reference = micro_policy().requires_grad_(False)
    reference_before = _flat_weights(reference)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=LEARNING_RATE, weight_decay=0.0)
    task = MicroTask()
    trace = Trace()
    for _ in range(iterations):
        out = iteration_fn(
            policy,
            reference,
            optimizer,
            task,
            group_size=GROUP_SIZE,
            epsilon=EPSILON,
            beta=BETA,
            updates=UPDATES,
        )
        if not isinstance(out, dict) or any(k not in out for k in QUANTITIES[:3]):
            raise TypeError(f"return a dict with keys {QUANTITIES[:3]}, got {out!r:.80}")
        for key in QUANTITIES[:3]:
            getattr(trace, key).append(out[key])
        trace.weights.append(_flat_weights(policy))
    trace.reference_changed = not torch.equal(reference_before, _flat_weights(reference))
    return trace


@cache
def reference_trace(mistake: str | None = None) -> Trace:
    """The package's loop (with `mistake` seeded in); cached: it depends on nothing else."""

    def iteration(*args, **kwargs):
        return grpo_iteration(*args, mistake=mistake, **kwargs)

    return run_loop(iteration)


# --------------------------------------------------------------------------- comparing loops
STAGE_HINTS = {
    "rewards": "sample G responses per prompt with task.sample(policy, prompt), prompt by prompt "
    "in the order of task.prompts, and score each with task.reward(prompt, response)",
    "advantages": "A = (r - mean of its group) / (population std of its group + 1e-8), one group "
    "per row of the [P, G] rewards",
    "losses": "per token -min(rho A, clip(rho, 1-eps, 1+eps) A) + beta * exact KL, with rho from "
    "the old log-probs captured at sampling; a token mean per response, then the mean "
    "over its group, then over prompts",
    "weights": "every loss agrees but the weights do not: zero the gradients, backpropagate the "
    "loss and step the optimiser once per update",
}
FROZEN_REFERENCE = (
    "the reference changed: it stays frozen (its logits under torch.no_grad(), "
    "never in the optimiser)"
)


def _as_float64(value) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach().to(torch.float64)
    return torch.as_tensor(value, dtype=torch.float64)


def _difference(got, expected, quantity: str) -> str | None:
    """None when got matches expected within TOLERANCE, else what differs, in words."""
    try:
        got_t = _as_float64(got)
    except (TypeError, ValueError, RuntimeError):
        return f"returned {type(got).__name__}, expected numbers"
    expected_t = _as_float64(expected)
    if got_t.shape != expected_t.shape:
        return f"shape {tuple(got_t.shape)}, expected {tuple(expected_t.shape)}"
    gap = checking.element_gaps(got_t, expected_t)
    if bool((gap <= TOLERANCE).all()):
        return None
    if quantity == "weights":
        return f"{int((~(gap <= TOLERANCE)).sum())} of {gap.numel()} weights differ by more than {TOLERANCE:g}"
    return f"expected {show_value(expected_t)}, got {show_value(got_t)}"


def differences(got: Trace, expected: Trace) -> list[tuple[int, str, str]]:
    """(iteration from 1, quantity, what differs) for every quantity that differs."""
    found = []
    for index in range(len(expected.rewards)):
        for quantity in QUANTITIES:
            problem = _difference(
                getattr(got, quantity)[index], getattr(expected, quantity)[index], quantity
            )
            if problem is not None:
                found.append((index + 1, quantity, problem))
    return found


def trace_distance(got: Trace, expected: Trace) -> float:
    """The largest element gap (checking.distance) over every compared quantity of every
    iteration; inf where a shape differs."""
    return max(
        checking.distance(a, b)
        for quantity in QUANTITIES
        for a, b in zip(getattr(got, quantity), getattr(expected, quantity), strict=True)
    )


def diagnosis(got: Trace) -> checking.Diagnosis:
    """Which seeded mistake's trace the learner's reproduces, if one clearly does: its
    hints are those of MISTAKES (checking.diagnose, with the correct trace as EXPECTED)."""
    distances = {checking.EXPECTED: trace_distance(got, reference_trace())}
    for name, hint in MISTAKES.items():
        distances[hint] = trace_distance(got, reference_trace(name))
    return checking.diagnose("GRPO loop", "the whole loop", distances, TOLERANCE)


def _report(lines: list[str], hints: list[str], checks: int) -> None:
    print(f"GRPO loop: {len(lines)} of {checks} checks fail")
    for line in lines[:3]:  # the first difference explains the rest
        print(f"  x {line}")
    if len(lines) > 3:
        print(f"  ... and {len(lines) - 3} more")
    for hint in hints:
        print(f"    hint: {hint}")


def check_grpo_loop(fn, verbose: bool = True) -> CheckResult:
    """Run fn(policy, reference, optimizer, task, group_size, epsilon, beta, updates) for
    ITERATIONS iterations against the package's loop; name the mistake where one fits."""
    exercise = "GRPO loop"
    if not callable(fn):
        raise TypeError(f"{exercise}: pass your function itself (without calling it), got {fn!r}")
    checks = ITERATIONS * len(QUANTITIES) + 1  # + the frozen reference
    try:
        got = run_loop(fn)
    except NotImplementedError:
        if verbose:
            print(
                f"{exercise}: not attempted yet (the function raises NotImplementedError); "
                "write it, then run this cell again"
            )
        return CheckResult(exercise, checks, [], attempted=False)
    except Exception as error:  # the learner's bug, reported, never re-raised
        failure = f"raised {type(error).__name__}: {error}"
        if verbose:
            print(f"{exercise}: the loop {failure}")
        return CheckResult(exercise, checks, [failure])
    found = differences(got, reference_trace())
    failures = [f"iteration {i}, {q}: {p}" for i, q, p in found]
    if got.reference_changed:
        failures.append(FROZEN_REFERENCE)
    if not failures:
        if verbose:
            print(
                f"{exercise}: all {checks} checks pass ({ITERATIONS} iterations: rewards, "
                f"advantages, losses and weights within {TOLERANCE:g}; the reference stayed frozen)"
            )
        return CheckResult(exercise, checks, [])
    diagnoses = [diagnosis(got)] if found else []
    hints = list(diagnoses[0].hints) if found else []
    if found and not hints:
        hints = [STAGE_HINTS[found[0][1]]]
    if verbose:
        _report(failures, hints, checks)
    failures[0] += "".join(f"\n    hint: {h}" for h in hints)
    return CheckResult(exercise, checks, failures, diagnoses=diagnoses)
