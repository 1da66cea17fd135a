"""Where each field of a rendered Helm object is written: the template's skeleton, matched.

Helm keeps no source map (helm/helm#11552), so this reads a template as the YAML it will
become: actions (`{{ ... }}`) are set aside, control actions (`if`, `with`, `range`, `else`,
`end`) are remembered as the blocks each line sits in, and the literal lines, YAML comments
dropped (`#` after a blank, outside quotes; one inside an action is the action's), are parsed
by their indentation into a skeleton of mappings and sequences whose keys and items carry
their line. An action alone on a line, or after a key, with `nindent`/`indent` is a splice:
whatever it outputs lands at that place. The rendered object is then walked together with
the skeleton:

- a key written literally is placed on its line; between `if`/`else` branches writing the
  same key, the branch whose condition holds for the values (simple conditions on values
  are evaluated: `.Values.x`, `not`, `and`, `or`, `eq`, `ne`), else the one whose literal
  values and structure agree with the output;
- list items are matched to the items the template writes, in order: one inside `range`
  stands for as many as the values it ranges over hold, one inside `if`/`with` for zero or
  one; an `include`d helper writing items lends them its own lines;
- what a splice outputs is looked up where it comes from: an `include`d helper's own
  skeleton (in _helpers.tpl, any chart of the render), or, for `toYaml` of values (`.Values.x`,
  `.` in `with .Values.x`, `$v` after `$v := .Values.x`, also through `tpl`, or handed to a
  helper in a dict), the values-file line that sets the field;
- a key written by an action (`{{ $k }}: ...` in a `range`) is placed on that line when it
  is the only such line of its mapping.

Anything else (a field a helper computes, a branch that cannot be told apart) is left out,
and the caller reports it at its nearest enclosing field.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator, NamedTuple, Protocol, Sequence, Union

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .rendered import FieldPath, Place

ONCE, OPTIONAL, MANY = 0, 1, 2
_FIT_DEPTH = 4  # how deep a candidate's structure is compared with the output
_MAX_DEPTH = 64  # helpers including helpers: beyond this, nothing is resolved

_ACTION = re.compile(r"\{\{(-[ \t\r\n])?(.*?)([ \t\r\n]-)?\}\}", re.S)
_ASSIGN = re.compile(r"(\$\w*)\s*(:?=)\s*(.*)", re.S)
_NINDENT = re.compile(r"\bnindent\s+(\d+)")
_INDENT = re.compile(r"\bindent\s+(\d+)")
_BLOCK_SCALAR = re.compile(r"[|>][-+0-9]*\s*(?:#.*)?$")
_VALUES_REF = re.compile(r"\$?\.Values((?:\.[A-Za-z_][\w-]*)*)")
_REFERENCE = re.compile(r"\$?\.Values(?:\.[A-Za-z_][\w-]*)+|\$\w+(?:\.[A-Za-z_][\w-]*)*")  # values, or a variable
_DOT_REF = re.compile(r"\.([A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*)")
_ROOT_OBJECTS = ("Values", "Release", "Chart", "Capabilities", "Template", "Files")

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]


class Values(Protocol):
    """The value set of a render, as the chart of a template sees it."""

    def find(self, path: FieldPath) -> tuple[Place, Node] | None:
        """Where the values path is set (by the file that wins), and the node set there."""

    def size(self, path: FieldPath) -> int | None:
        """How many items (list) or keys (map, merged over the files) the values path holds."""

    def truthy(self, path: FieldPath) -> bool | None:
        """Whether the value at the path is true for `if` (not false, 0, "", null, empty, or absent)."""


class _Action(NamedTuple):
    start: int
    end: int
    inner: str
    kind: str  # out, if, with, range, else, end, define, assign, none
    trim_left: bool
    trim_right: bool


class _Block:
    """An open `if`/`with`/`range`, or an `else` branch, around template lines.

    `conditions` are what must hold for its lines to be output: (expression, truth wanted),
    `{{ else if .b }}` after `{{ if .a }}` being ((".a", False), (".b", True)).
    """

    __slots__ = ("kind", "expr", "conditions", "compiled")

    def __init__(self, kind: str, expr: str, conditions: tuple[tuple[str, bool], ...]) -> None:
        self.kind = kind  # if, with, range, else (an `else with` is a with: it sets the dot)
        self.expr = expr
        self.conditions = conditions
        # its conditions _compiled, for every member inside (None: not yet; False: they name variables,
        # whose meaning may differ from member to member)
        self.compiled: tuple[tuple[Any, bool], ...] | bool | None = None


def _opened(kind: str, expr: str) -> _Block:
    return _Block(kind, expr, () if kind == "range" else ((expr, True),))


def _otherwise(opened: _Block, inner: str) -> _Block:
    """The block `{{ else }}` / `{{ else if X }}` / `{{ else with X }}` opens after `opened`."""
    previous = opened.conditions or ((opened.expr, True),)
    negated = (*previous[:-1], (previous[-1][0], False))
    words = inner.split(None, 2)
    if len(words) == 3 and words[1] in ("if", "with"):
        return _Block(words[1], words[2], (*negated, (words[2], True)))
    return _Block("else", "", negated)


Variables = dict[str, tuple[str, tuple[_Block, ...]]]  # `$name` -> the expression assigned, and where


class Splice:
    """An action whose output is YAML structure at its place (`include ... | nindent 4`)."""

    __slots__ = ("line", "column", "expr", "blocks", "variables", "conditions")

    def __init__(self, line: int, column: int, expr: str, blocks: tuple[_Block, ...], variables: Variables) -> None:
        self.line = line
        self.column = column
        self.expr = expr
        self.blocks = blocks
        self.variables = variables
        self.conditions: _Conditions | None = None  # its blocks' conditions compiled (_compiled), when first asked


class Entry:
    """A key of a mapping, or an item of a sequence (key None), as the template writes it."""

    __slots__ = ("key", "dynamic", "line", "column", "blocks", "variables", "literal", "templated", "flow",
                 "flow_text", "value", "conditions")

    def __init__(self, key: str | None, dynamic: bool, line: int, column: int, blocks: tuple[_Block, ...],
                 variables: Variables) -> None:
        self.key = key
        self.dynamic = dynamic  # the key is made by an action
        self.line = line
        self.column = column
        self.blocks = blocks
        self.variables = variables  # for the conditions of its blocks
        self.literal: str | None = None  # the scalar value as written, when no action makes it
        self.templated = False  # an action makes the scalar value
        self.flow = False  # a flow collection (`[a, b]`, `{a: 1}`) written on the line
        self.flow_text: Any = None  # that collection as plain data, when no action writes in it
        self.value: Container | None = None  # what is written below it (or spliced in there)
        self.conditions: _Conditions | None = None  # its blocks' conditions compiled (_compiled), when first asked


class Container:
    """A mapping or sequence of the template ("any" until its first member tells)."""

    __slots__ = ("kind", "column", "blocks", "file", "members", "index")

    def __init__(self, kind: str, column: int, blocks: tuple[_Block, ...], file: str) -> None:
        self.kind = kind
        self.column = column
        self.blocks = blocks
        self.file = file
        self.members: list[Entry | Splice] = []
        self.index: _Index | None = None  # its members by key, once the template is read (_indexed)


class Document(NamedTuple):
    """One `---`-separated document of a template: where it starts, and its skeleton."""

    line: int
    column: int
    root: Container


class Template(NamedTuple):
    """A parsed template file: its documents and the helpers it defines."""

    file: str
    documents: list[Document]
    defines: dict[str, Container]


class _Line(NamedTuple):
    number: int
    masked: str  # the line with each output action as one \x00, a control action after text as \x01
    columns: Sequence[int]  # the original 0-based column of each masked character
    outputs: list[_Action]  # the output actions, in the order of their \x00
    blocks: tuple[_Block, ...]  # the blocks open where the line's content starts
    variables: Variables  # the template variables in scope there


# -- reading templates --------------------------------------------------------------------------

def parse_template(text: str, file: str) -> Template:
    """The skeleton of a template file (its documents) and of each helper it defines."""
    text = text.replace("\r\n", "\n")
    actions = [_action(m) for m in _ACTION.finditer(text)]
    defines: list[tuple[str, int, int]] = []
    skip: list[tuple[int, int]] = []
    stack: list[_Action | None] = []
    for action in actions:
        if action.kind in ("if", "with", "range"):
            stack.append(None)
        elif action.kind == "define":
            stack.append(action)
        elif action.kind == "end" and stack:
            opened = stack.pop()
            if opened is not None and not any(s is not None for s in stack):
                named = re.match(r'\w+\s+"([^"]*)"', opened.inner)
                if named:
                    defines.append((named.group(1), opened.end, action.start))
                skip.append((opened.start, action.end))
    documents = _Builder(file, split=True).run(_lines(text, actions, 0, len(text), skip))
    helpers: dict[str, Container] = {}
    for name, start, end in defines:
        found = _Builder(file, split=False).run(_lines(text, actions, start, end, []))
        if found:
            helpers[name] = found[0].root
    return Template(file, documents, helpers)


def _action(match: re.Match[str]) -> _Action:
    inner = match.group(2).strip()
    word = inner.split(None, 1)[0] if inner else ""
    if inner.startswith("/*") or word in ("break", "continue") or not inner:
        kind = "none"
    elif word in ("if", "with", "range", "else", "end"):
        kind = word
    elif word in ("define", "block"):
        kind = "define"
    elif _ASSIGN.match(inner):
        kind = "assign"
    else:
        kind = "out"
    return _Action(match.start(), match.end(), inner, kind, match.group(1) is not None, match.group(3) is not None)


def _lines(text: str, actions: list[_Action], start: int, end: int, skip: list[tuple[int, int]],
           whole: bool = True) -> Iterator[_Line]:
    """The logical lines of text[start:end], actions set aside, with the blocks each sits in.

    `whole`: a line without actions is given at once (False: piece by piece, as lines with actions;
    the same lines, tests/linter/units/test_helmmap_lines.py compares them)."""
    blocks: list[_Block] = []
    scopes: list[Variables] = [{}]  # variables, per open block
    number = text.count("\n", 0, start) + 1
    line_start = text.rfind("\n", 0, start) + 1
    masked: list[str] = []
    spans: list[range] = []  # the original columns of the masked pieces (a line without actions: one range)
    outputs: list[_Action] = []
    snapshot: tuple[_Block, ...] | None = None
    open_blocks: tuple[_Block, ...] = ()  # tuple(blocks) and _visible(scopes), made again only when they change
    visible: Variables = {}
    first = number
    pos = start
    events: list[tuple[int, int, _Action | None]] = [(a.start, a.end, a) for a in actions if start <= a.start < end]
    events.extend((s, e, None) for s, e in skip if start <= s < end)
    events.sort(key=lambda e: e[0])
    events.append((end, end, None))
    for event_start, event_end, action in events:
        if event_start < pos:
            continue
        # literal text up to the event, line by line
        segment_start = pos
        while True:
            newline = text.find("\n", segment_start, event_start)
            if whole and newline >= 0 and segment_start == line_start and not masked:
                # a whole line without actions (most of a CRD template): its one piece, columns from 0, the
                # blocks and variables open before it (nothing masked: no snapshot, no outputs)
                yield _Line(number, text[segment_start:newline], range(newline - segment_start), [], open_blocks, visible)
                number += 1
                first = number
                line_start = segment_start = newline + 1
                continue
            stop = event_start if newline < 0 else newline
            if stop > segment_start:
                piece = text[segment_start:stop]
                if snapshot is None and not piece.isspace():
                    snapshot = open_blocks
                masked.append(piece)
                spans.append(range(segment_start - line_start, stop - line_start))
            if newline < 0:
                break
            yield _Line(first, masked[0] if len(masked) == 1 else "".join(masked), _columns(spans), outputs,
                        snapshot or open_blocks, visible)
            masked, spans, outputs, snapshot = [], [], [], None
            number += 1
            first = number
            line_start = newline + 1
            segment_start = newline + 1
        if event_start >= end:
            break
        if action is not None and action.kind == "out":
            if snapshot is None:
                snapshot = open_blocks
            masked.append("\x00")
            spans.append(range(event_start - line_start, event_start - line_start + 1))
            outputs.append(action)
        if action is not None and action.kind in ("if", "with", "range", "else", "end") and snapshot is not None:
            masked.append("\x01")  # `a: {{ if .x }}1{{ else }}2{{ end }}`: the text around it is no literal
            spans.append(range(event_start - line_start, event_start - line_start + 1))
        if action is not None and action.kind in ("if", "with", "range"):
            blocks.append(_opened(action.kind, action.inner.split(None, 1)[1] if " " in action.inner else ""))
            scopes.append({})
        elif action is not None and action.kind == "else" and blocks:
            opened = blocks.pop()
            blocks.append(_otherwise(opened, action.inner))
            scopes[-1] = {}
        elif action is not None and action.kind == "end" and blocks:
            blocks.pop()
            scopes.pop()
        elif action is not None and action.kind == "assign":
            _assign(scopes, action.inner, tuple(blocks))
        if action is not None and action.kind in ("if", "with", "range", "else", "end", "assign"):
            open_blocks, visible = tuple(blocks), _visible(scopes)
        inside = text.count("\n", event_start, event_end)
        if inside:
            number += inside
            line_start = text.rfind("\n", event_start, event_end) + 1
        pos = event_end
        if action is not None and action.trim_right:  # `-}}` eats the blanks after it: `{{ x -}}  # y` writes `X# y`
            while pos < end and text[pos] in " \t":
                pos += 1
    if masked:
        yield _Line(first, "".join(masked), _columns(spans), outputs, snapshot or open_blocks, visible)


def _columns(spans: list[range]) -> Sequence[int]:
    """The original column of each masked character of a line: its one range, or them all."""
    if len(spans) == 1:
        return spans[0]
    return [column for span in spans for column in span]


def _visible(scopes: list[Variables]) -> Variables:
    if len(scopes) == 1 and not scopes[0]:
        return {}
    return {name: value for scope in scopes for name, value in scope.items()}


def _assign(scopes: list[Variables], inner: str, blocks: tuple[_Block, ...]) -> None:
    """`$x := expr` declares in the innermost block; `$x = expr` sets where `$x` was declared."""
    match = _ASSIGN.match(inner)
    if match is None:
        return
    name, operator, expr = match.groups()
    target = scopes[-1]
    if operator == "=":
        target = next((scope for scope in reversed(scopes) if name in scope), target)
    target[name] = (expr.strip(), blocks)


def _splice_column(action: _Action, column: int) -> int:
    nindent = _NINDENT.search(action.inner)
    if nindent:
        return int(nindent.group(1))
    indent = _INDENT.search(action.inner)
    if indent:
        return (0 if action.trim_left else column) + int(indent.group(1))
    return column


def _block_output(action: _Action) -> bool:
    return _NINDENT.search(action.inner) is not None or _INDENT.search(action.inner) is not None


class _Builder:
    """Lines -> documents of containers, by indentation, as a YAML parser would nest them."""

    def __init__(self, file: str, split: bool) -> None:
        self.file = file
        self.split = split
        self.documents: list[Document] = []
        self.stack: list[Container] = []
        self.pending: tuple[Entry, int] | None = None  # an entry whose value starts on a later line
        self.scalar_above: int | None = None  # inside a block scalar: lines deeper than this are text
        self.inline: tuple[Entry, int, str] | None = None  # the last scalar written after a key or dash,
        # its column, its text: deeper lines continue it (a plain or quoted scalar over several lines)

    def run(self, lines: Iterator[_Line]) -> list[Document]:
        for line in lines:
            self._line(line)
        return self.documents

    def _line(self, line: _Line) -> None:
        text = line.masked
        comment = _comment_at(text) if "#" in text else -1
        if comment >= 0:
            text = text[:comment]
        first = len(text) - len(text.lstrip())
        content = text[first:].rstrip()
        if not content:
            return
        column = line.columns[first]
        splice_only = "\x00" in content and not content.replace("\x00", "").replace("\x01", "").strip()
        effective = _splice_column(line.outputs[0], column) if splice_only else column
        if self.scalar_above is not None:
            if effective > self.scalar_above:
                return
            self.scalar_above = None
        if self.inline is not None:
            entry, above, written = self.inline
            if column > above and not splice_only:
                self._scalar(entry, f"{written} {content}", line, 0, above)
                return
            self.inline = None
        if self.split and column == 0 and (content == "---" or content.startswith(("--- ", "---\t"))):
            self.stack, self.pending = [], None
            return
        if splice_only:
            container = self._place(effective, "splice", line)
            if container is not None:
                container.members.append(Splice(line.number, column + 1, line.outputs[0].inner, line.blocks, line.variables))
            return
        self._tokens(line, first, content)

    def _tokens(self, line: _Line, first: int, content: str) -> None:
        index = 0
        item: Entry | None = None
        while content[0] == "-" and (content.startswith("- ", index) or content[index:] == "-"):  # items start with a dash
            column = line.columns[first + index]
            container = self._place(column, "dash", line)
            if container is None:
                return
            index += 1
            while index < len(content) and content[index] == " ":
                index += 1
            item = Entry(None, False, line.number, (line.columns[first + index] if index < len(content) else column + 2) + 1,
                         line.blocks, line.variables)
            container.members.append(item)
            self.pending = (item, column)
        rest = content[index:]
        if not rest or rest.startswith("#"):
            return
        column = line.columns[first + index]
        outputs_before = line.masked[:first + index].count("\x00") if line.outputs else 0  # none: no action to index
        key = _split_key(rest)
        if key is None:
            if item is not None:  # `- scalar`
                self.pending = None
                self._scalar(item, rest.strip(), line, outputs_before, column - 2)
            return
        name, dynamic, value_at = key
        container = self._place(column, "key", line)
        if container is None:
            return
        entry = Entry(None if dynamic else name, dynamic, line.number, column + 1, line.blocks, line.variables)
        container.members.append(entry)
        value = rest[value_at:].strip()
        if not value:
            self.pending = (entry, column)
            return
        self._scalar(entry, value, line, outputs_before + rest[:value_at].count("\x00") if line.outputs else 0, column)

    def _scalar(self, entry: Entry, value: str, line: _Line, outputs_before: int, column: int) -> None:
        """The value written on the entry's own line: text, an action, a block scalar, a splice."""
        if value[0] in "|>" and _BLOCK_SCALAR.match(value):
            self.scalar_above = column
            return
        if value == "\x00" and _block_output(line.outputs[outputs_before]):
            # `labels: {{- include "x.labels" . | nindent 4 }}`, maybe more keys below at that indentation
            action = line.outputs[outputs_before]
            below = _splice_column(action, column)  # at the key's own column only items can follow
            opened = Container("any" if below > column else "seq", below, entry.blocks, self.file)
            opened.members.append(Splice(line.number, entry.column, action.inner, line.blocks, line.variables))
            entry.value = opened
            self.stack.append(opened)
            return
        self.inline = (entry, column, value)
        entry.literal = entry.flow_text = None
        if value.startswith(("{", "[")):
            entry.flow = True
            if not _made(value):
                entry.flow_text = _flow(value)
        elif _made(value):
            entry.templated = True
        elif not value.startswith(("&", "*", "!")):
            entry.literal = _unquote(value)

    def _place(self, column: int, kind: str, line: _Line) -> Container | None:
        """The container a key, item (dash) or splice at `column` joins, opening one if it starts here."""
        if self.pending is not None:
            entry, above = self.pending
            self.pending = None
            # `key:` then `- item` (or a splice of items) at the key's own column: YAML's compact sequence
            compact = column == above and kind in ("dash", "splice") and entry.key is not None
            if column > above or compact:
                opened = Container("seq" if compact or kind == "dash" else "map" if kind == "key" else "any",
                                   column, entry.blocks, self.file)
                entry.value = opened
                self.stack.append(opened)
                return opened
        while self.stack:
            top = self.stack[-1]
            if top.column > column:
                self.stack.pop()
            elif top.column == column:
                if top.kind == "any" and kind != "splice":
                    top.kind = "seq" if kind == "dash" else "map"
                if kind == "splice" or top.kind == ("seq" if kind == "dash" else "map"):
                    return top
                self.stack.pop()
            else:
                return top if kind == "splice" else None
        root = Container({"dash": "seq", "key": "map"}.get(kind, "any"), column, line.blocks, self.file)
        self.stack.append(root)
        self.documents.append(Document(line.number, column + 1, root))
        return root


