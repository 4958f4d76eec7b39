"""Scoring on hand-made examples with known answers: a character-level fake model whose next-token
log-probabilities are designed, so every log-likelihood and metric is known in closed form."""
import math

import pytest
import torch

from training.eval.data import TaskData
from training.eval.runner import build_requests, score_requests, task_metrics
from training.eval.scoring import (argmax, choice_metrics, encode_pair, loglikelihood_metrics,
                                   loglikelihoods, mean_stderr)
from training.eval.tasks import TASKS

V = 128
P_X = 0.5  # p(next char is "x"), whatever came before; every other char shares the rest
LOG_X, LOG_OTHER = math.log(P_X), math.log((1 - P_X) / (V - 1))


class CharTokenizer:
    eod_id = 0

    def encode(self, text):
        return [ord(c) % V for c in text]


class DesignedModel:
    """hidden = one-hot of the token; logits = a fixed row of log-probabilities (favours "x")."""

    def __init__(self, max_length=1000):
        self.max_length, self.device, self.seen = max_length, torch.device("cpu"), []
        self.row = torch.full((V,), LOG_OTHER)
        self.row[ord("x")] = LOG_X

    def hidden(self, tokens):
        self.seen.extend(tokens.tolist())
        return torch.nn.functional.one_hot(tokens, V).float()

    def logits(self, h):
        return self.row.expand(h.shape[0], V).clone()


def expected_ll(cont: str) -> float:
    return sum(LOG_X if c == "x" else LOG_OTHER for c in cont)


def test_continuation_loglikelihood_and_greedy_are_exact():
    model, tok = DesignedModel(), CharTokenizer()
    reqs = [encode_pair(tok, "ctx", " xx"), encode_pair(tok, "ctx", "xxx"), encode_pair(tok, "", "ab")]
    got = loglikelihoods(model, reqs, batch_tokens=4)  # several batches, padded
    assert got[0] == (pytest.approx(expected_ll(" xx")), False)  # " " is not the argmax
    assert got[1] == (pytest.approx(expected_ll("xxx")), True)   # "x" everywhere is greedy
    assert got[2][0] == pytest.approx(expected_ll("ab"))          # empty context: EOD first


def test_trailing_space_of_the_context_moves_to_the_continuation():
    tok = CharTokenizer()
    assert encode_pair(tok, "Answer: ", "yes") == (tok.encode("Answer:"), tok.encode(" yes"))


def test_gpt2_split_is_lm_evals():
    from curation.tokenizer import GPT2_DIR, TextTokenizer

    tok = TextTokenizer(GPT2_DIR)
    ctx, cont = encode_pair(tok, "Question: is it?\nAnswer:", " yes")
    assert tok.decode(ctx) == "Question: is it?\nAnswer:" and tok.decode(cont) == " yes"


def test_long_requests_keep_their_last_tokens():
    model, tok = DesignedModel(max_length=8), CharTokenizer()
    ctx, cont = encode_pair(tok, "abcdefghijkl", "xy")
    (ll, _), = loglikelihoods(model, [(ctx, cont)])
    assert model.seen == [(ctx + cont)[-9:-1]]  # max_length + 1 kept, the last not fed
    assert ll == pytest.approx(expected_ll("xy"))
    with pytest.raises(ValueError, match="exceeds"):
        loglikelihoods(model, [encode_pair(tok, "a", "x" * 9)])


def test_multiple_choice_acc_and_acc_norm_differ_as_designed():
    """Choice 0 is long and full of x (highest total log-likelihood per character); choice 1 is
    one cheap character (highest raw total): acc picks 1, acc_norm picks 0."""
    model, tok = DesignedModel(), CharTokenizer()
    doc = {"goal": "g", "sol1": "xxxxxxxxqq", "sol2": "q", "label": 0}
    data = TaskData(TASKS["piqa"], [doc, {**doc, "label": 1}], None)
    reqs = build_requests(data, 0, 1234, None)
    assert [r[3] for r in reqs[:2]] == [" xxxxxxxxqq", " q"]
    results = score_requests(model, tok, [(r[2], r[3]) for r in reqs], 64)
    lls = [expected_ll(" xxxxxxxxqq"), expected_ll(" q")]
    assert [ll for ll, _ in results[:2]] == pytest.approx(lls)
    assert argmax(lls) == 1 and argmax([lls[0] / 10, lls[1] / 1]) == 0  # lengths w/o the space
    m = task_metrics(data, reqs, results)
    assert (m["acc"], m["acc_norm"], m["n"]) == (0.5, 0.5, 2)
    assert m["acc_stderr"] == pytest.approx(0.5)  # sqrt(0.5 * 0.5 * 2 / 1) / sqrt(2)


def test_lambada_metrics_from_known_loglikelihoods():
    m = loglikelihood_metrics([(-1.0, True), (-3.0, False), (-2.0, True), (-2.0, True)])
    assert m["acc"] == 0.75
    assert m["ppl"] == pytest.approx(math.exp(2.0))
    assert m["acc_stderr"] == pytest.approx(math.sqrt(0.75 * 0.25 * 4 / 3) / 2)  # p(1-p) n/(n-1)
    assert m["ppl_stderr"] == pytest.approx(math.exp(2.0) * mean_stderr([-1, -3, -2, -2]))


def test_winogrande_scores_one_context_per_option():
    model, tok = DesignedModel(), CharTokenizer()
    doc = {"sentence": "The _ was xx.", "option1": "x", "option2": "ab", "answer": "2"}
    data = TaskData(TASKS["winogrande"], [doc], None)
    reqs = build_requests(data, 0, 1234, None)
    assert [(r[2], r[3]) for r in reqs] == [("The x", " was xx."), ("The ab", " was xx.")]
    results = score_requests(model, tok, [(r[2], r[3]) for r in reqs], 64)
    # the fake model ignores context, so the options tie: the first wins (numpy's argmax)
    assert results[0][0] == results[1][0]
    assert task_metrics(data, reqs, results)["acc"] == 0.0


def test_ties_go_to_the_first_choice_and_stderr_needs_two_rows():
    assert argmax([-1.0, -1.0, -2.0]) == 0
    assert choice_metrics([([-1.0, -1.0], [1, 1], 1)], with_norm=False) == \
        {"acc": 0.0, "acc_stderr": None}


def test_data_parallel_split_scores_every_request_once(monkeypatch):
    """score_requests on 'rank 1 of 2' scores the odd positions of the length-sorted list."""
    import training.eval.runner as runner

    model, tok = DesignedModel(), CharTokenizer()
    texts = [("c" * i, " x") for i in range(1, 6)]
    monkeypatch.setattr(runner, "_rank_world", lambda: (1, 2))
    monkeypatch.setattr(runner.dist, "all_gather_object",
                        lambda out, obj: out.__setitem__(slice(None), [[], obj]))
    got = runner.score_requests(model, tok, texts, 64)
    longest_first = sorted(range(5), key=lambda i: -len(texts[i][0]))
    assert [i for i, r in enumerate(got) if r is not None] == sorted(longest_first[1::2])
