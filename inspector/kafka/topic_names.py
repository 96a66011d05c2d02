"""Which topics a message touches, by name where the capture has told it: the events' ``topics`` column.

Sans-I/O: messages in capture order, no files, no clocks. A message's references (``decoders/topics.py``: names,
ids, and the pairs of a response naming a topic both ways) become the column's text: the names, distinct, in
the order the message first names them, joined by ``,`` (Kafka topic names cannot hold one); an id the capture
has named by then is written as that name, any other as the id (``Uuid.toString()``).

Names are learned per cluster: a connection's cluster is the ``ClusterId`` its messages last promoted into the
events' ``cluster_id`` (Metadata responses v2+, DescribeCluster, ...). A pair seen on a connection whose
cluster is known names the id in that cluster; on one whose cluster is not (yet) known, in the capture. An id
is looked up in its connection's cluster, then among the pairs learned where no cluster was known; on a
connection of unknown cluster, among everything the capture has learned (ids are random 128-bit values: one id
is one topic). At most ``cap`` ids are kept per table (and ``cap`` connections' clusters): beyond it the id
learned first is forgotten (``forgotten`` counts them), and a message naming it gets the id, as before it was
learned, until a response names it again.
"""

from __future__ import annotations

from collections import deque
from typing import Any

#: Ids (and connections) kept per table, by default: some 50 MB when every table is full (docs/performance.md).
MAX_IDS = 100_000


class TopicNames:
    """Topic id -> name, learned from responses in capture order, per cluster; and the column's text."""

    def __init__(self, cap: int = MAX_IDS) -> None:
        if cap < 1:
            raise ValueError("cap must be at least 1")
        self.cap = cap
        self.forgotten = 0  # learned ids forgotten beyond the cap
        # Each table with its keys in the order they came (the first is the first forgotten).
        self._in_cluster: dict[tuple[str | None, str], str] = {}  # (cluster, or None: not known; id) -> name
        self._in_cluster_order: deque[tuple[str | None, str]] = deque()
        self._in_capture: dict[str, str] = {}  # id -> name, whatever the cluster
        self._in_capture_order: deque[str] = deque()
        self._clusters: dict[int, str] = {}  # conn_id -> its cluster id
        self._clusters_order: deque[int] = deque()

    def saw_cluster(self, conn_id: int, cluster_id: str) -> None:
        """Connection ``conn_id`` is in cluster ``cluster_id`` from now on (a message of it promoted one)."""
        clusters = self._clusters
        if clusters.get(conn_id) != cluster_id:
            self._put(clusters, self._clusters_order, conn_id, cluster_id)

    def cluster(self, conn_id: int) -> str | None:
        """The cluster of connection ``conn_id``, when one of its messages has said it."""
        return self._clusters.get(conn_id)

    def learn(self, cluster_id: str | None, topic_id: str, name: str) -> None:
        """``topic_id`` is topic ``name`` in ``cluster_id`` (None: a connection whose cluster is not known)."""
        key = (cluster_id, topic_id)
        if self._in_cluster.get(key) != name:
            self._put(self._in_cluster, self._in_cluster_order, key, name)
        if self._in_capture.get(topic_id) != name:
            self.forgotten += self._put(self._in_capture, self._in_capture_order, topic_id, name)

    def _put(self, table: dict[Any, str], order: deque[Any], key: Any, value: str) -> int:
        """``table[key] = value``; a new key beyond the cap forgets the first (returns 1 then, else 0)."""
        if key in table:
            table[key] = value  # it keeps its place
            return 0
        table[key] = value
        order.append(key)
        if len(order) <= self.cap:
            return 0
        del table[order.popleft()]
        return 1

    def name(self, cluster_id: str | None, topic_id: str) -> str | None:
        """The name of ``topic_id`` as learned so far for a connection of ``cluster_id``, or None."""
        if cluster_id is None:
            return self._in_capture.get(topic_id)
        in_cluster = self._in_cluster
        found = in_cluster.get((cluster_id, topic_id))
        return found if found is not None else in_cluster.get((None, topic_id))

    def text(self, refs: list[Any] | str | None, conn_id: int) -> str | None:
        """The ``topics`` column of a message of connection ``conn_id`` with references ``refs``
        (decoders/topics.py's: None, a lone name, or a list); its pairs are learned first (the message's own ids
        then read as names)."""
        if refs is None or type(refs) is str:
            return refs  # nothing, or the common case: one topic, by name
        cluster_id = self._clusters.get(conn_id) if self._clusters else None
        if len(refs) == 1 and len(refs[0]) == 2 and refs[0][0] is not None:  # one topic named both ways
            name = refs[0][0]
            topic_id = refs[0][1]
            if topic_id is not None:
                self.learn(cluster_id, topic_id, name)
            return name
        for ref in refs:
            if type(ref) is tuple and len(ref) == 2 and ref[0] is not None and ref[1] is not None:
                self.learn(cluster_id, ref[1], ref[0])
        names: list[str] = []
        for ref in refs:
            if type(ref) is str:
                name = ref
            elif len(ref) == 1:
                name = self.name(cluster_id, ref[0]) or ref[0]
            else:
                name = ref[0] if ref[0] is not None else (self.name(cluster_id, ref[1]) or ref[1])
            if name not in names:
                names.append(name)
        return ",".join(names)
