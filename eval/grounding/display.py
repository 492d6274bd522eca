"""The grader's view of a summary as a person sees it, before any token is read (G2.0).

rewards/README.md G2.0. Markdown (CommonMark with GFM tables and strikethrough) is parsed by
markdown-it-py into a syntax tree and written back as the text it displays: emphasis, links and
code marks gone, list items with the marker they show, table cells between `|`; TeX math
(mdit-py-plugins' delimiters, and `\\[ … \\]` inside a paragraph) as pylatexenc writes it; raw
HTML through `html.parser`, tags gone and their text kept. `shown_characters` is the Unicode
step (line breaks, invisible characters) that every text takes, tool outputs too. Written apart
from `rewards/display.py`, on the same third-party libraries; `python -m checks.reading_parity`
holds the two to the same text.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from functools import lru_cache
from html.parser import HTMLParser
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline
from markdown_it.tree import SyntaxTreeNode
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.texmath import texmath_plugin

REVERSING = ("\u202d", "\u202e")  # LRO and RLO, left for the reader (`eval.grounding.read`)
# UAX #14's mandatory breaks besides LF: each is a line break
_NEWLINES = {ord(c): "\n" for c in "\r\x0b\x0c\x85\u2028\u2029"}
_BREAK_CLASS = "[\r\x0b\x0c\x85\u2028\u2029]"
# a break between digits, or between a digit and the separator beside it
_MID_NUMBER_BREAK = re.compile(
    rf"(?<=\d[.,]){_BREAK_CLASS}(?=\d)|(?<=\d){_BREAK_CLASS}(?=\d|[.,]\d)"
)
_ASCII_TABLE = {**{n: None for n in (*range(0x09), *range(0x0E, 0x20), 0x7F)}, **_NEWLINES}
# Unicode's Default_Ignorable_Code_Point ranges beyond the Cc and Cf categories
_DEFAULT_IGNORABLE = (
    (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
# elements a browser puts on lines of their own, and attributes whose value it shows
BLOCK_ELEMENTS = frozenset({
    "p", "div", "br", "hr", "pre", "blockquote", "section", "article", "aside", "header",
    "footer", "main", "nav", "address", "details", "summary", "dialog", "figure", "figcaption",
    "form", "fieldset", "ul", "ol", "li", "dl", "dt", "dd", "table", "caption", "thead",
    "tbody", "tfoot", "tr", "th", "td", "h1", "h2", "h3", "h4", "h5", "h6",
})  # fmt: skip
SHOWN_ATTRIBUTES = frozenset({"title", "value", "placeholder", "label"})
# a style sheet, a script or embedded graphics can redraw any character: nothing is settled
REDRAWING = frozenset({"style", "script", "link", "svg", "math", "iframe", "object", "embed",
                       "canvas", "frame", "frameset", "applet"})  # fmt: skip
# text shown in place by every viewer; any other element (a form control, an image, a ruby
# annotation, a template, an unknown tag, a closed dialog) one viewer shows and another not
ALWAYS_SHOWN_INLINE = frozenset({
    "a", "abbr", "b", "bdi", "big", "cite", "code", "data", "del", "dfn", "em", "i", "ins", "kbd",
    "label", "mark", "nobr", "output", "q", "s", "samp", "small", "span", "strike", "strong",
    "sub", "sup", "time", "tt", "u", "var", "wbr", "html", "body", "menu", "center",
})  # fmt: skip
VOID_ELEMENTS = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
                           "meta", "source", "track", "wbr"})  # fmt: skip
# style properties that only colour or set the face of text; any other may move or hide it
INERT_STYLES = frozenset({"color", "background", "background-color", "font-weight",
                          "font-style", "font-family"})  # fmt: skip
# marks written into the rendered text, settled in `_settle`, then dropped as controls
_SOMETIMES, _SOMETIMES_END, _MOVED, _MOVED_END = "\x0e", "\x0f", "\x10", "\x11"
# a sometimes-shown stretch touching a digit, or a digit's separator, on either side
_SOMETIMES_BESIDE_DIGITS = re.compile(
    "(?<=\\d)(?:\x0e[^\x0f]*\x0f)+|(?<=\\d[.,])(?:\x0e[^\x0f]*\x0f)+|(?:\x0e[^\x0f]*\x0f)+(?=\\d|[.,]\\d)"
)
_MOVED_STRETCH = re.compile("\x10([^\x11]*)\x11")
# TeX that overlaps or hides glyphs (negative spaces, laps, phantoms, colours), moves or
# stacks them, or draws what pylatexenc does not write (MathJax's `\\unicode`, `\\style`,
# KaTeX's `\\char`, `\\verb`); and TeX that defines macros or loads extensions
_OVERLAP_OR_HIDE = (
    "!", "negthinspace", "negmedspace", "negthickspace", "hspace", "hskip", "kern", "mkern",
    "mskip", "mspace", "hidewidth", "rlap", "llap", "clap", "mathrlap", "mathllap", "mathclap",
    "phantom", "hphantom", "vphantom", "smash", "color", "textcolor", "colorbox", "fcolorbox",
)  # fmt: skip
_MOVE_OR_STACK = (
    "raisebox", "raise", "lower", "moveleft", "moveright", "makebox", "scalebox", "resizebox",
    "rotatebox", "reflectbox", "overset", "underset", "stackrel", "mathchoice",
)  # fmt: skip
_DRAW_UNWRITTEN = (
    "unicode", "char", "verb", "style", "class", "cssId", "htmlClass", "htmlStyle", "htmlId",
    "htmlData",
)  # fmt: skip
TEX_SHIFTING = frozenset(_OVERLAP_OR_HIDE + _MOVE_OR_STACK + _DRAW_UNWRITTEN)
TEX_DEFINING = frozenset({
    "def", "gdef", "edef", "xdef", "let", "futurelet", "newcommand", "renewcommand",
    "providecommand", "DeclareMathOperator", "newenvironment", "renewenvironment", "require",
})  # fmt: skip


@lru_cache(maxsize=4096)
def _invisible(ch: str) -> bool:
    if ch in REVERSING or ch in "\t\n":
        return False
    code = ord(ch)
    ignorable = any(low <= code <= high for low, high in _DEFAULT_IGNORABLE)
    return ignorable or unicodedata.category(ch) in ("Cc", "Cf")


def shown_characters(text: str) -> str:
    """G2.0: CR LF, CR, VT, FF, NEL, LS, PS to a line break, except inside a number, which one
    of them (LF aside) leaves unreadable: some renderers join the digits, others break the
    line, so it reads as what follows an override; every other control, format and
    default-ignorable character dropped (it never splits or joins what is seen)."""
    text = text.replace("\r\n", "\n")
    text = _MID_NUMBER_BREAK.sub(REVERSING[1], text)
    if text.isascii():
        return text.translate(_ASCII_TABLE)
    return "".join([ch for ch in text.translate(_NEWLINES) if not _invisible(ch)])


class _Visible(HTMLParser):
    """The text of raw HTML as displayed (block elements and shown attributes on lines of their
    own, comments and declarations dropped, entities decoded), an ordered list's items with
    the numbers a browser gives them; kept across the HTML pieces of one text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text = ""
        self.counters: list[tuple[int, int] | None] = []  # (next number, step); None: bullets
        self.elements: list[tuple[str, bool, bool]] = []  # (tag, sometimes shown, moved)
        self.redrawn = False

    def piece(self, markup: str) -> str:
        self.text = ""
        self.feed(markup)
        self.close()
        self.reset()
        return self.text

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = {k: v for k, v in attrs}
        if tag in REDRAWING:
            self.redrawn = True
        always = tag in ALWAYS_SHOWN_INLINE or (tag in BLOCK_ELEMENTS and tag != "dialog")
        self._enter(tag, "hidden" in named or not always,
                    tag == "bdo" or _moves(named.get("style")))  # fmt: skip
        before = "\n" if tag in BLOCK_ELEMENTS else ""
        if tag == "ol":
            start = _integer(named.get("start"))
            down = "reversed" in named and start is not None
            self.counters.append((start if start is not None else 1, -1 if down else 1))
        elif tag in ("ul", "menu"):
            self.counters.append(None)
        elif tag == "li" and self.counters and self.counters[-1] is not None:
            number, step = self.counters[-1]
            given = _integer(named.get("value"))
            number = given if given is not None else number
            before += f"{number}. "
            self.counters[-1] = (number + step, step)
        alt = (named.get("alt") or "") if tag == "img" else ""  # in place, as markdown's
        shown = "".join(f"\n{v}\n" for k, v in attrs if k in SHOWN_ATTRIBUTES and v)
        self.text += before + alt + shown
        if tag in VOID_ELEMENTS:
            self._leave(len(self.elements) - 1)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)  # a browser ignores `/>` on a non-void element

    def handle_endtag(self, tag: str) -> None:
        self.text += "\n" if tag in BLOCK_ELEMENTS else ""
        if tag in ("ol", "ul", "menu") and self.counters:
            del self.counters[-1]
        for depth in range(len(self.elements) - 1, -1, -1):
            if self.elements[depth][0] == tag:
                self._leave(depth)
                break

    def _flags(self) -> tuple[bool, bool]:
        return (any(e[1] for e in self.elements), any(e[2] for e in self.elements))

    def _enter(self, tag: str, sometimes: bool, moved: bool) -> None:
        before = self._flags()
        self.elements.append((tag, sometimes, moved))
        after = self._flags()
        self.text += (_SOMETIMES if after[0] > before[0] else "") + (
            _MOVED if after[1] > before[1] else ""
        )

    def _leave(self, depth: int) -> None:
        """Closes the element at `depth` and every one opened inside it."""
        before = self._flags()
        del self.elements[depth:]
        after = self._flags()
        self.text += (_MOVED_END if before[1] > after[1] else "") + (
            _SOMETIMES_END if before[0] > after[0] else ""
        )

    def settle(self, shown: str) -> str:
        """What cannot be settled read as unreadable: each line of a moved or reversed stretch,
        a sometimes-shown stretch touching a number, and, under a style sheet, a script
        or graphics, every line."""
        self.text = ""
        self._leave(0)  # what is still open closes where the text ends
        shown += self.text
        shown = _MOVED_STRETCH.sub(
            lambda m: REVERSING[1] + m[1].replace("\n", "\n" + REVERSING[1]), shown
        )
        shown = _SOMETIMES_BESIDE_DIGITS.sub(REVERSING[1], shown)
        return unreadable_lines(shown) if self.redrawn else shown

    def handle_data(self, data: str) -> None:
        self.text += data


