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
lookup, and memoizes the resolver's answer for each plain scalar.

Measured gain: the 800 bundles of a synthetic 100-recipe catalog (200 recipe x profile rows x 4
deployers) rendered in one process, fast path vs reference: median 2.9 s vs 8.7 s CPU (whole
process, three paired runs, 0.7 s of it loading and resolving), ratio 0.34; the render step
itself about 3.6x faster.
"""

from __future__ import annotations

import hashlib
import pickle
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
# _MEMO_LIMIT characters.
_MEMO: dict[tuple[bool, bytes], str] = {}
_MEMO_LIMIT = 32 << 20
_memo_chars = 0


def _memo_key(obj: Any, sort_keys: bool) -> tuple[bool, bytes] | None:
    try:
        data = pickle.dumps(obj, protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError):
        return None  # not plain data: dump it uncached (yaml.dump reports what it cannot write)
    return sort_keys, hashlib.sha256(data).digest()


def dump_yaml(obj: Any, style: YamlStyle = YamlStyle.BUNDLE, *, sort_keys: bool = False) -> str:
    """`dump_yaml_reference(obj, style, sort_keys=sort_keys)`, the same text, sooner."""
    global _memo_chars
    if style is not YamlStyle.BUNDLE:
        return dump_yaml_reference(obj, style, sort_keys=sort_keys)
    key = _memo_key(obj, sort_keys)
    if key is not None:
        hit = _MEMO.get(key)
        if hit is not None:
            return hit
    text = _dump(obj, _FastDumper, sort_keys, style)
    if key is not None:
        if _memo_chars + len(text) > _MEMO_LIMIT:
            _MEMO.clear()
            _memo_chars = 0
        _MEMO[key] = text
        _memo_chars += len(text)
    return text