def _split_key(text: str) -> tuple[str, bool, int] | None:
    """`key: value` -> (key, made by an action, where the value starts); None when not a key."""
    if text[0] in "\"'":
        quote = text[0]
        end = 1
        while True:
            end = text.find(quote, end)
            if end < 0:
                return None
            if quote == "'" and text.startswith("''", end):
                end += 2
                continue
            if quote == '"' and text[end - 1] == "\\":
                end += 1
                continue
            break
        after = end + 1
        while after < len(text) and text[after] == " ":
            after += 1
        if not text.startswith(":", after) or (after + 1 < len(text) and text[after + 1] not in " \t"):
            return None
        return _unquote(text[:end + 1]), _made(text[:end + 1]), after + 1
    if text[0] in "{[|>&*!%@`?":
        return None
    at = 0
    while True:
        at = text.find(":", at)
        if at < 0:
            return None
        if at + 1 == len(text) or text[at + 1] in " \t":
            break
        at += 1
    key = text[:at].rstrip()
    if " #" in key or not key:
        return None
    return key, _made(key), at + 1


def _flow(text: str) -> Any:
    """A literal flow collection as plain data (see _plain); None when it does not parse."""
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return None
    return None if node is None else _plain(node)


def _made(text: str) -> bool:
    """Whether an action writes (part of) this text."""
    return "\x00" in text or "\x01" in text


