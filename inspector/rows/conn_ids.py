"""How connections are numbered: one ``conn_id`` per TCP connection, unique within an events dataset, and the same
number ``show`` gives the connection when it reads the capture alone.

Each capture file a run reads gets a block of 2**32 ids of its own (``CONN_ID_SHIFT``): its connections are
``(block << 32) + 1``, ``+ 2``, ... in the order the capture opens them, so a conn_id's low 32 bits are the
connection's number within its capture and its high bits the capture's block. Every writer numbers so: ``read``
(one file after another, or ``--jobs`` workers, each file its block), ``read --append`` (after the dataset's
highest block), the decode job (file *i*: block *i*) and the tap (one stream: block 0). ``show CAPTURE`` numbers
the capture in block 0, or in the block a ``--filter conn_id=N`` names: ``show CAPTURE --filter conn_id=N`` finds
connection N of the dataset whatever block its capture got.
"""

from __future__ import annotations

CONN_ID_SHIFT = 32


def next_block(max_conn_id: int) -> int:
    """The first block after the one holding ``max_conn_id`` (0 for a dataset with no connection)."""
    return 0 if max_conn_id <= 0 else ((max_conn_id - 1) >> CONN_ID_SHIFT) + 1


def block_of(conn_id: int) -> int:
    """The block a conn_id is in (its capture's, in the run that wrote it)."""
    return max(conn_id - 1, 0) >> CONN_ID_SHIFT


def base(block: int) -> int:
    """The conn_id base of a block: its capture's connection n is ``base(block) + n``."""
    return block << CONN_ID_SHIFT
