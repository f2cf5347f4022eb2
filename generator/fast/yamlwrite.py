"""`dump_yaml`: the one YAML writer for files people read, in one of two styles.

- `YamlStyle.BUNDLE`: what a rendered bundle holds (`recipe.yaml`, `values.yaml`, Helm, Argo CD
  and Flux documents): block style, keys in the given order unless `sort_keys`, two-space
  indent, no line folding, libyaml's emitter when present.
- `YamlStyle.CATALOG`: what the catalog's own tools write (samples, `query`, the synthetic
  catalog): sorted keys, lines folded at 100 columns, PyYAML's own emitter.

Both: safe types only, no anchors or aliases (shared values are written out), Unicode kept, a
string with a line break as a literal block (`|`) when it can be one.

Reference: `dump_yaml_reference`, a plain `yaml.dump` with the style's dumper. The fast path
(BUNDLE only; CATALOG files are few and go to the reference) memoizes whole dumps (the same
documents are dumped again and again: `recipe.yaml` for each of the four deployers, a
component's `values.yaml` for three of them, components shared by many recipes), builds the
nodes of plain data directly instead of through the representer's per-node alias bookkeeping and
lookup, and memoizes the resolver's answer for each plain scalar. A plain document (dicts,
lists, and scalars of exactly str, int, float, bool or None, each written on one line) does not
go through yaml.dump at all: `_emitted` writes its block structure line by line and asks libyaml
only for each distinct scalar's text, once (see "the direct emitter" below).

Measured gain: the 800 bundles of a synthetic 100-recipe catalog (200 recipe x profile rows x 4
deployers) rendered in one process, fast path vs reference: median 2.9 s vs 8.7 s CPU (whole
process, three paired runs, 0.7 s of it loading and resolving), ratio 0.34; the render step
itself about 3.6x faster. The direct emitter (issue 29): the site's render stage of a synthetic
50-recipe catalog (400 archives, one process, interleaved runs) 7.6 -> 5.2 ms of CPU an archive;
the documents missing the memo (each recipe's `recipe.yaml`, each archive's `bundle-info.yaml`)
were a third of an archive's CPU.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Mapping
from enum import Enum
from typing import Any, ClassVar

import yaml


class YamlStyle(Enum):
    BUNDLE = "bundle"
    CATALOG = "catalog"


_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"

_CBase: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _literal_unless_trailing_space(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data and not data.endswith(" ") else None
    return dumper.represent_scalar(_STR_TAG, data, style=style)


def _literal(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar(_STR_TAG, data, style=style)


class _BundleDumper(_CBase):  # type: ignore[misc,valid-type]
    """The reference dumper of the BUNDLE style: safe (libyaml when present), no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_BundleDumper.add_representer(str, _literal_unless_trailing_space)