def _comment_at(masked: str) -> int:
    """Where a line's YAML comment starts (its `#`), or -1: a `#` at the start or after a blank,
    outside quoted scalars. Actions are masked already, so a `#` inside `{{ }}` is never seen;
    an action's output counts as text (`{{ .x }}#y` is no comment)."""
    if "#" not in masked:
        return -1
    quote = ""
    node_start = True  # a quoted scalar can open here (line start, after `- `, `: `, `? `, and in flow `[`, `{`, `,`)
    flow = 0
    at = 0
    while at < len(masked):
        char = masked[at]
        if quote:
            if quote == '"' and char == "\\":
                at += 1
            elif char == quote and quote == "'" and masked.startswith("''", at):
                at += 1
            elif char == quote:
                quote = ""
                node_start = False
        elif char in " \t":
            pass
        elif char == "#" and (at == 0 or masked[at - 1] in " \t"):
            return at
        elif char in "\"'" and node_start:
            quote = char
        elif char in "-:?" and masked[at + 1:at + 2] in ("", " ", "\t"):
            node_start = True
        elif char in "[{" and (node_start or flow):
            flow += 1
            node_start = True
        elif char in "]}" and flow:
            flow -= 1
            node_start = False
        elif char == "," and flow:
            node_start = True
        else:
            node_start = False
        at += 1
    return -1


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value