def _integer(attribute: str | None) -> int | None:
    """How a browser reads an integer attribute: leading HTML spaces, a sign, digits."""
    text = (attribute or "").lstrip(" \t\n\f\r")
    sign = text[:1] if text[:1] in "+-" else ""
    digits = ""
    for ch in text[len(sign) :]:
        if not ("0" <= ch <= "9"):
            break
        digits += ch
    return int(sign + digits) if digits else None


def _moves(style: str | None) -> bool:
    """A style attribute with a property other than colour and face (a size, a display, an
    order, a direction): what it holds may be moved, hidden or reversed."""
    names = (part.split(":", 1)[0].strip().lower() for part in (style or "").split(";"))
    return any(n and n not in INERT_STYLES and not n.startswith("text-decoration") for n in names)


def html_shown(markup: str) -> str:
    """One HTML piece's displayed text, on its own."""
    html = _Visible()
    return html.settle(html.piece(markup))


@lru_cache(maxsize=1)
def _tex() -> Any:
    from pylatexenc.latex2text import LatexNodes2Text

    logging.getLogger("pylatexenc").setLevel(logging.ERROR)  # odd TeX is read, not reported

    return LatexNodes2Text()


def _commands(tex: str) -> set[str]:
    """The control sequences of a TeX text: a backslash and its letters, or the one character
    after it (`\\\\` is one command, so `\\\\!` is no `\\!`)."""
    names, k = set(), tex.find("\\")
    while k != -1 and k + 1 < len(tex):
        end = k + 2
        if tex[k + 1].isascii() and tex[k + 1].isalpha():
            while end < len(tex) and tex[end].isascii() and tex[end].isalpha():
                end += 1
        names.add(tex[k + 1 : end])
        k = tex.find("\\", end)
    return names


