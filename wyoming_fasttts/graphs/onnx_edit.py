"""Small, safe graph surgery for the model pipeline: collect rewrites against an unchanged graph, apply once.

Matching patterns while the node list is being mutated is how such scripts go wrong; here every rewrite is
recorded by node identity and applied in one pass, after which dead nodes and unused weights are pruned.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np
import onnx
from onnx import NodeProto, TensorProto, helper, numpy_helper


def prune(nodes: Iterable[NodeProto], outputs: Iterable[str], stop: Iterable[str] = ()) -> list[NodeProto]:
    """Nodes that ``outputs`` depend on, in their original order; ``stop`` names become graph inputs."""
    live, stop = set(outputs), set(stop)
    keep: list[NodeProto] = []
    for node in reversed(list(nodes)):
        if any(o in live for o in node.output):
            keep.append(node)
            live |= {i for i in node.input if i and i not in stop}
    keep.reverse()
    return keep


def used_names(nodes: Iterable[NodeProto]) -> set[str]:
    return {i for n in nodes for i in n.input if i}


def attributes(node: NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class GraphEdit:
    """Pattern matching helpers over one model plus a queue of replacements applied by ``apply``."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.model = model
        graph = model.graph
        self.initializers = {t.name: t for t in graph.initializer}
        self.producer = {o: n for n in graph.node for o in n.output}
        self.consumers: dict[str, list[NodeProto]] = defaultdict(list)
        for node in graph.node:
            for name in node.input:
                self.consumers[name].append(node)
        self._added: dict[str, TensorProto] = {}
        self._replace: dict[int, list[NodeProto]] = {}
        self._drop: set[int] = set()

    @property
    def nodes(self) -> list[NodeProto]:
        return list(self.model.graph.node)

    def of_type(self, op_type: str) -> list[NodeProto]:
        return [n for n in self.model.graph.node if n.op_type == op_type]

    def array(self, name: str) -> np.ndarray:
        tensor = self._added.get(name) or self.initializers[name]
        return numpy_helper.to_array(tensor)

    def is_initializer(self, name: str) -> bool:
        return name in self.initializers or name in self._added

    def constant(self, name: str, value: np.ndarray | np.generic | float | list[int]) -> str:
        """Add (or reuse) an initializer; ints become int64, floats float32, integer arrays keep their dtype
        (int8 weights stay int8)."""
        if name not in self._added:
            arr = value if isinstance(value, np.ndarray) else np.asarray(value)
            if arr.dtype == np.float64:
                arr = arr.astype(np.float32)
            elif arr.dtype.kind == "i" and not isinstance(value, (np.ndarray, np.generic)):
                arr = arr.astype(np.int64)
            self._added[name] = numpy_helper.from_array(np.ascontiguousarray(arr), name)
        return name

    def only_consumer(self, name: str, op_type: str | None = None) -> NodeProto:
        users = self.consumers[name]
        if len(users) != 1 or (op_type and users[0].op_type != op_type):
            raise ValueError(f"unexpected graph around {name}: {[u.op_type for u in users]}")
        return users[0]

    def source(self, name: str, op_type: str) -> NodeProto:
        node = self.producer.get(name)
        if node is None or node.op_type != op_type:
            raise ValueError(f"{name} is not produced by {op_type}")
        return node  # type: ignore[no-any-return]  # onnx's protobuf classes are untyped

    def replace(self, node: NodeProto, new_nodes: list[NodeProto]) -> None:
        self._replace[id(node)] = new_nodes

    def drop(self, *nodes: NodeProto) -> None:
        self._drop |= {id(n) for n in nodes}

    def apply(self) -> onnx.ModelProto:
        """The edited model: replacements spliced in place, dead nodes and unused weights removed."""
        graph = self.model.graph
        nodes: list[NodeProto] = []
        for node in graph.node:
            if id(node) not in self._drop:
                nodes.extend(self._replace.get(id(node), [node]))
        keep = prune(nodes, [o.name for o in graph.output])
        used = used_names(keep)
        weights = [t for t in graph.initializer if t.name in used]
        weights += [t for name, t in self._added.items() if name in used]
        del graph.node[:]
        graph.node.extend(keep)
        del graph.initializer[:]
        graph.initializer.extend(weights)
        del graph.value_info[:]
        return self.model