# -- matching rendered objects --------------------------------------------------------------------

Helpers = Callable[[str], Union[Container, None]]


def map_object(node: Node, template: Template, helpers: Helpers, values: Values,
               memo: dict[int, bool | None] | None = None,
               asked: Asked | None = None, wanted: frozenset[FieldPath] | None = None) -> tuple[Place, dict[FieldPath, Place]]:
    """The anchor of a rendered object (its document's first line) and the places of its fields.

    `helpers` finds a helper's skeleton by name (`include "web.labels"`); `values` says where
    the value set writes a values path; `memo`, shared by the objects of one render (one value
    set), keeps the conditions already evaluated. `asked`, when given, is filled with every
    question the mapping put to the values and its answer: the mapping is a function of the
    object, the template and those answers, so another value set that answers them all alike
    (`answers_alike`) maps the same object to the same places. With `wanted`, only the keys of
    mappings on those paths are followed (their places are the same as in a whole mapping: each
    key is placed apart from its siblings), so an object's name costs little without the rest.
    """
    mapper = _Mapper(helpers, values, {} if memo is None else memo, asked, wanted)
    live = [d for d in template.documents if not d.root.members or mapper.active(d.root.members[0]) is not False]
    document = _document(node, live or template.documents)
    if document is None:
        return (template.file, 1, 1), {}
    anchor = (template.file, document.line, document.column)
    mapper.positions[()] = anchor
    mapper.container(node, document.root, (), 0)
    return anchor, mapper.positions


