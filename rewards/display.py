"""What a person sees: the reward's rendering of a summary before it is read (G2.0).

rewards/README.md G2.0 ("Reading: the token grammar"). A summary (and the customer's complaint)
is text a person reads as displayed, not as typed: `refunded *9*226.04` shows one number,
9226.04, that no tool printed. `render` turns a text into the plain text a person sees, with
maintained libraries: CommonMark, GFM tables and strikethrough through markdown-it-py; TeX math
(`\\( \\)`, `\\[ \\]`, `$ $`, `$$ $$`, mdit-py-plugins) kept as pylatexenc writes it
(`\\times` is `×`, `\\text{CAD}` is `CAD`); raw HTML through the standard library's parser,
tags removed and their text kept. `visible` is the Unicode step every text takes (tool outputs
too, through G2.1): mandatory line breaks (UAX #14) are line breaks, invisible characters are
not there. The grader renders with its own code (`eval/grounding/display.py`), on the same
libraries; `python -m checks.reading_parity` holds the two to the same text.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from functools import cache, lru_cache
from html.parser import HTMLParser
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.texmath import texmath_plugin

OVERRIDES = "\u202d\u202e"  # LRO, RLO: kept for G2.2, which reads what follows as unreadable
_BREAK_CHARS = "\r\x0b\x0c\x85\u2028\u2029"
_BREAKS = str.maketrans(dict.fromkeys(_BREAK_CHARS, "\n"))
# a mandatory break other than LF inside a number (`9<VT>226.04`): browsers show one number,
# terminals two lines; a person cannot tell which, so the reader may not (G2.0, fail closed):
# it becomes an override (RLO), which G2.2 reads as unreadable from there to the line's end
_BROKEN_NUMBER = re.compile(
    f"(?<=\\d)[{_BREAK_CHARS}](?=[.,]?\\d)|(?<=\\d[.,])[{_BREAK_CHARS}](?=\\d)"
)
_ASCII_HIDDEN = re.compile("[\x00-\x08\x0e-\x1f\x7f]")
# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties) outside Cc and Cf
_IGNORABLE = (
    (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
# HTML elements a browser sets on lines of their own; attributes it shows as text
_BLOCK_TAGS = frozenset((
    "address", "article", "aside", "blockquote", "br", "caption", "dd", "details", "dialog",
    "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3",
    "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section",
    "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
))  # fmt: skip
_SHOWN_ATTRIBUTES = ("title", "value", "placeholder", "label")
# what raw HTML shows cannot be settled from the text alone (G2.0): a style sheet, a script or
# embedded graphics may change any character displayed, so the whole text is unreadable; an
# element that is not plainly text (hidden, a template, a form control, an image's alt text, a
# ruby annotation, a closed dialog, any tag a viewer may not know) is a stretch that one viewer
# shows and another not; a style attribute beyond colour, font and decoration (sizes, layout,
# order, direction) or a `bdo` may move or reverse what it holds
_UNSETTLING_TAGS = frozenset(("style", "script", "link", "svg", "math", "iframe", "object", "embed",
                              "canvas", "frame", "frameset", "applet"))  # fmt: skip
# elements every viewer shows as their text, in place (besides the block elements but `dialog`)
_PLAIN_TAGS = frozenset((
    "a", "abbr", "b", "bdi", "big", "cite", "code", "data", "del", "dfn", "em", "i", "ins", "kbd",
    "label", "mark", "nobr", "output", "q", "s", "samp", "small", "span", "strike", "strong",
    "sub", "sup", "time", "tt", "u", "var", "wbr", "html", "body", "menu", "center",
))  # fmt: skip
_VOID_TAGS = frozenset(("area", "base", "br", "col", "embed", "hr", "img", "input", "link",
                        "meta", "source", "track", "wbr"))  # fmt: skip
_PLAIN_STYLES = frozenset(("color", "background", "background-color", "font-weight",
                           "font-style", "font-family"))  # fmt: skip
# stretch marks, deleted by `visible`: around a maybe-shown stretch, and around a moving one
MAYBE_OPEN, MAYBE_SHUT, MOVE_OPEN, MOVE_SHUT = "\x0e", "\x0f", "\x10", "\x11"
_MOVING = re.compile("\x10([^\x11]*)\x11")
# TeX commands (a backslash, then letters or one other character) that overlap or hide glyphs
# (negative space, laps, phantoms, colour), move or stack them, or write ones pylatexenc does
# not (`\\unicode`, `\\char`, `\\verb`, MathJax's HTML styling); and those that define a macro
_TEX_COMMAND = re.compile(r"\\([A-Za-z]+|.)", re.DOTALL)
_TEX_MOVING = frozenset((
    "!", "negthinspace", "negmedspace", "negthickspace", "hspace", "hskip", "kern", "mkern",
    "mskip", "mspace", "rlap", "llap", "clap", "mathrlap", "mathllap", "mathclap", "phantom",
    "hphantom", "vphantom", "smash", "color", "textcolor", "colorbox", "fcolorbox", "raisebox",
    "raise", "lower", "moveleft", "moveright", "makebox", "overset", "underset", "stackrel",
    "scalebox", "resizebox", "rotatebox", "reflectbox", "style", "class", "cssId", "htmlClass",
    "htmlStyle", "htmlId", "htmlData", "unicode", "char", "verb", "hidewidth", "mathchoice",
))  # fmt: skip
_TEX_DEFINING = frozenset((
    "def", "gdef", "edef", "xdef", "let", "futurelet", "newcommand", "renewcommand",
    "providecommand", "DeclareMathOperator", "newenvironment", "renewenvironment", "require",
))  # fmt: skip
# a maybe-shown stretch glued to a number: shown or not, the number differs
_MAYBE_IN_NUMBER = re.compile(
    "(?:(?<=\\d)|(?<=\\d[.,]))(?:\x0e[^\x0f]*\x0f)+|(?:\x0e[^\x0f]*\x0f)+(?=[.,]?\\d)"
)
_SCRIPTS = str.maketrans("", "", "^_")
_HTML_INTEGER = re.compile(r"[\t\n\f\r ]*([+-]?[0-9]+)")


@lru_cache(maxsize=4096)
def _hidden(ch: str) -> bool:
    """A control or format character, or a default-ignorable one: invisible (G2.0)."""
    if ch in "\t\n" or ch in OVERRIDES:
        return False
    if unicodedata.category(ch) in ("Cc", "Cf"):
        return True
    code = ord(ch)
    return any(low <= code <= high for low, high in _IGNORABLE)


def visible(text: str) -> str:
    """G2.0 Unicode: CR LF, CR, VT, FF, NEL, LS and PS are line breaks (UAX #14's mandatory
    breaks), but one of them other than LF inside a number makes it unreadable; every other
    control, format or default-ignorable character is deleted: it neither splits nor joins
    what a person sees (`9\\u200b226.04` is 9226.04)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    if _BROKEN_NUMBER.search(text):
        text = _BROKEN_NUMBER.sub(OVERRIDES[1], text)
    if text.isascii():
        if "\r" in text or "\x0b" in text or "\x0c" in text:
            text = text.translate(_BREAKS)
        return _ASCII_HIDDEN.sub("", text) if _ASCII_HIDDEN.search(text) else text
    text = text.translate(_BREAKS)
    return "".join(ch for ch in text if not _hidden(ch))


