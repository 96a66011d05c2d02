"""The inspector's typed native modules (Cython, compiled by ``setup.py``): the one place each of these
behaviours lives, called directly by the plain modules around them.

``_packets``: a classic pcap's record loop with Ethernet/IP/TCP headers; ``_frames``: slicing whole Kafka
frames out of stream bytes; ``_columns``: row values into Arrow buffers; ``_body``: a decoded body's JSON into
the ``body`` column's Arrow buffers.
"""