def _document(node: Node, documents: list[Document]) -> Document | None:
    """The document of the template that most likely wrote `node` (a template may hold several)."""
    best: Document | None = None
    best_score = -1
    for document in documents:
        score = _fit(node, document.root, 0)
        if score > best_score:
            best, best_score = document, score
    if best is None:
        best = next((d for d in documents if d.root.kind != "seq"), None)
    return best


def _multiplicity(member: Entry | Splice, container: Container) -> int:
    """How often a member is written within one instance of its container: once, maybe, or any number."""
    outer = container.blocks
    inner = member.blocks[len(outer):] if member.blocks[:len(outer)] == outer else member.blocks
    if any(block.kind == "range" for block in inner):
        return MANY
    return OPTIONAL if inner else ONCE


def _fit(node: Node, container: Container, depth: int) -> int:
    """How well the container's literal keys and values explain `node`; -1 when it cannot have written it."""
    if isinstance(node, ScalarNode):  # nothing came out (`volumeMounts:` with only `toYaml` below): fine if optional
        empty = node.tag.endswith(":null")
        return 0 if empty and not any(_multiplicity(m, container) == ONCE for m in container.members) else -1
    if isinstance(node, SequenceNode):
        return -1 if container.kind == "map" else _fit_items(node, container, depth)
    if not isinstance(node, MappingNode) or container.kind == "seq":
        return -1
    if depth >= _FIT_DEPTH:
        return 0
    keys = {k.value: v for k, v in node.value if isinstance(k, ScalarNode)}
    spliced = any(isinstance(m, Splice) or m.dynamic for m in container.members)
    written: dict[str, list[Entry]] = {}
    for member in container.members:
        if isinstance(member, Entry) and member.key is not None:
            written.setdefault(member.key, []).append(member)
    score = 0
    for key, entries in written.items():
        value = keys.get(key)
        if value is None:
            if any(_multiplicity(e, container) == ONCE for e in entries):
                return -1
            continue
        best = max(_fit_value(e, value, depth + 1) for e in entries)
        if best < 0 and not spliced:
            return -1
        score += 1 + max(best, 0)
    return score


def _fit_items(node: SequenceNode, container: Container, depth: int) -> int:
    """The items the template always writes must be among the rendered ones (a literal, or an item
    whose literal keys and values agree with one)."""
    if depth >= _FIT_DEPTH:
        return 0
    rendered = {item.value for item in node.value if isinstance(item, ScalarNode)}
    score = 0
    for member in container.members:
        if not isinstance(member, Entry) or member.key is not None or _multiplicity(member, container) != ONCE:
            continue
        if member.literal is not None:
            if member.literal not in rendered:
                return -1
            score += 2
        elif isinstance(member.value, Container) or member.flow_text is not None:
            best = max((_fit_value(member, item, depth + 1) for item in node.value), default=-1)
            if best < 0:
                return -1
            score += best
    return score


def _fit_value(entry: Entry, node: Node, depth: int) -> int:
    if entry.literal is not None:
        return 2 if isinstance(node, ScalarNode) and node.value == entry.literal else -1
    if entry.flow_text is not None:  # `verbs: [list, watch]`, compared as data
        return 2 if _plain(node) == entry.flow_text else -1
    if isinstance(entry.value, Container):
        return _fit(node, entry.value, depth)
    return 0


def _plain(node: Node) -> Any:
    """A node as nested lists, dicts and scalar texts, for comparing what was written with what came out."""
    if isinstance(node, MappingNode):
        return {_plain(k): _plain(v) for k, v in node.value}
    if isinstance(node, SequenceNode):
        return [_plain(item) for item in node.value]
    return node.value


def _choose(candidates: list[Entry], node: Node) -> Entry | None:
    """Which of the entries writing one key wrote this value (if/else branches); None if unclear."""
    if len(candidates) == 1:
        only = candidates[0]
        mismatch = only.literal is not None and not (isinstance(node, ScalarNode) and node.value == only.literal)
        return None if mismatch else only
    scored = [(_fit_value(e, node, 1), e) for e in candidates]
    best = max(score for score, _ in scored)
    top = [e for score, e in scored if score == best]
    return top[0] if best >= 0 and len(top) == 1 else None


Asked = dict[tuple[str, Any], Any]  # ("active", a member's _Conditions) -> whether they hold;
# ("size" | "find", values path) -> the answer (_found's summary for find)


def answers_alike(asked: Asked, values: Values, memo: dict[int, bool | None]) -> bool:
    """Whether a value set (`values`; `memo` is its own, unused) answers every question of `asked` as it was answered."""
    for (kind, subject), answer in asked.items():
        if kind == "active":
            got: Any = _holds(subject, values)
        else:
            got = values.size(subject) if kind == "size" else _found(values.find(subject))
        if got != answer:
            return False
    return True


def _holds(conditions: _Conditions, values: Values) -> bool | None:
    """Whether the conditions of the blocks around a member hold for this value set (None: unknown)."""
    result: bool | None = True
    for block in conditions:
        for compiled, wanted in block:
            truth = _evaluate(compiled, values)
            if truth is None:
                result = None
            elif truth != wanted:
                return False
    return result


def _found(found: tuple[Place, Node] | None) -> tuple[Place, bool, str | None] | None:
    """What the mapping reads of values.find's answer: the place, whether a scalar, its text."""
    if found is None:
        return None
    scalar = isinstance(found[1], ScalarNode)
    return found[0], scalar, found[1].value if scalar else None


_Conditions = tuple[tuple[tuple[Any, bool], ...], ...]  # per block around a member: (compiled condition, truth wanted)
_Index = tuple[dict[str, list[Entry]], list[Splice], list[Entry]]  # entries by key, splices, entries with made keys