class _HtmlText(HTMLParser):
    """Raw HTML as a person sees it: tags gone, their text kept, entities decoded, comments
    dropped; a block element on lines of its own; an item of an ordered list with the number a
    browser shows (from the list's `start`, down for a `reversed` one, a `value` resetting it);
    an image's alt text where the image stands; what another attribute shows (a field's value,
    a tooltip) on a line of its own; stretch marks where the display is not settled (`finish`).
    One parser reads every HTML piece of a text, in order, so lists and stretches span pieces."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.lists: list[list[int] | None] = []  # per open list: [next number, step] or None
        self.open: list[tuple[str, bool, bool]] = []  # open elements: (tag, maybe, moving)
        self.unsettled = False  # a style sheet, a script or graphics: nothing can be read

    def text_of(self, html: str) -> str:
        """The displayed text of the next HTML piece."""
        self.parts = []
        self.feed(html)
        self.close()
        self.reset()
        return "".join(self.parts)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        shown = dict(attrs)
        self.unsettled = self.unsettled or tag in _UNSETTLING_TAGS
        plain = tag in _PLAIN_TAGS or (tag in _BLOCK_TAGS and tag != "dialog")
        maybe = not plain or "hidden" in shown
        moving = tag == "bdo" or _moving_style(shown.get("style"))
        was = self._state()
        self.open.append((tag, maybe, moving))
        self._mark(was)
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")
        if tag == "ol":
            start = _html_integer(shown.get("start"))
            step = -1 if "reversed" in shown and start is not None else 1
            self.lists.append([1 if start is None else start, step])
        elif tag in ("ul", "menu"):
            self.lists.append(None)
        elif tag == "li" and self.lists and self.lists[-1] is not None:
            numbering = self.lists[-1]
            value = _html_integer(shown.get("value"))
            number = numbering[0] if value is None else value
            self.parts.append(f"{number}. ")
            numbering[0] = number + numbering[1]
        if tag == "img":
            self.parts.append(shown.get("alt") or "")  # where the image fails, as markdown's
        for name, value_ in attrs:
            if name in _SHOWN_ATTRIBUTES and value_:
                self.parts.append(f"\n{value_}\n")
        if tag in _VOID_TAGS:
            was = self._state()
            self.open.pop()
            self._mark(was)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """`<span/>` opens a span, as a browser reads it: only a void element closes itself."""
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")
        if tag in ("ol", "ul", "menu") and self.lists:
            self.lists.pop()
        names = [name for name, _, _ in self.open]
        if tag in names:
            was = self._state()
            del self.open[len(names) - 1 - names[::-1].index(tag) :]
            self._mark(was)

    def _state(self) -> tuple[bool, bool]:
        """(inside a maybe-shown element, inside a moving one)."""
        return any(e[1] for e in self.open), any(e[2] for e in self.open)

    def _mark(self, was: tuple[bool, bool]) -> None:
        """Marks where a maybe-shown or a moving stretch opens or closes."""
        now = self._state()
        for k, (opening, closing) in enumerate(((MAYBE_OPEN, MAYBE_SHUT), (MOVE_OPEN, MOVE_SHUT))):
            if now[k] != was[k]:
                self.parts.append(opening if now[k] else closing)

    def finish(self, text: str) -> str:
        """The whole text's rendering settled: every line of a moving stretch unreadable, a
        maybe-shown stretch glued to a number unreadable, and with a style sheet, a script or
        graphics, every line unreadable."""
        maybe, moving = self._state()
        text += (MAYBE_SHUT if maybe else "") + (MOVE_SHUT if moving else "")
        if MOVE_OPEN in text:
            text = _MOVING.sub(_unreadable_lines, text)
        if MAYBE_OPEN in text:
            text = _MAYBE_IN_NUMBER.sub(OVERRIDES[1], text)
        return unreadable(text) if self.unsettled else text


def unreadable(text: str) -> str:
    """Every line of `text` read as what follows an override (G2.2): unreadable."""
    return OVERRIDES[1] + text.replace("\n", "\n" + OVERRIDES[1])


def _unreadable_lines(stretch: re.Match[str]) -> str:
    return unreadable(stretch[1])


def _moving_style(style: str | None) -> bool:
    """A style attribute declaring more than colour, font and decoration: it may hide, size,
    move or reverse what a person sees."""
    for declaration in (style or "").split(";"):
        name = declaration.partition(":")[0].strip().lower()
        if name and name not in _PLAIN_STYLES and not name.startswith("text-decoration"):
            return True
    return False


def _html_integer(value: str | None) -> int | None:
    """An HTML integer attribute as a browser reads it (`" 5th"` is 5); None when it is none."""
    found = _HTML_INTEGER.match(value or "")
    return int(found[1]) if found else None


def html_text(html: str) -> str:
    """The displayed text of one HTML piece on its own."""
    parser = _HtmlText()
    return parser.finish(parser.text_of(html))


@cache
def _latex() -> Any:
    from pylatexenc.latex2text import LatexNodes2Text

    logging.getLogger("pylatexenc").setLevel(logging.ERROR)  # odd TeX is read, not reported

    return LatexNodes2Text()


@lru_cache(maxsize=4096)  # a summary often repeats a formula
def math_text(tex: str) -> str:
    """TeX math as pylatexenc writes it; what it cannot parse stays as written. A formula with
    a command that overlaps, hides, moves or writes glyphs pylatexenc does not show is
    unreadable, each of its lines (G2.0)."""
    try:
        # a sub- or superscript sits against its base, as `²` does (G2.1): `10^{2}` shows 102
        text = str(_latex().latex_to_text(tex)).translate(_SCRIPTS)
    except Exception:  # a parser's failure on odd input keeps the text as written
        text = tex
    moving = any(m[1] in _TEX_MOVING for m in _TEX_COMMAND.finditer(tex))
    return unreadable(text) if moving else text


def _tex_defines(text: str) -> bool:
    """A macro defined or an extension loaded: any formula of the text may then show anything."""
    return "\\" in text and any(m[1] in _TEX_DEFINING for m in _TEX_COMMAND.finditer(text))


def _display_math(state: StateInline, silent: bool) -> bool:
    """`\\[ … \\]` inside a paragraph (texmath reads it only at a block's start)."""
    start = state.pos
    if not state.src.startswith("\\[", start):
        return False
    end = state.src.find("\\]", start + 2)
    if end <= start + 2:
        return False
    if not silent:
        token = state.push("math_display_inline", "math", 0)
        token.content = state.src[start + 2 : end]
    state.pos = end + 2
    return True


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    md.use(texmath_plugin, delimiters="brackets")
    md.inline.ruler.before("escape", "math_display_inline", _display_math)
    # pandoc's `$` rules: no space inside the delimiters, no digit right after the closing one,
    # so `$5 and $6` is money, not math
    md.use(dollarmath_plugin, allow_labels=False, allow_space=False, allow_digits=False,
           double_inline=True)  # fmt: skip
    return md


_MD = _parser()
_INLINE_MATH = ("math_inline",)
_DISPLAY_MATH = ("math_inline_double", "math_display_inline")


def _inline(children: Sequence[Token], html: _HtmlText) -> str:
    out = []
    for child in children:
        kind = child.type
        if kind in ("link_open", "image") and child.attrs.get("title"):
            out.append(f"\n{child.attrs['title']}\n")  # a tooltip, read (fail closed)
        if kind in ("text", "code_inline"):
            out.append(child.content)
        elif kind in ("softbreak", "hardbreak"):
            out.append("\n")
        elif kind == "html_inline":
            out.append(html.text_of(child.content))
        elif kind in _INLINE_MATH:
            out.append(math_text(child.content))
        elif kind in _DISPLAY_MATH:
            out.append(f"\n{math_text(child.content)}\n")
        elif kind == "image":
            out.append(_inline(child.children or (), html))
    return "".join(out)


def _blocks(tokens: Sequence[Token]) -> str:
    """The block token stream as lines: a list item keeps the marker it displays (an ordered
    list numbered from its start), a table row its cells between `|`."""
    out: list[str] = []
    numbers: list[int | None] = []  # per open list: the next item's number, None for bullets
    html = _HtmlText()
    for token in tokens:
        kind = token.type
        if kind == "inline":
            out.append(_inline(token.children or (), html))
        elif kind in ("fence", "code_block"):
            out.append(token.content)
        elif kind == "html_block":
            out.append(html.text_of(token.content))
        elif kind.startswith("math_block"):  # an equation number shows beside it
            eqno = f" ({token.info})" if kind == "math_block_eqno" else ""
            out.append(f"\n{math_text(token.content)}{eqno}\n")
        elif kind == "ordered_list_open":
            numbers.append(int(token.attrs.get("start", 1)))
        elif kind == "bullet_list_open":
            numbers.append(None)
        elif kind in ("ordered_list_close", "bullet_list_close"):
            numbers.pop()
        elif kind == "list_item_open":
            number = numbers[-1]
            if number is None:
                out.append(f"{token.markup} ")
            else:
                out.append(f"{number}{token.markup} ")
                numbers[-1] = number + 1
        elif kind == "tr_open":
            out.append("| ")
        elif kind in ("th_close", "td_close"):
            out.append(" | ")
        elif kind in ("paragraph_close", "heading_close", "tr_close", "hr", "list_item_close"):
            out.append("\n")
    return html.finish("".join(out))


@lru_cache(maxsize=4096)  # every episode of a scenario may submit the same summary
def render(text: str) -> str:
    """G2.0: the plain text a person sees of `text` (a summary or a complaint)."""
    source = visible(text)
    shown = _blocks(_MD.parse(source))
    return visible(unreadable(shown) if _tex_defines(source) else shown)