class _CatalogDumper(yaml.SafeDumper):
    """The dumper of the CATALOG style: safe (PyYAML's emitter), no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_CatalogDumper.add_representer(str, _literal)

_OPTIONS: dict[YamlStyle, dict[str, Any]] = {
    YamlStyle.BUNDLE: {"width": 1_000_000, "indent": 2},
    YamlStyle.CATALOG: {"width": 100},
}


def dump_yaml_reference(obj: Any, style: YamlStyle, *, sort_keys: bool) -> str:
    """`obj` as a plain `yaml.dump` writes it in `style`."""
    dumper = _BundleDumper if style is YamlStyle.BUNDLE else _CatalogDumper
    return _dump(obj, dumper, sort_keys, style)


def _dump(obj: Any, dumper: type[yaml.SafeDumper], sort_keys: bool, style: YamlStyle) -> str:
    text: str = yaml.dump(
        obj,
        Dumper=dumper,
        sort_keys=sort_keys,
        default_flow_style=False,
        allow_unicode=True,
        **_OPTIONS[style],
    )
    return text


class _FastDumper(_BundleDumper):
    """The BUNDLE dumper with the nodes of plain data (dict, list, str, int, bool, None) built
    directly: the same nodes `SafeRepresenter` builds for them, without its per-node alias
    bookkeeping and representer lookup, which cost more than the emitter. Every other type goes
    through the registered representers."""

    # tag of each plain scalar the emitter has asked about (`resolve` below), per process
    _implicit_tags: ClassVar[dict[str, str]] = {}

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: Any) -> str:
        """The tag a scalar would resolve to, memoized: the emitter asks twice for every scalar,
        and without path resolvers the answer depends on the text alone (`implicit[1]` only
        matters after a path resolver has run). Everything else goes to the resolver."""
        if kind is not yaml.ScalarNode or self.yaml_path_resolvers:
            resolved: str = super().resolve(kind, value, implicit)
            return resolved
        if not implicit[0]:
            return str(self.DEFAULT_SCALAR_TAG)
        memo = self._implicit_tags
        tag = memo.get(value)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(value) <= 256:  # keys, names, numbers: what repeats; long texts would pile up
                if len(memo) >= 100_000:
                    memo.clear()
                memo[value] = tag
        return tag

    def represent_data(self, data: Any) -> yaml.Node:
        flow, sort_keys = self.default_flow_style, self.sort_keys
        scalar, mapping, sequence = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode
        other = super().represent_data

        def node(x: Any) -> yaml.Node:
            t = type(x)
            if t is str:
                style = "|" if "\n" in x and not x.endswith(" ") else None
                return scalar(_STR_TAG, x, style=style)
            if t is dict:
                items = list(x.items())
                if sort_keys:
                    try:
                        items = sorted(items)
                    except TypeError:
                        pass
                return mapping(_MAP_TAG, [(node(k), node(v)) for k, v in items], flow_style=flow)
            if t is list:
                return sequence(_SEQ_TAG, [node(v) for v in x], flow_style=flow)
            if t is int:
                return scalar(_INT_TAG, str(x))
            if t is bool:
                return scalar(_BOOL_TAG, "true" if x else "false")
            if x is None:
                return scalar(_NULL_TAG, "null")
            built: yaml.Node = other(x)  # its children come back here through represent_data
            return built

        return node(data)


# Memo of BUNDLE dumps per process. The key is sha256 over the object's pickle, which records
# every value with its exact type (1, 1.0, True and "1" all differ; so do a str and a str
# subclass), plus the options; equal pickles mean equal inputs, so a hit returns exactly what
# `yaml.dump` would. Only successful dumps are kept; the memo is emptied when it grows past
# _MEMO_LIMIT characters. `_DIRECT` holds the keys whose text the direct emitter wrote (`block`).
_MEMO: dict[tuple[bool, bytes], str] = {}
_DIRECT: set[tuple[bool, bytes]] = set()
_MEMO_LIMIT = 32 << 20
_memo_chars = 0

# id(a dict or list) -> (it, the direct emitter's text of it at indent 0): see `block`
Blocks = Mapping[int, tuple[Any, str]]


def _memo_key(obj: Any, sort_keys: bool) -> tuple[bool, bytes] | None:
    try:
        data = pickle.dumps(obj, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
        return None  # not plain data: dump it uncached (yaml.dump reports what it cannot write)
    return sort_keys, hashlib.sha256(data).digest()


def dump_yaml(
    obj: Any,
    style: YamlStyle = YamlStyle.BUNDLE,
    *,
    sort_keys: bool = False,
    memo: bool = True,
    blocks: Blocks | None = None,
) -> str:
    """`dump_yaml_reference(obj, style, sort_keys=sort_keys)`, the same text, sooner.

    `memo=False` for a document that is never dumped twice (a bundle's `recipe.yaml` and
    `bundle-info.yaml`, which name the recipe's digest): its memo key (a pickle of the whole
    document and its sha256) would be made for nothing, and the text kept for nothing. At
    200 x 4,000 those keys were 0.05 of the 1.3 CPU-s of the 1,600 bundles' render_bundle.

    `blocks` (with `memo=False`): texts already written of some of the document's mappings
    and sequences (`block`, or `emitted_block`, with this `sort_keys`), found by identity
    where they are a mapping's values, which the direct emitter indents instead of writing
    them again (see `_indented`)."""
    if style is not YamlStyle.BUNDLE:
        return dump_yaml_reference(obj, style, sort_keys=sort_keys)
    if not memo:
        found = _emitted(obj, sort_keys, blocks)
        return found if found is not None else _dump(obj, _FastDumper, sort_keys, style)
    key = _memo_key(obj, sort_keys)
    if key is not None:
        hit = _MEMO.get(key)
        if hit is not None:
            return hit
    return _dump_keyed(obj, key, sort_keys)


def _dump_keyed(obj: Any, key: tuple[bool, bytes] | None, sort_keys: bool) -> str:
    """`obj` written (directly, else by yaml.dump) and kept in the memo under `key`."""
    global _memo_chars
    text = _emitted(obj, sort_keys)
    direct = text is not None
    if text is None:
        text = _dump(obj, _FastDumper, sort_keys, YamlStyle.BUNDLE)
    if key is not None:
        if _memo_chars + len(text) > _MEMO_LIMIT:
            _MEMO.clear()
            _DIRECT.clear()
            _memo_chars = 0
        _MEMO[key] = text
        _memo_chars += len(text)
        if direct:
            _DIRECT.add(key)
        else:
            _DIRECT.discard(key)
    return text


def block(obj: Any, *, sort_keys: bool) -> str | None:
    """The direct emitter's text of the non-empty dict or list `obj` at indent 0 (what
    `dump_yaml(obj, sort_keys=sort_keys)` returns, through the memo), or None when that text is
    not the direct emitter's (yaml.dump wrote it: it would not indent line by line) or `obj`
    is not such a dict or list. For `dump_yaml(..., blocks=...)`: a bundle's `recipe.yaml`
    holds each component's values, which its `values.yaml` (sorted keys) dumped already, and
    which the memo holds across recipes."""
    if type(obj) not in (dict, list) or not obj:
        return None
    key = _memo_key(obj, sort_keys)
    if key is None:
        return None
    text = _MEMO.get(key)
    if text is None or key not in _DIRECT:
        text = _dump_keyed(obj, key, sort_keys)
    return text if key in _DIRECT else None


# --- the direct emitter: plain documents written line by line -----------------------------------
#
# A document of dicts and lists (non-empty ones at the top) whose scalars are exactly str, int,
# bool, float or None is written here without yaml.dump: in the BUNDLE style (block collections,
# indent 2, no folding, no aliases) the text of such a document is fixed by its shape, and only
# a scalar's own text (plain, quoted, how `1` or `yes` is kept a string) takes libyaml's
# analysis. That text is asked of libyaml once per distinct scalar and place (mapping key,
# mapping value, sequence item: `_scalar`) and reused. A document with anything else (another
# type, a subclass, a scalar libyaml writes over several lines or as a complex `? ` key) is left
# to yaml.dump whole (`_emitted` returns None). tests/test_fast_yamlwrite.py checks the two
# against `dump_yaml_reference`, document for document.

_KEY, _VALUE, _ITEM = 0, 1, 2
_PLAIN_SCALARS = (str, int, bool, float, type(None))
# scalar text per place and type: (place, type, value) -> text, None when the emitter must not
# write it (several lines, a complex key); float values are keyed by repr (0.0 == -0.0)
_SCALARS: dict[tuple[int, type, Any], str | None] = {}
_SCALARS_LIMIT = 8 << 20  # characters of the values and texts held; emptied past it
_scalar_chars = 0
# YAML's line breaks: a scalar whose text holds one is indented after it by where it stands
_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")
_SCALAR_CHARS = 4096  # longer scalars are asked of libyaml every time (rare, and would pile up)


class _NotPlain(Exception):
    """The document holds something the direct emitter leaves to yaml.dump."""


def _scalar_text(place: int, x: Any) -> str | None:
    """The text libyaml writes for scalar `x` at `place`, or None if not one plain line."""
    if place == _KEY:
        text = _dump({x: None}, _BundleDumper, False, YamlStyle.BUNDLE)
        ok = text.endswith(": null\n") and not text.startswith("? ")
        body = text[: -len(": null\n")]
    elif place == _VALUE:
        text = _dump({"k": x}, _BundleDumper, False, YamlStyle.BUNDLE)
        ok = text.startswith("k: ") and text.endswith("\n")
        body = text[3:-1]
    else:
        text = _dump([x], _BundleDumper, False, YamlStyle.BUNDLE)
        ok = text.startswith("- ") and text.endswith("\n")
        body = text[2:-1]
    return body if ok and not any(b in body for b in _BREAKS) else None


def _scalar(place: int, x: Any) -> str:
    global _scalar_chars
    t = type(x)
    if t not in _PLAIN_SCALARS:
        raise _NotPlain
    key = (place, t, repr(x) if t is float else x)
    try:
        text = _SCALARS[key]
    except KeyError:
        text = _scalar_text(place, x)
        if t is not str or len(x) <= _SCALAR_CHARS:
            size = len(x if t is str else "") + len(text or "") + 16
            if _scalar_chars + size > _SCALARS_LIMIT:
                _SCALARS.clear()
                _scalar_chars = 0
            _SCALARS[key] = text
            _scalar_chars += size
    if text is None:
        raise _NotPlain
    return text


def _items(d: dict[Any, Any], sort_keys: bool) -> list[tuple[Any, Any]]:
    items = list(d.items())
    if sort_keys:
        try:
            items = sorted(items)
        except TypeError:  # as the representer: mixed key types stay in the given order
            pass
    return items


def _indented(text: str, pad: str) -> str:
    """`text`, the direct emitter's lines of a mapping (or sequence) at indent 0, at indent
    `pad`: every line of a mapping or sequence the emitter writes at `pad` starts with `pad`
    and goes on as at indent 0 (no scalar it writes holds a line break), so prefixing each
    line is writing it again."""
    return pad + text[:-1].replace("\n", "\n" + pad) + "\n"


def _mapping(
    d: dict[Any, Any],
    pad: str,
    first: bool,
    out: list[str],
    sort_keys: bool,
    blocks: Blocks | None = None,
) -> None:
    """A non-empty block mapping at indent `pad`; its first key on the current line (a
    sequence item's `- `) when `first`."""
    for k, v in _items(d, sort_keys):
        head = ("" if first else pad) + _scalar(_KEY, k) + ":"
        first = False
        t = type(v)
        if t is dict and v:
            out.append(head + "\n")
            known = blocks.get(id(v)) if blocks is not None else None
            if known is not None and known[0] is v:
                out.append(_indented(known[1], pad + "  "))
            else:
                _mapping(v, pad + "  ", False, out, sort_keys, blocks)
        elif t is list and v:
            out.append(head + "\n")
            known = blocks.get(id(v)) if blocks is not None else None
            if known is not None and known[0] is v:
                out.append(_indented(known[1], pad))  # indentless, as libyaml writes it
            else:
                _sequence(v, pad, False, out, sort_keys, blocks)
        elif t is dict:
            out.append(head + " {}\n")
        elif t is list:
            out.append(head + " []\n")
        else:
            out.append(head + " " + _scalar(_VALUE, v) + "\n")


def _sequence(
    seq: list[Any],
    pad: str,
    first: bool,
    out: list[str],
    sort_keys: bool,
    blocks: Blocks | None = None,
) -> None:
    """A non-empty block sequence at indent `pad`; its first `- ` on the current line when
    `first` (an item of an item)."""
    for v in seq:
        head = ("" if first else pad) + "- "
        first = False
        t = type(v)
        if t is dict and v:
            out.append(head)
            _mapping(v, pad + "  ", True, out, sort_keys, blocks)
        elif t is list and v:
            out.append(head)
            _sequence(v, pad + "  ", True, out, sort_keys, blocks)
        elif t is dict:
            out.append(head + "{}\n")
        elif t is list:
            out.append(head + "[]\n")
        else:
            out.append(head + _scalar(_ITEM, v) + "\n")


def emitted_block(obj: Any, *, sort_keys: bool) -> str | None:
    """`block` without the memo: the direct emitter's text of `obj` (a non-empty dict or list),
    or None, for a part written once or twice (no memo key made for it)."""
    return _emitted(obj, sort_keys)


def _emitted(obj: Any, sort_keys: bool, blocks: Blocks | None = None) -> str | None:
    """`obj` in the BUNDLE style, written directly, or None when it is not a plain document."""
    t = type(obj)
    if not ((t is dict or t is list) and obj):
        return None
    out: list[str] = []
    try:
        if t is dict:
            _mapping(obj, "", False, out, sort_keys, blocks)
        else:
            _sequence(obj, "", False, out, sort_keys, blocks)
    except _NotPlain:
        return None
    return "".join(out)