def _indexed(container: Container) -> _Index:
    """A container's members by what they write (the template is read once for every value set)."""
    if container.index is None:
        by_key: dict[str, list[Entry]] = {}
        splices: list[Splice] = []
        dynamic: list[Entry] = []
        for member in container.members:
            if isinstance(member, Splice):
                splices.append(member)
                continue
            if member.key is not None:
                by_key.setdefault(member.key, []).append(member)
            if member.dynamic:
                dynamic.append(member)
        container.index = (by_key, splices, dynamic)
    return container.index


def _member_conditions(member: Entry | Splice) -> _Conditions:
    if member.conditions is None:
        member.conditions = tuple(_block_conditions(member, at, block) for at, block in enumerate(member.blocks))
    return member.conditions


def _block_conditions(member: Entry | Splice, at: int, block: _Block) -> tuple[tuple[Any, bool], ...]:
    """A block's conditions compiled as `member` sees them: once for every member when neither they nor
    the blocks around them name a variable (the blocks around a block are the same for all inside it)."""
    if block.compiled is None:
        named = any("$" in outer.expr or any("$" in expr for expr, _ in outer.conditions) for outer in member.blocks[:at + 1])
        block.compiled = False if named else tuple(
            (_compiled(expr, member.blocks[:at], member.variables), wanted) for expr, wanted in block.conditions)
    if block.compiled is not False:
        assert not isinstance(block.compiled, bool)
        return block.compiled
    return tuple((_compiled(expr, member.blocks[:at], member.variables), wanted) for expr, wanted in block.conditions)


