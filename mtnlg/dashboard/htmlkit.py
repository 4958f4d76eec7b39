"""Tiny HTML helpers: every string from the data goes through ``esc`` before it reaches the page.

Cells are returned as finished ``<td>``/``<th>`` strings so panels compose tables without ever
concatenating raw data.  With two runs, a metric becomes three columns: run A, run B and the
difference B - A ("delta").
"""
from __future__ import annotations

import html
import json
import re
from typing import Any, Iterable

# C0 controls other than tab/newline/CR, DEL, and lone surrogates: NUL and friends are HTML
# parse errors (browsers drop or mangle them), surrogates cannot even be written as UTF-8.
_UNSAFE_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def _visible(m: re.Match) -> str:
    c = ord(m.group(0))
    if c < 0x20:
        return chr(0x2400 + c)  # the Control Pictures block: NUL shows as U+2400
    return "\u2421" if c == 0x7F else "\ufffd"


def safe_text(value: Any) -> str:
    """``value`` as text that an HTML page can hold: control characters shown as their
    Control Pictures (NUL as U+2400), lone surrogates as U+FFFD."""
    text = "" if value is None else str(value)
    return _UNSAFE_RE.sub(_visible, text)


def esc(value: Any) -> str:
    return html.escape(safe_text(value), quote=True)


def fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}"
    return str(value)


def th(text: Any, colspan: int = 1) -> str:
    span = f' colspan="{colspan}"' if colspan > 1 else ""
    return f"<th{span}>{esc(text)}</th>"


def td(text: Any) -> str:
    return f"<td>{esc(text)}</td>"


def td_num(value: Any) -> str:
    return f'<td class="num">{esc(fmt(value))}</td>'


def delta(values: list[Any]) -> Any:
    a, b = values
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return b - a
    return None


def td_delta(values: list[Any]) -> str:
    d = delta(values)
    cls = "num" + (" delta-pos" if d and d > 0 else " delta-neg" if d and d < 0 else "")
    text = "–" if d is None else ("+" if d > 0 else "") + fmt(d)
    return f'<td class="{cls}">{esc(text)}</td>'


def metric_headers(name: str, labels: list[str]) -> list[str]:
    if len(labels) == 1:
        return [th(name)]
    return [th(f"{name} [{labels[0]}]"), th(f"{name} [{labels[1]}]"), th(f"Δ {name}")]


def metric_cells(values: list[Any]) -> list[str]:
    cells = [td_num(v) for v in values]
    return cells + [td_delta(values)] if len(values) == 2 else cells


def td_stacked(values: list[Any]) -> str:
    """One cell holding A, B and the delta stacked (keeps wide matrices narrow)."""
    if len(values) == 1:
        return td_num(values[0])
    d = delta(values)
    parts = [f"<span>{esc(fmt(v))}</span>" for v in values]
    parts.append(f'<span class="d">Δ {esc("–" if d is None else ("+" if d > 0 else "") + fmt(d))}</span>')
    return f'<td class="num cmp">{"".join(parts)}</td>'


def table(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    head = "".join(headers)
    body = "".join(f"<tr>{''.join(r)}</tr>" for r in rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def not_available(what: str) -> str:
    return f'<p class="na">{esc(what)}: not available in this run.</p>'


def pre(text: Any) -> str:
    return f"<pre>{esc(text)}</pre>"


def pretty_json(value: Any) -> str:
    return pre(json.dumps(value, indent=2, sort_keys=True, default=str))


def json_script(element_id: str, data: Any) -> str:
    """Embed data as JSON that cannot end the script element or open a comment.

    ``<``, ``>`` and ``&`` are written as ``\\u003c`` etc. (still valid JSON, parsed back to the
    same strings), so ``</script>`` or ``<!--`` inside a document never reaches the HTML parser;
    U+2028/2029 are escaped for old JavaScript engines, DEL and lone surrogates so the page is
    clean, valid UTF-8 (JSON itself escapes NUL and the other C0 controls).
    """
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, allow_nan=False)
    # JSON escapes control characters itself; lone surrogates it leaves raw, and they cannot
    # be written as UTF-8: spell them as JSON escapes (parsed back to the same string).
    text = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group(0)):04x}", text)
    for raw, safe in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\x7f", "\\u007f"),
                      ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, safe)
    return f'<script type="application/json" id="{esc(element_id)}">{text}</script>'