def unreadable_lines(shown: str) -> str:
    """Each line of `shown` read as after a right-to-left override: unreadable (G2.2)."""
    return "\n".join(REVERSING[1] + line for line in shown.split("\n"))


@lru_cache(maxsize=4096)  # a summary often repeats a formula
def tex_shown(tex: str) -> str:
    """TeX math as pylatexenc writes it (`\\times` ×, `\\text{CAD}` CAD); kept as written when
    it cannot be read; unreadable, line by line, when a command may overlap, hide, move or
    write glyphs that pylatexenc does not show."""
    try:  # a sub- or superscript is set against its base (G2.1's `²`): `10^{2}` shows 102
        shown = str(_tex().latex_to_text(tex)).replace("^", "").replace("_", "")
    except Exception:  # odd TeX must never stop the grader
        shown = tex
    return unreadable_lines(shown) if _commands(tex) & TEX_SHIFTING else shown


def _bracket_math(state: StateInline, silent: bool) -> bool:
    """Display math `\\[ … \\]` in the middle of a paragraph."""
    src, pos = state.src, state.pos
    if src[pos : pos + 2] != "\\[":
        return False
    close = src.find("\\]", pos + 2)
    if close == -1 or close == pos + 2:
        return False
    if not silent:
        state.push("math_display_inline", "math", 0).content = src[pos + 2 : close]
    state.pos = close + 2
    return True


_PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
_PARSER.use(texmath_plugin, delimiters="brackets")
_PARSER.inline.ruler.before("escape", "math_display_inline", _bracket_math)
_PARSER.use(dollarmath_plugin, allow_labels=False, allow_space=False, allow_digits=False,
            double_inline=True)  # fmt: skip
_LINE_END = frozenset({"paragraph", "heading", "tr", "list_item"})


def _shown(node: SyntaxTreeNode, html: _Visible) -> str:
    """What one node of the syntax tree displays; `html` reads its raw HTML in order."""
    kind = node.type
    if kind in ("text", "code_inline", "fence", "code_block"):
        return node.content
    if kind in ("softbreak", "hardbreak", "hr"):
        return "\n"
    if kind in ("html_inline", "html_block"):
        return html.piece(node.content)
    if kind == "math_inline":
        return tex_shown(node.content)
    if kind in ("math_inline_double", "math_display_inline", "math_block"):
        return "\n" + tex_shown(node.content) + "\n"
    if kind == "math_block_eqno":  # the equation's number shows beside it
        return f"\n{tex_shown(node.content)} ({node.info})\n"
    if kind in ("ordered_list", "bullet_list"):
        first = int(node.attrs.get("start", 1))
        numbered = kind == "ordered_list"
        return "".join(
            (f"{first + k}" if numbered else "") + f"{item.markup} " + _shown(item, html)
            for k, item in enumerate(node.children)
        )
    inner = "".join(_shown(child, html) for child in node.children)
    if kind in ("link", "image") and node.attrs.get("title"):
        inner = f"\n{node.attrs['title']}\n{inner}"  # a tooltip: read, fail closed
    if kind == "tr":
        return f"| {inner}\n"
    if kind in ("th", "td"):
        return f"{inner} | "
    return inner + "\n" if kind in _LINE_END else inner


@lru_cache(maxsize=4096)
def rendered(text: str) -> str:
    """G2.0: the plain text a person sees of a summary or a complaint."""
    source = shown_characters(text)
    html = _Visible()
    shown = html.settle(_shown(SyntaxTreeNode(_PARSER.parse(source)), html))
    if _commands(source) & TEX_DEFINING:  # a macro may then show anything, anywhere
        shown = unreadable_lines(shown)
    return shown_characters(shown)