class _Mapper:
    def __init__(self, helpers: Helpers, values: Values, memo: dict[int, bool | None], asked: Asked | None = None,
                 wanted: frozenset[FieldPath] | None = None) -> None:
        self.helpers = helpers
        self.values = values
        self.positions: dict[FieldPath, Place] = {}
        self._active = memo
        self.asked = asked
        self.wanted = wanted  # the only paths of mapping keys followed (map_object), or None for all

    def active(self, member: Entry | Splice) -> bool | None:
        """Whether the conditions of the blocks around a member hold for this value set (None: unknown)."""
        known = self._active.get(id(member), 0)
        if known != 0:
            result = None if known is None else bool(known)
        else:
            result = self._active[id(member)] = _holds(_member_conditions(member), self.values)
        if self.asked is not None:
            self.asked["active", _member_conditions(member)] = result  # members under the same conditions: one question
        return result

    def find(self, path: FieldPath) -> tuple[Place, Node] | None:
        found = self.values.find(path)
        if self.asked is not None:
            self.asked["find", path] = _found(found)
        return found

    def size(self, path: FieldPath) -> int | None:
        size = self.values.size(path)
        if self.asked is not None:
            self.asked["size", path] = size
        return size

    def how_often(self, member: Entry, container: Container) -> int:
        """_multiplicity, with `if`/`with` blocks whose conditions are known to hold counted as none."""
        how = _multiplicity(member, container)
        return ONCE if how == OPTIONAL and self.active(member) else how

    def container(self, node: Node, container: Container, path: FieldPath, depth: int) -> None:
        if depth > _MAX_DEPTH:
            return
        if isinstance(node, MappingNode) and container.kind != "seq":
            wanted = self.wanted
            for key_node, value in node.value:
                if isinstance(key_node, ScalarNode) and (wanted is None or (*path, key_node.value) in wanted):
                    self.key(container, key_node.value, value, (*path, key_node.value), depth)
        elif isinstance(node, SequenceNode) and container.kind != "map":
            self.sequence(list(enumerate(node.value)), container, path, depth)

    def key(self, container: Container, key: str, value: Node, path: FieldPath, depth: int) -> bool:
        """Place one key of a rendered mapping written by `container` (literally, spliced, or by an action)."""
        by_key, splices, made = _indexed(container)
        candidates = [m for m in by_key.get(key, ()) if self.active(m) is not False]
        if candidates:
            chosen = _choose(candidates, value)
            if chosen is not None:
                self.positions[path] = (container.file, chosen.line, chosen.column)
                self.value(chosen, value, container.file, path, depth)
                return True
            if len(candidates) > 1:
                return False
        for splice in splices:
            if self.active(splice) is not False and self.spliced_key(splice, key, value, path, depth):
                return True
        dynamic = [m for m in made if self.active(m) is not False]
        if len(dynamic) == 1:
            self.positions[path] = (container.file, dynamic[0].line, dynamic[0].column)
            self.value(dynamic[0], value, container.file, path, depth)
            return True
        return False

    def spliced_key(self, splice: Splice, key: str, value: Node, path: FieldPath, depth: int) -> bool:
        if depth >= _MAX_DEPTH:
            return False
        for target in self.resolve(splice):
            if isinstance(target, Container):
                if target.kind != "seq" and self.key(target, key, value, path, depth + 1):
                    return True
            elif self.from_values(value, (*target.path, key), path, target.templated):
                return True
        return False

    def value(self, entry: Entry, node: Node, file: str, path: FieldPath, depth: int) -> None:
        if entry.flow or entry.templated and getattr(node, "flow_style", False):  # all of it on the entry's line
            self.everything_below(node, path, (file, entry.line, entry.column))
        elif isinstance(entry.value, Container):
            self.container(node, entry.value, path, depth + 1)

    def slots(self, container: Container, depth: int) -> list[tuple[Entry | Splice, Container, int]]:
        """A sequence's members, with the items of `include`d helpers that write items in their place:
        (member, the container it is written in, how often it is written within the sequence)."""
        found: list[tuple[Entry | Splice, Container, int]] = []
        for member in container.members:
            if isinstance(member, Entry) and member.key is not None or self.active(member) is False:
                continue
            if isinstance(member, Entry):
                found.append((member, container, self.how_often(member, container)))
                continue
            how = _multiplicity(member, container)
            how = ONCE if how == OPTIONAL and self.active(member) else how
            helper = next((t for t in self.resolve(member) if isinstance(t, Container)), None)
            if helper is not None and helper.kind != "map" and depth < 8 and any(
                    isinstance(m, Entry) and m.key is None for m in helper.members):
                found.extend((inner, owner, max(how, inner_how)) for inner, owner, inner_how in self.slots(helper, depth + 1))
            else:
                found.append((member, container, MANY))
        return found

    def sequence(self, items: list[tuple[int, Node]], container: Container, path: FieldPath, depth: int) -> None:
        """Match rendered items to the items the template writes, in order; the rest to its splices.

        An item inside `range` stands for as many items as the values it ranges over hold
        (when that is known), one inside `if`/`with` for zero or one (once, when its condition
        is known to hold). Where two members could have written an item and the order does not
        decide, the item is left unplaced.
        """
        slots = self.slots(container, 0)
        start = 0
        used: dict[int, int] = {}
        spliced: dict[int, list[tuple[int, Node]]] = {}
        previous: tuple[_Block, ...] | None = None  # the blocks of the member that wrote the item before
        for index, item in items:
            scored: list[tuple[int, int, bool]] = []  # (score, slot, certain when first)
            splice_at = -1
            for at in range(start, len(slots)):
                member, owner, how = slots[at]
                if isinstance(member, Splice):
                    splice_at = at if splice_at < 0 else splice_at
                    continue
                limit = 1 if how != MANY else self.count(member, owner) if owner is container else None
                if limit is not None and used.get(at, 0) >= limit:
                    continue
                score = _fit_value(member, item, 1)
                if score >= 0:
                    # certain: it must be written here (once, a counted range, or beside the previous item)
                    certain = how == ONCE or limit is not None and how == MANY or how == OPTIONAL and member.blocks == previous
                    scored.append((score, at, certain))
                if how == ONCE:
                    break
            if scored:
                best = max(score for score, _, _ in scored)
                tops = [(at, certain) for score, at, certain in scored if score == best]
                at, certain = tops[0]
                chosen, owner, how = slots[at]
                assert isinstance(chosen, Entry)
                used[at] = used.get(at, 0) + 1
                start = at if how == MANY else at + 1
                previous = chosen.blocks
                if len(tops) == 1 or certain:
                    self.positions[(*path, index)] = (owner.file, chosen.line, chosen.column)
                    self.value(chosen, item, owner.file, (*path, index), depth)
            elif splice_at >= 0:
                spliced.setdefault(splice_at, []).append((index, item))
                start = splice_at
        for at, produced in spliced.items():
            splice = slots[at][0]
            assert isinstance(splice, Splice)
            for target in self.resolve(splice):
                if isinstance(target, Container):
                    continue  # a helper writing items was expanded into slots; this one writes none we know
                for offset, (index, item) in enumerate(produced):
                    self.from_values(item, (*target.path, offset), (*path, index), target.templated)
                break

    def count(self, member: Entry, container: Container) -> int | None:
        """How many items a member inside one `range` over values writes; None when not known."""
        outer = container.blocks
        inner = member.blocks[len(outer):] if member.blocks[:len(outer)] == outer else member.blocks
        if len(inner) != 1 or inner[0].kind != "range":
            return None
        subject = re.sub(r"^\$\w*(?:\s*,\s*\$\w*)?\s*:=\s*", "", inner[0].expr)
        values_path = _values_path(subject, member.blocks[:-1], member.variables)
        return None if values_path is None else self.size(values_path)

    def everything_below(self, node: Node, path: FieldPath, place: Place) -> None:
        if isinstance(node, MappingNode):
            for key_node, value in node.value:
                if isinstance(key_node, ScalarNode):
                    self.positions[(*path, key_node.value)] = place
                    self.everything_below(value, (*path, key_node.value), place)
        elif isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                self.positions[(*path, index)] = place
                self.everything_below(item, (*path, index), place)

    def from_values(self, node: Node, values_path: FieldPath, path: FieldPath, templated: bool = False) -> bool:
        """Place a field spliced from the values on the values line that sets it, if it says the same
        (or, for values that are templates themselves, `tpl`'s input)."""
        found = self.find(values_path)
        if found is None:
            return False
        place, written = found
        if isinstance(node, ScalarNode) != isinstance(written, ScalarNode):
            return False
        if isinstance(node, ScalarNode) and node.value != written.value and not (templated and "{{" in written.value):
            return False
        self.positions[path] = place
        self.values_below(node, values_path, path, templated)
        return True

    def values_below(self, node: Node, values_path: FieldPath, path: FieldPath, templated: bool = False) -> None:
        if isinstance(node, MappingNode):
            for key_node, value in node.value:
                if isinstance(key_node, ScalarNode):
                    self.from_values(value, (*values_path, key_node.value), (*path, key_node.value), templated)
        elif isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                self.from_values(item, (*values_path, index), (*path, index), templated)

    def resolve(self, splice: Splice) -> list[Container | _FromValues]:
        """Where what a splice outputs is written, most certain first: an `include`d helper's skeleton,
        values (`toYaml .Values.x`, `tpl (toYaml ...)`), and for a helper given one `.Values.x` in its
        argument (`include "common.tplvalues.render" (dict "value" .Values.x ...)`) those values too."""
        commands = _pipeline(splice.expr)
        head = commands[0].split(None, 2) if commands else []
        if len(head) > 1 and head[0] in ("include", "template") and head[1].startswith('"'):
            targets: list[Container | _FromValues] = []
            helper = self.helpers(head[1].strip('"'))
            if helper is not None:
                targets.append(helper)
            named = {path for path in (_values_path(m.group(), splice.blocks, splice.variables)
                                       for m in _REFERENCE.finditer(head[2] if len(head) > 2 else "")) if path}
            if len(named) == 1:
                targets.append(_FromValues(named.pop(), True))
            return targets
        templated = head[:1] == ["tpl"]
        if templated:
            commands = _pipeline(_group(commands[0][3:]))
        values_path = _to_yaml(commands, splice.blocks, splice.variables)
        return [] if values_path is None else [_FromValues(values_path, templated)]


class _FromValues(NamedTuple):
    """A splice of values (`toYaml .Values.x`): their path, and whether `tpl` rewrote their strings."""

    path: FieldPath
    templated: bool


