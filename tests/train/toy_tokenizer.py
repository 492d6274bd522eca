"""A small byte-level BPE tokenizer with a Qwen3.5-shaped chat template, built in memory.

Token-alignment tests need ART's real tokenisation code to run against a tokenizer that renders
tool calls the way Qwen3.5 does, without downloading Qwen. It is trained in milliseconds on
generated billing sentences, splits text with Qwen2's pre-tokenizer pattern and keeps the chat
markers as added tokens above the base vocabulary, as Qwen's does. Test-only helper.
"""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

TEMPLATE_PATH = Path(__file__).with_name("toy_chat_template.jinja")

# Qwen2's split pattern: runs of newlines stay one piece, so "\n\n" before a reply tokenises the
# same whether the reply follows or not (prompt tokens are a prefix of prompt+reply tokens).
QWEN_SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKUP_TOKENS = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
]
# ART fills each trainable turn with the highest base-vocabulary id absent from the chat, then
# finds it again after the template has trimmed the content (art tokenize.py:380-424). The last
# base token is therefore a plain two-letter word that trimming cannot change and that encodes
# to itself.
PLACEHOLDER_PAIR = ("Q", "x")

_SUBJECTS = ["The customer", "Our records", "The invoice", "The payment", "Support", "The plan"]
_VERBS = ["shows", "lists", "needs", "matches", "charges", "credits", "reports"]
_OBJECTS = [
    "a duplicate payment",
    "the wrong tax rate",
    "two seats too many",
    "a coupon that was never applied",
    "the overage units",
    "an invoice after cancellation",
    "the fx rate of March",
]
_TAILS = ["for INV-1001.", "on SUB-2002.", "in EUR.", "since 2024-03-01.", "of 148.20 USD."]
_MARKUP = [
    '{"invoice_id": "INV-1001", "amount": "148.20", "currency": "USD"}',
    "<function=get_invoice>\n<parameter=invoice_id>\nINV-1001\n</parameter>\n</function>",
    "# Tools\n\nYou may call these functions:",
    '{"type": "function", "function": {"name": "get_invoice", "description": "Look up."}}',
]


def training_sentences() -> list[str]:
    """A few hundred short billing sentences plus the markup the template and tools produce."""
    sentences = [
        f"{subject} {verb} {obj} {tail}"
        for subject, verb, obj, tail in itertools.product(_SUBJECTS, _VERBS, _OBJECTS, _TAILS)
    ]
    return sentences[::4] + _MARKUP * 20


@functools.cache
def _tokenizer_json(vocab_size: int) -> str:
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN_SPLIT_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(training_sentences(), trainer)
    data = json.loads(tokenizer.to_str())
    _append_placeholder_token(data["model"])
    return json.dumps(data)


def _append_placeholder_token(bpe: dict) -> None:
    vocab: dict[str, int] = bpe["vocab"]
    merged = "".join(PLACEHOLDER_PAIR)
    if merged in vocab:
        raise ValueError(f"placeholder {merged!r} was learned in training; pick another pair")
    vocab[merged] = max(vocab.values()) + 1
    as_string = bool(bpe["merges"]) and isinstance(bpe["merges"][0], str)
    bpe["merges"].append(" ".join(PLACEHOLDER_PAIR) if as_string else list(PLACEHOLDER_PAIR))


def build_toy_tokenizer(vocab_size: int = 600) -> PreTrainedTokenizerFast:
    """A fresh tokenizer each call (callers may set attributes); the training itself is cached.

    `vocab_size` is an upper bound: the small corpus runs out of merges near 480 tokens.
    """
    backend = Tokenizer.from_str(_tokenizer_json(vocab_size))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tokenizer.add_tokens(MARKUP_TOKENS)
    tokenizer.chat_template = TEMPLATE_PATH.read_text(encoding="utf-8")
    return tokenizer