def _to_yaml(commands: list[str], blocks: tuple[_Block, ...], variables: Variables) -> FieldPath | None:
    """The values path a pipeline converts with `toYaml` (`toYaml .Values.x`, `.Values.x | toYaml`)."""
    for index, command in enumerate(commands):
        words = command.split(None, 1)
        if words and words[0] == "toYaml":
            argument = words[1] if len(words) > 1 else (commands[index - 1] if index else "")
            return _values_path(argument, blocks, variables, loose=True)
    return None


def _group(text: str) -> str:
    """The inside of the parenthesised group `text` starts with (`(toYaml .Values.x) .` -> `toYaml .Values.x`)."""
    text = text.strip()
    if not text.startswith("("):
        return ""
    depth = 0
    for at, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return text[1:at]
    return ""


def _compiled(expr: str, blocks: tuple[_Block, ...], variables: Variables, depth: int = 0) -> Any:
    """A simple condition on values (`.Values.x`, `not`, `and`, `or`, `eq`, `ne`), read once per template:
    ("truthy", values path), ("not", c), ("and" | "or", (c, ...)), ("eq" | "ne", operand, operand) with
    operands ("text", t) or ("find", values path); None when its truth cannot be known. `_evaluate`
    tells its truth for a value set."""
    words = _words(expr)
    if len(words) == 1 and words[0].startswith("("):
        words = _words(_group(words[0]))
    if not words or depth > 8:
        return None
    head, arguments = words[0], words[1:]
    if head == "not" and len(arguments) == 1:
        inner = _compiled(arguments[0], blocks, variables, depth + 1)
        return None if inner is None else ("not", inner)
    if head in ("and", "or") and len(arguments) >= 2:
        return (head, tuple(_compiled(a, blocks, variables, depth + 1) for a in arguments))
    if head in ("eq", "ne") and len(arguments) == 2:
        left, right = (_compiled_operand(a, blocks, variables) for a in arguments)
        return None if left is None or right is None else (head, left, right)
    if not arguments:
        values_path = _values_path(head, blocks, variables)
        return None if values_path is None else ("truthy", values_path)
    return None


def _compiled_operand(word: str, blocks: tuple[_Block, ...], variables: Variables) -> tuple[str, Any] | None:
    if len(word) >= 2 and word[0] == word[-1] == '"':
        return ("text", word[1:-1])
    if re.fullmatch(r"-?\d+", word) or word in ("true", "false"):
        return ("text", word)
    values_path = _values_path(word, blocks, variables)
    return None if values_path is None else ("find", values_path)


def _evaluate(compiled: Any, values: Values) -> bool | None:
    """The truth of a _compiled condition for a value set; None if unknown."""
    if compiled is None:
        return None
    head: str = compiled[0]
    if head == "truthy":
        return values.truthy(compiled[1])
    if head == "not":
        truth = _evaluate(compiled[1], values)
        return None if truth is None else not truth
    if head in ("and", "or"):
        truths = [_evaluate(c, values) for c in compiled[1]]
        decisive: bool = head == "or"  # the value that settles it
        if decisive in truths:
            return decisive
        return None if None in truths else not decisive
    left, right = (_operand_value(o, values) for o in compiled[1:])
    if left is None or right is None:
        return None
    return (left == right) == (head == "eq")


def _operand_value(operand: tuple[str, Any], values: Values) -> str | None:
    if operand[0] == "text":
        return str(operand[1])
    found = values.find(operand[1])
    return found[1].value if found is not None and isinstance(found[1], ScalarNode) else None


def _words(expr: str) -> list[str]:
    """An expression's words, a quoted string or a parenthesised group counting as one."""
    if not any(char in expr for char in "\"`("):
        return expr.split()
    words: list[str] = []
    current: list[str] = []
    depth = 0
    quote = ""
    for char in expr.strip():
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"`":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char.isspace() and depth == 0:
            if current:
                words.append("".join(current))
                current = []
            continue
        current.append(char)
    if current:
        words.append("".join(current))
    return words


def _pipeline(expr: str) -> list[str]:
    """`toYaml .Values.x | nindent 4` -> its commands, split on `|` outside strings and parentheses."""
    commands: list[str] = []
    depth = 0
    quote = ""
    current: list[str] = []
    for char in expr:
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"`":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            commands.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    commands.append("".join(current).strip())
    return commands


def _values_path(argument: str, blocks: tuple[_Block, ...], variables: Variables, depth: int = 0,
                 loose: bool = False) -> FieldPath | None:
    """The values path an expression names: `.Values.a.b`, `.`/`.b` inside `with .Values.a`,
    `$v.b` after `$v := .Values.a`; `loose`, also the one values path in a larger expression
    (`default dict .Values.a`: its structure, for `toYaml`, not its value)."""
    argument = argument.strip()
    while argument.startswith("(") and _group(argument) == argument[1:-1]:
        argument = argument[1:-1].strip()
    direct = _VALUES_REF.fullmatch(argument)
    if direct:
        return tuple(part for part in direct.group(1).split(".") if part)
    variable = re.fullmatch(r"(\$\w+)((?:\.[A-Za-z_][\w-]*)*)", argument)
    if variable:
        if variable.group(1) not in variables or depth > 8:
            return None
        expr, where = variables[variable.group(1)]
        base = _values_path(expr, where, variables, depth + 1, loose)
        return None if base is None else (*base, *(part for part in variable.group(2).split(".") if part))
    relative = _DOT_REF.fullmatch(argument)
    if argument == "." or relative and relative.group(1).split(".")[0] not in _ROOT_OBJECTS:
        below = tuple(relative.group(1).split(".")) if relative else ()
        for at in range(len(blocks) - 1, -1, -1):
            block = blocks[at]
            if block.kind == "range":
                return None
            if block.kind == "with":
                subject = re.sub(r"^\$\w*\s*:=\s*", "", block.expr)
                base = _values_path(subject, blocks[:at], variables, depth + 1)
                return None if base is None else (*base, *below)
        return None
    named = {m.group(1) for m in _VALUES_REF.finditer(argument) if m.group(1)}
    if loose and len(named) == 1:
        return tuple(part for part in named.pop().split(".") if part)
    return None
